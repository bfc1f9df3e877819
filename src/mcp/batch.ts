/**
 * JSON-RPC batches on POST /mcp/{orgSlug}, for the one revision that has them: a protocol rule, so it lives with the
 * protocol; the doorway (mcp/doorway.ts) only hands a parsed array here and turns the outcome into a response. MCP 2025-03-26 (Transports, Streamable
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
 * (2025-03-26, Lifecycle: it "MUST NOT be part of a JSON-RPC batch"), and so is a batch holding a request whose
 * `_meta` names a revision (2026-07-28 has no batches).
 */
import { RpcCode } from '../errors.ts';
import type { BurstLimiter, LocalWindow } from '../limits/burst.ts';
import { claimsRevision } from './modern.ts';
import { classify, failure, type Classified } from './protocol.ts';
import type { McpServer } from './server.ts';
import type { McpSession } from './session.ts';

/** What a batch uses: this instance's burst window, the shared limiter, and the method table. */
interface BatchDeps {
  localBurst: Pick<LocalWindow, 'take'>;
  limiter: Pick<BurstLimiter, 'take'>;
  mcp: Pick<McpServer, 'answer'>;
}

/** Messages per batch at most: one request may not queue more calls than this behind one HTTP response. */
const MAX_BATCH_MESSAGES = 20;
const BATCH_REVISION = '2025-03-26';

export function batchesAllowed(versionHeader: string | null): boolean {
  return versionHeader === null || versionHeader.trim() === BATCH_REVISION;
}

/** How a batch ended: each kind is one of the doorway's outcomes too (mcp/doorway.ts). */
export type BatchOutcome =
  | { kind: 'invalid'; json: string }
  | { kind: 'rate_limited'; retryAfterSeconds: number; limit: 'burst_local' | 'burst_shared' }
  | { kind: 'accepted' }
  | { kind: 'answered'; json: string };

export async function answerBatch(deps: BatchDeps, session: McpSession, messages: unknown[], burstLimit: number): Promise<BatchOutcome> {
  if (messages.length === 0) return { kind: 'invalid', json: failure(null, { code: RpcCode.InvalidRequest, message: 'Invalid Request: an empty batch.' }) };
  if (messages.length > MAX_BATCH_MESSAGES) {
    return {
      kind: 'invalid',
      json: failure(null, { code: RpcCode.InvalidRequest, message: `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages.` }),
    };
  }
  // A 2026-07-28 request is one message per POST: a batch holding one is refused whole (as the v2 SDKs' servers do).
  if (messages.some((m) => m !== null && typeof m === 'object' && claimsRevision((m as { params?: unknown }).params))) {
    return {
      kind: 'invalid',
      json: failure(null, { code: RpcCode.InvalidRequest, message: 'Invalid Request: a batch may not hold a request of revision 2026-07-28 or later.' }),
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
  return answers.length === 0 ? { kind: 'accepted' } : { kind: 'answered', json: `[${answers.join(',')}]` };
}
