/** The console's session routes: who is signed in (with the CSRF token), signing out, and the page's REST calls. */
import { csrfTokenOf, deleteSession } from './sessions.ts';
import { sameSecret } from '../auth/idp/oidc-client.ts';
import { crossSite, type ConsoleContext } from './context.ts';
import { errorReply, jsonReply } from './replies.ts';

/** The header every state-changing console request carries (a page of another site cannot set it). */
const CSRF_HEADER = 'x-toolgate-csrf';

const lacksCsrf = (request: Request, sessionId: string) => crossSite(request) || !sameSecret(request.headers.get(CSRF_HEADER) ?? '', csrfTokenOf(sessionId));

export async function sessionInfo(ctx: ConsoleContext, request: Request): Promise<Response> {
  const current = await ctx.sessionOf(request);
  if (!current) return errorReply(401, 'unauthenticated', 'Not signed in.', [ctx.clearSession]);
  const principal = await ctx.principalOf(current.session.bearer);
  if (!principal) {
    await deleteSession(ctx.deps.store.db, current.id);
    return errorReply(401, 'unauthenticated', 'The session ended: its credential is no longer accepted. Sign in again.', [ctx.clearSession]);
  }
  return jsonReply({
    org_id: principal.orgId,
    kind: current.session.kind,
    actor: principal.kind === 'idp_user' ? (principal.email ?? principal.actorId) : principal.actorId,
    roles: principal.roles,
    org_level: principal.orgLevel,
    csrf_token: csrfTokenOf(current.id),
    expires_at: current.session.expiresAt.toISOString(),
  });
}

export async function signOut(ctx: ConsoleContext, request: Request): Promise<Response> {
  const current = await ctx.sessionOf(request);
  if (current) {
    if (lacksCsrf(request, current.id)) return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
    await deleteSession(ctx.deps.store.db, current.id);
  }
  return jsonReply({ signed_out: true }, 200, [ctx.clearSession]);
}

/** /console/rest/*: the page's generated REST client reaches /api/* through the app, with the session's bearer. */
export async function proxyRest(ctx: ConsoleContext, request: Request, url: URL, rest: string): Promise<Response> {
  const current = await ctx.sessionOf(request);
  if (!current) return errorReply(401, 'unauthenticated', 'Not signed in, or the session ended. Sign in again.', [ctx.clearSession]);
  if (lacksCsrf(request, current.id)) return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
  // Only the REST management interface: never the operator API, the token endpoint or the MCP endpoint.
  if (!rest.startsWith('api/') || rest.includes('..') || rest.includes('//')) return errorReply(404, 'not_found', 'No such route.');
  const headers = new Headers({ authorization: `Bearer ${current.session.bearer}`, host: request.headers.get('host') ?? url.host });
  for (const name of ['content-type', 'accept']) {
    const value = request.headers.get(name);
    if (value) headers.set(name, value);
  }
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
  // The body is streamed on, not read here: the router's own size cap (TOOLGATE_MAX_BODY_BYTES) applies to it.
  const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, body: hasBody ? request.body : null, duplex: 'half' };
  const answer = await ctx.forward(new Request(`${url.origin}/${rest}${url.search}`, init));
  const out = new Headers(answer.headers);
  out.set('cache-control', 'no-store');
  return new Response(answer.body, { status: answer.status, headers: out });
}
