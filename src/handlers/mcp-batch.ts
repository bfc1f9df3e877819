/**
 * JSON-RPC batches on POST /mcp/{orgSlug}, for the one revision that has them. MCP 2025-03-26 (Transports, Streamable
 * HTTP: the POST body "MUST be one of ... an array batching one or more requests and/or notifications"; JSON-RPC
 * "implementations MUST support receiving JSON-RPC batches") requires servers to accept them; 2025-06-18 removed
 * them. The revision of a stateless request is its MCP-Protocol-Version header, absent under 2025-03-26 (the header
 * arrived with 2025-06-18), so: no header or "2025-03-26" → batches are answered; a later revision → refused (-32600).
 *
 * Each message is one call as if sent alone: it passes the burst limit of its own (the transport already counted
 * the first), each tools/call takes the shared limiter like a single request, and each runs through the same method
 * table (scope checks, quota, audit in the tool runtime). The limits are all taken before anything runs, so a batch
 * over the limit is a 429 with nothing executed (its tokens stay spent, like refused single requests). Messages run
 * one after another: a batch cannot fan out into parallel database calls. `initialize` is refused inside a batch
 * (2025-03-26, Lifecycle: it "MUST NOT be part of a JSON-RPC batch").
 */
import { RpcCode } from '../errors.ts';
import { classify, failure, type Classified } from '../mcp/protocol.ts';
import type { McpSession } from '../mcp/session.ts';
import type { AppDeps } from '../deps.ts';

/** Messages per batch at most: one request may not queue more calls than this behind one HTTP response. */
const MAX_BATCH_MESSAGES = 20;
const BATCH_REVISION = '2025-03-26';

export function batchesAllowed(versionHeader: string | null): boolean {
  return versionHeader === null || versionHeader.trim() === BATCH_REVISION;
}

export type BatchOutcome =
  | { kind: 'invalid'; body: string }
  | { kind: 'rate_limited'; retryAfterSeconds: number; limit: 'burst_local' | 'burst_shared' }
  | { kind: 'accepted' }
  | { kind: 'answered'; body: string };

export async function answerBatch(
  deps: Pick<AppDeps, 'localBurst' | 'limiter' | 'mcp'>,
  session: McpSession,
  messages: unknown[],
  burstLimit: number,
): Promise<BatchOutcome> {
  if (messages.length === 0) return { kind: 'invalid', body: failure(null, { code: RpcCode.InvalidRequest, message: 'Invalid Request: an empty batch.' }) };
  if (messages.length > MAX_BATCH_MESSAGES) {
    return {
      kind: 'invalid',
      body: failure(null, { code: RpcCode.InvalidRequest, message: `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages.` }),
    };
  }
  const { org } = session;
  const classified: Classified[] = messages.map(classify);
  for (let i = 1; i < classified.length; i++) {
    const local = deps.localBurst.take(org.id, burstLimit);
    if (!local.allowed) return { kind: 'rate_limited', retryAfterSeconds: local.retryAfterSeconds, limit: 'burst_local' };
  }
  for (const m of classified) {
    if (m.kind !== 'request' || m.method !== 'tools/call') continue;
    const shared = await deps.limiter.take(org.id, burstLimit);
    if (!shared.allowed) return { kind: 'rate_limited', retryAfterSeconds: shared.retryAfterSeconds, limit: 'burst_shared' };
  }
  const answers: string[] = [];
  for (const m of classified) {
    if (m.kind === 'invalid') answers.push(failure(m.id, { code: RpcCode.InvalidRequest, message: m.message }));
    else if (m.kind !== 'request')
      continue; // notifications and client responses get no answer
    else if (m.method === 'initialize')
      answers.push(failure(m.id, { code: RpcCode.InvalidRequest, message: 'Invalid Request: initialize must not be part of a JSON-RPC batch.' }));
    else answers.push(await deps.mcp.answer(session, m.id, m.method, m.params));
  }
  return answers.length === 0 ? { kind: 'accepted' } : { kind: 'answered', body: `[${answers.join(',')}]` };
}
