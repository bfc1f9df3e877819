/**
 * The checks every HTTP surface goes through, written once: the REST operations, the MCP transport and the console
 * are each a door (which checks apply, and how the surface words their refusals) over the same functions. The chain
 * is plain function composition, not Elysia hooks: nothing here allocates or awaits on a request that passes
 * (docs/decisions/0150-one-http-pipeline.md).
 *
 *   door checks (Host, Origin, the surface's own) -> authentication, door limits and the request read (http/router.ts,
 *   per access policy; the MCP operation's in pipeline/mcp.ts) -> handler
 *   -> error mapping; a Refusal thrown anywhere on the way is audited here, the one place refusals are recorded.
 *   Every answer, a refusal of the door included, carries the request's id (X-Request-Id: stampRequestId).
 */
import { AppError, json, OAuthError, restErrorResponse } from '../errors.ts';
import type { Principal } from '../principal.ts';
import type { AppDeps } from '../deps.ts';
import { claimsOf, Refusal, refusalRow } from '../audit/refusals.ts';
import { bearerToken } from '../net/bearer.ts';
import { hostPolicyFor } from '../net/host-policy.ts';
import { describeError } from '../util/log.ts';

/**
 * The answer with the request's id (observability/requests.ts requestIdOf: a valid incoming traceparent's trace id or
 * X-Request-Id, else a new one) in X-Request-Id: every surface's answers carry it, set here and nowhere else. A
 * response whose headers cannot be changed (Response.redirect, a fetched one) is copied first.
 */
export function stampRequestId(response: Response, requestId: string): Response {
  try {
    response.headers.set('x-request-id', requestId);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set('x-request-id', requestId);
    return copy;
  }
}

/** A surface's door: which of the shared checks apply to it, and the words of their 403s. */
export interface Door {
  /** The Host check (DNS rebinding: a page on a name the attacker controls gets nothing back, not even public documents). */
  hostMessage: string | null;
  /** The Origin check (a page of another origin, or an opaque one, executes nothing): the 403's message, or null. */
  originMessage: string | null;
  /** How the surface answers a refused check. */
  reply(status: 403, error: 'forbidden_host' | 'forbidden_origin', message: string): Response;
  /** A check of the surface's own, after Host and Origin and before any credential (the MCP transport's protocol version). */
  check?(request: Request): Response | null;
  /** Headers every answer through this door carries, its refusals included, unless the answer sets its own. */
  headers?: Readonly<Record<string, string>>;
}

/** The answer with its door's headers (a response whose headers cannot be changed is copied first). */
export function withDoorHeaders(response: Response, door: Door): Response {
  if (!door.headers) return response;
  const missing = Object.entries(door.headers).filter(([name]) => !response.headers.has(name));
  try {
    for (const [name, value] of missing) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const [name, value] of missing) copy.headers.set(name, value);
    return copy;
  }
}

/** The refusal of the first check the request fails, or null when it passes them all. */
export function checkDoor(door: Door, deps: AppDeps, request: Request): Response | null {
  const policy = hostPolicyFor(deps.config);
  if (door.hostMessage !== null && !policy.hostAllowed(request)) return door.reply(403, 'forbidden_host', door.hostMessage);
  if (door.originMessage !== null && !policy.originAllowed(request.headers.get('origin'))) {
    return door.reply(403, 'forbidden_origin', door.originMessage);
  }
  return door.check ? door.check(request) : null;
}

const UUID = /^[0-9a-f-]{36}$/i;

/** The org a bearer token claims (tg_org), read without verifying it: only ever used to file a refusal. */
function claimedOrg(request: Request): string | null {
  const token = bearerToken(request);
  const claimed = token ? claimsOf(token)?.tg_org : undefined;
  return typeof claimed === 'string' && UUID.test(claimed) ? claimed : null;
}

/**
 * A refused /api request as a Refusal: a 429 is the principal's org; a 403 names its org (the principal, or the
 * verified token's tg_org when the token lacked the management scope). A 401 has no org it provably belongs to, so it
 * is not recorded (docs/decisions/0092-audit-recorded-refusals.md); other errors pass unchanged.
 */
export function restRefusal(err: unknown, request: Request, principal: Principal | null): unknown {
  if (!(err instanceof AppError) || (err.status !== 403 && err.status !== 429)) return err;
  return new Refusal(err, principal ? principal.orgId : claimedOrg(request), principal);
}

/** Records a refusal in its org's audit log (queued, never waited for); an org looked up on this path may fail to be. */
async function recordRefusal(deps: AppDeps, request: Request, refusal: Refusal): Promise<void> {
  const { error, principal } = refusal;
  try {
    const orgId = typeof refusal.orgId === 'function' ? await refusal.orgId() : refusal.orgId;
    if (orgId) deps.audit.denial(refusalRow(orgId, request, error.status, error.code, error.message, principal));
  } catch (err) {
    deps.log.error('recording a refusal failed', { error: describeError(err) });
  }
}

/** The wire form of an error: RFC 6749's body for the token endpoint's errors, `{error, message}` for the rest. */
function errorResponse(err: unknown, log: (msg: string, err: unknown) => void): Response {
  if (err instanceof OAuthError) {
    return json({ error: err.code, error_description: err.message, message: err.message }, err.status, { 'cache-control': 'no-store', ...err.headers });
  }
  return restErrorResponse(err, log);
}

/** The answer to a request that failed: a Refusal is recorded, then answered with its own response or its error's. */
export async function answerFailure(deps: AppDeps, request: Request, err: unknown, log: (msg: string, err: unknown) => void): Promise<Response> {
  if (!(err instanceof Refusal)) return errorResponse(err, log);
  await recordRefusal(deps, request, err);
  return err.response ?? errorResponse(err.error, log);
}
