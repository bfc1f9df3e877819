/**
 * POST /mcp/{orgSlug}: the MCP Streamable HTTP transport (stateless, JSON responses; MCP 2026-07-28 and the 2025
 * revisions, mcp/modern.ts telling them apart). After the pipeline's door
 * (Host, then Origin: pipeline/pipeline.ts) it owns everything HTTP about the endpoint: the MCP-Protocol-Version header,
 * authentication and the burst limit at the edge, content type, body size, parse errors, and the status codes (202,
 * 400, 401/403, 413, 415, 429 with a JSON-RPC error body). Its refusals are thrown as Refusals, which the pipeline
 * audits and answers.
 * The JSON-RPC methods are answered by the method table (mcp/server.ts, mcp/protocol.ts) over the tool runtime
 * (tools/runtime.ts).
 */
import { AppError, json, RpcCode } from '../errors.ts';
import { burstLimitFor } from '../limits/plans.ts';
import { classify, failure, isSupportedVersion, SUPPORTED_PROTOCOL_VERSIONS } from '../mcp/protocol.ts';
import { isModernRevision, notificationMismatch, Refused, requestEra, unsupportedVersion } from '../mcp/modern.ts';
import { openSession, type McpSession } from '../mcp/session.ts';
import { BodyError, decodeUtf8, parseJson, readBodyCapped } from '../util/body.ts';
import { answerBatch, batchesAllowed } from '../mcp/batch.ts';
import type { Handler } from './context.ts';
import { Refusal } from '../audit/refusals.ts';
import { findMcpOrg } from '../mcp/lookup.ts';
import type { AppDeps } from '../deps.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import { noteCaller, noteMcpMethod } from '../observability/requests.ts';
import { inSpan } from '../observability/tracing.ts';
import { resourceMetadataUrl } from '../auth/oauth-server/metadata.ts';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The refusal of an MCP-Protocol-Version this endpoint does not speak (a request without the header is assumed to
 * speak 2025-03-26): a 2026-era one gets that revision's -32022 naming the supported ones, so that a 2026 client can
 * pick one; an older one the 400 it always got.
 */
function unsupportedVersionResponse(version: string): Response {
  if (isModernRevision(version)) return rpcResponse(unsupportedVersion(null, version).body, 400);
  return json({ error: 'unsupported_protocol_version', message: `Supported MCP-Protocol-Version values: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.` }, 400);
}

/** A 429 of the burst limit, counted by the window that refused it (this instance's, or the shared one). */
function rateLimitedError(retryAfterSeconds: number, limit: 'burst_local' | 'burst_shared'): AppError {
  countLimitRefusal(limit);
  return new AppError(429, 'rate_limited', `The per-second burst limit of this plan is exceeded; retry after ${retryAfterSeconds} second(s).`, {
    'retry-after': String(retryAfterSeconds),
  });
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

/** The 429 of the burst limit: a Refusal (audited by the pipeline like any), answered with a JSON-RPC error body. */
function refuseBurst(session: McpSession, value: unknown, batch: boolean, err: AppError): never {
  const response = new Response(rateLimitedBody(value, batch, err.message), { status: 429, headers: { ...JSON_TYPE, ...err.headers } });
  throw new Refusal(err, session.org.id, session.principal, response);
}

function rpcResponse(body: string, status = 200): Response {
  return new Response(body, { status, headers: JSON_TYPE });
}

/**
 * A 401/403 as a Refusal of the org named in the URL: the org is looked up only on this refusal path (by the
 * pipeline, when it records it); an unknown slug has no org to record it in (answered alike, not recorded).
 */
function authRefusal(deps: AppDeps, slug: string, err: AppError, session: McpSession | null): Refusal {
  const orgId = session ? session.org.id : async () => (await findMcpOrg(deps.store.db, slug))?.id;
  return new Refusal(withDiscovery(err, deps.config.publicUrl, slug), orgId, session?.principal ?? null);
}

/**
 * The challenge of a 401 (and of a 403 for a missing scope) names where the org's sign-in is discovered
 * (RFC 9728 section 5.1), so an MCP client given only the URL can find its authorization server.
 */
function withDiscovery(err: AppError, publicUrl: string, slug: string): AppError {
  const challenge = err.headers['WWW-Authenticate'];
  if (!challenge?.startsWith('Bearer ')) return err;
  const header = `Bearer resource_metadata="${resourceMetadataUrl(publicUrl, slug)}", ${challenge.slice('Bearer '.length)}`;
  return new AppError(err.status, err.code, err.message, { ...err.headers, 'WWW-Authenticate': header });
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

export const mcpEndpoint: Handler = async ({ request, params, deps }) => {
  const { config } = deps;
  let session: Awaited<ReturnType<typeof openSession>> | null = null;
  try {
    // Transport checks come first (the Origin was checked at the pipeline's door).
    const version = request.headers.get('mcp-protocol-version')?.trim() ?? null;
    if (version !== null && !isSupportedVersion(version)) return unsupportedVersionResponse(version);
    session = await inSpan('authenticate', () => openSession(deps, request, params.orgSlug!));
    const logged = deps.log.enabled('info');
    if (logged) noteCaller(request, session.principal);
    const { org } = session;

    // Burst limit of the org's plan. Every authenticated request (ping included) counts in this instance's window;
    // tools/call (the calls that reach databases) is then counted exactly across instances below. A request over the
    // limit is refused once its body is read, so that the JSON-RPC error can carry its id.
    const burstLimit = burstLimitFor(org.plan, org.burstLimitPerSecond, config.customBurstPerSecond);
    const local = deps.localBurst.take(org.id, burstLimit);
    const refuse = (value: unknown, batch: boolean, retryAfterSeconds: number, limit: 'burst_local' | 'burst_shared') =>
      refuseBurst(session!, value, batch, rateLimitedError(retryAfterSeconds, limit));

    const contentType = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') {
      if (!local.allowed) return refuse(null, false, local.retryAfterSeconds, 'burst_local');
      return json({ error: 'unsupported_media_type', message: 'Content-Type must be application/json.' }, 415);
    }
    let text: string;
    try {
      text = decodeUtf8(await readBodyCapped(request, config.maxBodyBytes));
    } catch (err) {
      if (!local.allowed) return refuse(null, false, local.retryAfterSeconds, 'burst_local');
      if (err instanceof BodyError && err.status === 413) throw err;
      return rpcResponse(failure(null, { code: RpcCode.ParseError, message: 'Parse error: the body is not valid UTF-8.' }), 400);
    }
    const parsed = parseJson(text);
    if (!parsed.ok) {
      if (!local.allowed) return refuse(null, false, local.retryAfterSeconds, 'burst_local');
      const message = parsed.reason === 'depth' ? 'Parse error: the JSON is nested too deeply.' : 'Parse error: the body is not valid JSON.';
      return rpcResponse(failure(null, { code: RpcCode.ParseError, message }), 400);
    }
    const batched = Array.isArray(parsed.value) && batchesAllowed(version);
    if (!local.allowed) return refuse(parsed.value, batched, local.retryAfterSeconds, 'burst_local');
    if (batched) {
      const batch = await answerBatch(deps, session, parsed.value as unknown[], burstLimit);
      if (batch.kind === 'rate_limited') return refuse(parsed.value, true, batch.retryAfterSeconds, batch.limit);
      if (batch.kind === 'accepted') return new Response(null, { status: 202 });
      return rpcResponse(batch.body, batch.kind === 'invalid' ? 400 : 200);
    }
    const message = classify(parsed.value);
    if (message.kind === 'invalid') return rpcResponse(failure(message.id, { code: RpcCode.InvalidRequest, message: message.message }), 400);
    if (message.kind === 'notification') {
      const refused = notificationMismatch(request.headers, version, message.method);
      if (refused) return rpcResponse(refused.body, 400);
    }
    // Notifications and client responses need no answer (Streamable HTTP: 202, empty body).
    if (message.kind !== 'request') return new Response(null, { status: 202 });
    if (logged) noteMcpMethod(request, message.method);
    // The revision is the body's (mcp/modern.ts); a 2026-07-28 request whose headers disagree with it is a 400.
    const era = requestEra(request.headers, version, message.id, message.method, message.params);
    if (era instanceof Refused) return rpcResponse(era.body, 400);
    if (message.method === 'tools/call') {
      const shared = await deps.limiter.take(org.id, burstLimit);
      if (!shared.allowed) return refuse(parsed.value, false, shared.retryAfterSeconds, 'burst_shared');
    }
    // Errors of the method itself are JSON-RPC errors in a 200 response (the method table maps them).
    const table = era === 'modern' ? deps.mcp.modern : deps.mcp;
    const answer = await table.answer(session, message.id, message.method, message.params);
    return session.stepUpScope ? stepUpResponse(answer, session.stepUpScope, config.publicUrl, params.orgSlug!) : rpcResponse(answer);
  } catch (err) {
    // A 401/403 is a refusal of the org in the URL; every error is answered by the pipeline (pipeline/pipeline.ts).
    if (err instanceof AppError && (err.status === 401 || err.status === 403)) throw authRefusal(deps, params.orgSlug!, err, session);
    throw err;
  }
};
