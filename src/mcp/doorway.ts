/**
 * The MCP-specific part of POST /mcp/{orgSlug} (Streamable HTTP, stateless, JSON responses; MCP 2026-07-28 and the
 * 2025 revisions). The pipeline has checked the door (Host, Origin, MCP-Protocol-Version), authenticated the caller,
 * taken the burst limit of this instance and read the body (pipeline/mcp.ts); here the message is classified, as the
 * MCP SDKs do, and handed to the method table of its revision (mcp/server.ts). How it ended is an `McpOutcome`, and
 * `mcpResponse` is the one switch from outcome to wire: 200, 202, 400, 403 with a step-up challenge, 429 with a
 * JSON-RPC error body (a Refusal, which the pipeline audits).
 */
import { AppError, json, RpcCode } from '../errors.ts';
import { Refusal } from '../audit/refusals.ts';
import type { BurstLimiter } from '../limits/burst.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import { noteMcpMethod } from '../observability/requests.ts';
import type { Logger } from '../util/log.ts';
import { resourceMetadataUrl } from '../auth/oauth-server/metadata.ts';
import { answerBatch, type BatchOutcome, batchesAllowed } from './batch.ts';
import { isModernRevision, notificationMismatch, Refused, requestEra, unsupportedVersion } from './modern.ts';
import { classify, failure, isSupportedVersion, SUPPORTED_PROTOCOL_VERSIONS } from './protocol.ts';
import type { McpServer } from './server.ts';
import type { McpSession } from './session.ts';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/** A body the pipeline read: its JSON value, or why it is none (answered -32700). */
export type McpBody = { ok: true; value: unknown } | { ok: false; reason: 'encoding' | 'json' | 'depth' };

/** What the pipeline hands on for one request. */
export interface McpRequest {
  session: McpSession;
  /** The trimmed MCP-Protocol-Version header (a supported one: the door refused others), null without one. */
  version: string | null;
  body: McpBody;
  /** The org's burst limit per second, for the shared limiter of tools/call and a batch's messages. */
  burstLimit: number;
}

/** How a request ended. */
export type McpOutcome =
  | BatchOutcome
  /** Refused for a connector a signed-in person could consent to (decision 0248): the error body and the scope. */
  | { kind: 'step_up'; json: string; scope: string };

/** What the doorway uses: the method tables, the limiters, the logger and the public URL (for challenges). */
export interface DoorwayDeps {
  mcp: McpServer;
  localBurst: Parameters<typeof answerBatch>[0]['localBurst'];
  limiter: Pick<BurstLimiter, 'take'>;
  log: Pick<Logger, 'enabled'>;
  config: { publicUrl: string };
}

const ACCEPTED: McpOutcome = { kind: 'accepted' };
const PARSE_ERRORS = {
  encoding: 'Parse error: the body is not valid UTF-8.',
  json: 'Parse error: the body is not valid JSON.',
  depth: 'Parse error: the JSON is nested too deeply.',
} as const;

/** Whether the body is a batch this request's revision answers (2025-03-26 only: mcp/batch.ts). */
export const isBatch = (value: unknown, version: string | null): value is unknown[] => Array.isArray(value) && batchesAllowed(version);

/** Classifies the message and answers it: a batch, a notification, a request (through its revision's method table). */
export async function answerMcp(deps: DoorwayDeps, request: Request, { session, version, body, burstLimit }: McpRequest): Promise<McpOutcome> {
  if (!body.ok) return { kind: 'invalid', json: failure(null, { code: RpcCode.ParseError, message: PARSE_ERRORS[body.reason] }) };
  if (isBatch(body.value, version)) return answerBatch(deps, session, body.value, burstLimit);
  const message = classify(body.value);
  if (message.kind === 'invalid') return { kind: 'invalid', json: failure(message.id, { code: RpcCode.InvalidRequest, message: message.message }) };
  if (message.kind === 'notification') {
    const refused = notificationMismatch(request.headers, version, message.method);
    if (refused) return { kind: 'invalid', json: refused.body };
  }
  // Notifications and client responses need no answer (Streamable HTTP: 202, empty body).
  if (message.kind !== 'request') return ACCEPTED;
  if (deps.log.enabled('info')) noteMcpMethod(request, message.method);
  // The revision is the body's (mcp/modern.ts); a 2026-07-28 request whose headers disagree with it is a 400.
  const era = requestEra(request.headers, version, message.id, message.method, message.params);
  if (era instanceof Refused) return { kind: 'invalid', json: era.body };
  // tools/call (the calls that reach databases) is counted exactly across instances too.
  if (message.method === 'tools/call') {
    const shared = await deps.limiter.take(session.org.id, burstLimit);
    if (!shared.allowed) return { kind: 'rate_limited', retryAfterSeconds: shared.retryAfterSeconds, limit: 'burst_shared' };
  }
  // Errors of the method itself are JSON-RPC errors in a 200 response (the method table maps them).
  const answer = await (era === 'modern' ? deps.mcp.modern : deps.mcp).reply(session, message.id, message.method, message.params);
  return answer.stepUpScope ? { kind: 'step_up', json: answer.json, scope: answer.stepUpScope } : { kind: 'answered', json: answer.json };
}

const rpcResponse = (body: string, status: number): Response => new Response(body, { status, headers: JSON_TYPE });

/** The wire form of an outcome; a 429 is thrown as a Refusal for the pipeline to audit and answer. */
export function mcpResponse(deps: Pick<DoorwayDeps, 'config'>, entered: McpRequest, outcome: McpOutcome): Response {
  switch (outcome.kind) {
    case 'answered':
      return rpcResponse(outcome.json, 200);
    case 'accepted':
      return new Response(null, { status: 202 });
    case 'invalid':
      return rpcResponse(outcome.json, 400);
    case 'step_up':
      return stepUpResponse(outcome.json, outcome.scope, deps.config.publicUrl, entered.session.org.slug);
    case 'rate_limited': {
      const value = entered.body.ok ? entered.body.value : null;
      throw burstRefusal(entered.session, value, isBatch(value, entered.version), outcome.retryAfterSeconds, outcome.limit);
    }
  }
}

/**
 * A signed-in token's tools/call outside its connectors (decision 0248): 403 with the challenge the MCP authorization
 * spec gives for insufficient scope at runtime, so the client can ask the person for the connector; the JSON-RPC
 * error (-32003) stays the body. Not a Refusal: the call's refusal is already audited as a tool call's.
 */
function stepUpResponse(body: string, scope: string, publicUrl: string, slug: string): Response {
  const challenge = `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadataUrl(publicUrl, slug)}", error_description="This sign-in does not cover the tool's connector."`;
  return new Response(body, { status: 403, headers: { ...JSON_TYPE, 'WWW-Authenticate': challenge } });
}

/**
 * The JSON-RPC body of a 429: an error with the request's id; for a batch, one error per request in it (a batch of
 * notifications only, or a body that is no request, gets one error with id null).
 */
function rateLimitedBody(value: unknown, batch: boolean, message: string): string {
  const error = { code: RpcCode.RateLimited, message };
  if (!batch) {
    const m = classify(value);
    return failure(m.kind === 'request' || m.kind === 'invalid' ? m.id : null, error);
  }
  const ids = (value as unknown[]).map(classify).flatMap((m) => (m.kind === 'request' ? [m.id] : []));
  return ids.length ? `[${ids.map((id) => failure(id, error)).join(',')}]` : failure(null, error);
}

/** The 429 of a burst limit, counted by the window that refused it: a Refusal (audited by the pipeline) with a JSON-RPC body. */
export function burstRefusal(session: McpSession, value: unknown, batch: boolean, retryAfterSeconds: number, limit: 'burst_local' | 'burst_shared'): Refusal {
  countLimitRefusal(limit);
  const err = new AppError(429, 'rate_limited', `The per-second burst limit of this plan is exceeded; retry after ${retryAfterSeconds} second(s).`, {
    'retry-after': String(retryAfterSeconds),
  });
  const response = new Response(rateLimitedBody(value, batch, err.message), { status: 429, headers: { ...JSON_TYPE, ...err.headers } });
  return new Refusal(err, session.org.id, session.principal, response);
}

/**
 * The door's refusal of an MCP-Protocol-Version this endpoint does not speak (a request without the header is assumed
 * to speak 2025-03-26), or null: a 2026-era one gets that revision's -32022 naming the supported ones, so that a 2026
 * client can pick one; an older one the 400 it always got.
 */
export function versionRefusal(request: Request): Response | null {
  const version = request.headers.get('mcp-protocol-version')?.trim() ?? null;
  if (version === null || isSupportedVersion(version)) return null;
  if (isModernRevision(version)) return rpcResponse(unsupportedVersion(null, version).body, 400);
  return json({ error: 'unsupported_protocol_version', message: `Supported MCP-Protocol-Version values: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.` }, 400);
}
