/**
 * The MCP operation's way in through the pipeline (POST /mcp/{orgSlug}): its credential (X-API-Key, a bearer, or the
 * console session: decision 0335), the burst limit of this instance, and the body read under the cap. What it hands on
 * (mcp/doorway.ts McpRequest) is the doorway's to classify and answer; its refusals are thrown, as every surface's.
 */
import { AppError } from '../errors.ts';
import type { AppDeps } from '../deps.ts';
import { Refusal } from '../audit/refusals.ts';
import { resourceMetadataUrl } from '../auth/oauth-server/metadata.ts';
import { burstLimitFor } from '../limits/plans.ts';
import { burstRefusal, isBatch, type McpBody, type McpRequest } from '../mcp/doorway.ts';
import { findMcpOrg } from '../mcp/lookup.ts';
import { type McpCredential, type McpSession, openSession } from '../mcp/session.ts';
import { bearerToken } from '../net/bearer.ts';
import { noteCaller } from '../observability/requests.ts';
import { inSpan } from '../observability/tracing.ts';
import { BodyError, decodeUtf8, parseJson, readBodyCapped } from '../util/body.ts';

/** The console session's bearer, after its checks (Origin, CSRF token, Sec-Fetch-Site); null when the request presents no session. */
export type SessionBearer = (request: Request, deps: AppDeps) => Promise<string> | null;

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
 * The caller for the org in the URL. A 401/403 is a Refusal of that org: it is looked up only on this refusal path
 * (by the pipeline, when it records it); an unknown slug has no org to record it in (answered alike, not recorded).
 */
async function authenticate(request: Request, slug: string, deps: AppDeps, sessionBearer: SessionBearer): Promise<McpSession> {
  try {
    const apiKey = request.headers.get('x-api-key');
    const fromSession = apiKey === null ? sessionBearer(request, deps) : null;
    const credential: McpCredential = apiKey !== null ? { apiKey } : { bearer: fromSession ? await fromSession : bearerToken(request) };
    return await openSession(deps, slug, credential, request.signal);
  } catch (err) {
    if (!(err instanceof AppError) || (err.status !== 401 && err.status !== 403)) throw err;
    throw new Refusal(withDiscovery(err, deps.config.publicUrl, slug), async () => (await findMcpOrg(deps.store.db, slug))?.id, null);
  }
}

/** The body as JSON (415 and 413 thrown as every surface's; what is not UTF-8 or not JSON is the doorway's to word). */
async function readBody(request: Request, maxBytes: number): Promise<McpBody> {
  const contentType = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json') throw new AppError(415, 'unsupported_media_type', 'Content-Type must be application/json.');
  let text: string;
  try {
    text = decodeUtf8(await readBodyCapped(request, maxBytes));
  } catch (err) {
    if (err instanceof BodyError && err.status === 413) throw err;
    return { ok: false, reason: 'encoding' };
  }
  const parsed = parseJson(text);
  return parsed.ok ? parsed : { ok: false, reason: parsed.reason === 'depth' ? 'depth' : 'json' };
}

/**
 * Authenticates, takes the burst limit of this instance (every authenticated request counts, ping included) and reads
 * the body. A request over the limit is refused once its body is read, whatever else is wrong with it, so that the
 * JSON-RPC error can carry its id.
 */
export async function enterMcp(request: Request, slug: string, deps: AppDeps, sessionBearer: SessionBearer): Promise<McpRequest> {
  const session = await inSpan('authenticate', () => authenticate(request, slug, deps, sessionBearer));
  if (deps.log.enabled('info')) noteCaller(request, session.principal);
  const { org } = session;
  const burstLimit = burstLimitFor(org.plan, org.burstLimitPerSecond, deps.config.customBurstPerSecond);
  const local = deps.localBurst.take(org.id, burstLimit);
  const version = request.headers.get('mcp-protocol-version')?.trim() ?? null;
  let body: McpBody | AppError;
  try {
    body = await readBody(request, deps.config.maxBodyBytes);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    body = err;
  }
  if (!local.allowed) {
    const value = body instanceof AppError || !body.ok ? null : body.value;
    throw burstRefusal(session, value, isBatch(value, version), local.retryAfterSeconds, 'burst_local');
  }
  if (body instanceof AppError) throw body;
  return { session, version, body, burstLimit };
}
