/** The console's session routes: who is signed in (with the CSRF token), signing out, the page's REST calls, the tool playground. */
import { createHash } from 'node:crypto';
import { csrfTokenOf, deleteSession } from './sessions.ts';
import { sameSecret } from '../auth/idp/oidc-client.ts';
import { crossSite, type ConsoleContext } from './context.ts';
import { errorReply, jsonReply } from './replies.ts';
import { sessionNames } from './repository.ts';

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
  const names = await sessionNames(ctx.deps.store.db, principal.orgId, principal.kind === 'oauth_client' ? principal.actorId : null);
  return jsonReply({
    org_id: principal.orgId,
    org_name: names.orgName,
    org_slug: names.orgSlug,
    kind: current.session.kind,
    actor: principal.kind === 'idp_user' ? (principal.email ?? principal.actorId) : principal.actorId,
    // The sidebar's name for who is signed in: the OAuth client's name, or the user's e-mail (else subject).
    actor_name: names.clientName ?? (principal.kind === 'idp_user' ? (principal.email ?? principal.actorId) : principal.actorId),
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
export async function proxyRest(ctx: ConsoleContext, request: Request, url: URL, rest: string, requestId: string): Promise<Response> {
  const current = await ctx.sessionOf(request);
  if (!current) return errorReply(401, 'unauthenticated', 'Not signed in, or the session ended. Sign in again.', [ctx.clearSession]);
  if (lacksCsrf(request, current.id)) return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
  // Only the REST management interface: never the operator API, the token endpoint or the MCP endpoint.
  if (!rest.startsWith('api/') || rest.includes('..') || rest.includes('//')) return errorReply(404, 'not_found', 'No such route.');
  const headers = new Headers({
    authorization: `Bearer ${current.session.bearer}`,
    host: request.headers.get('host') ?? url.host,
    'x-request-id': requestId,
  });
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
  if (request.method === 'GET' && answer.status === 200 && !out.has('content-disposition')) return withEtag(request, answer, out);
  return new Response(answer.body, { status: answer.status, headers: out });
}

/**
 * A JSON answer to a GET gets a strong ETag of its bytes; a request whose If-None-Match names it gets 304 and no
 * body, so the console's polling (the pending-approvals badge) costs a header exchange while nothing changed.
 * (Downloads, which carry Content-Disposition, are streamed on as they are.)
 */
async function withEtag(request: Request, answer: Response, headers: Headers): Promise<Response> {
  const body = new Uint8Array(await answer.arrayBuffer());
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  headers.set('etag', etag);
  if (request.headers.get('if-none-match') === etag) {
    headers.delete('content-type');
    headers.delete('content-length');
    return new Response(null, { status: 304, headers });
  }
  return new Response(body, { status: 200, headers });
}

/**
 * POST /console/playground: runs one tool as the signed-in person or client, through the org's MCP endpoint with the
 * session's own credential, so the call is audited as them and their scopes, the tool's approval and every limit
 * apply as for an agent. Answers the JSON-RPC result or error.
 */
export async function playground(ctx: ConsoleContext, request: Request, url: URL): Promise<Response> {
  const current = await ctx.sessionOf(request);
  if (!current) return errorReply(401, 'unauthenticated', 'Not signed in, or the session ended. Sign in again.', [ctx.clearSession]);
  if (lacksCsrf(request, current.id)) return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
  const input = (await request.json().catch(() => null)) as { name?: unknown; arguments?: unknown } | null;
  const args = input?.arguments ?? {};
  if (!input || typeof input.name !== 'string' || !input.name || typeof args !== 'object' || args === null || Array.isArray(args))
    return errorReply(400, 'validation_error', 'Send {"name": "<tool>", "arguments": {…}}.');
  const principal = await ctx.principalOf(current.session.bearer);
  if (!principal) return errorReply(401, 'unauthenticated', 'The session ended. Sign in again.', [ctx.clearSession]);
  const { orgSlug } = await sessionNames(ctx.deps.store.db, principal.orgId, null);
  const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: input.name, arguments: args } };
  const answer = await ctx.forward(
    new Request(`${url.origin}/mcp/${orgSlug}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${current.session.bearer}`,
        host: request.headers.get('host') ?? url.host,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(message),
    }),
  );
  const body = (await answer.json().catch(() => null)) as { jsonrpc?: string; result?: unknown; error?: unknown; message?: string } | null;
  if (body?.jsonrpc === '2.0') return jsonReply('result' in body ? { result: body.result } : { error: body.error });
  // Refused at the endpoint's door (a missing scope, a limit): its own {error, message} body, with its status.
  const code = typeof body?.error === 'string' ? body.error : 'mcp_refused';
  return errorReply(answer.status >= 400 ? answer.status : 502, code, body?.message ?? `The MCP endpoint answered HTTP ${answer.status}.`);
}
