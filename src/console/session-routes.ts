/** The console's session routes: who is signed in (with the CSRF token), signing out, the tool playground. */
import { csrfTokenOf, deleteSession } from './sessions.ts';
import { errorReply, jsonReply, lacksCsrf, type ConsoleContext } from './context.ts';
import { sessionNames } from './repository.ts';

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
  // The MCP endpoint checks the session's bearer as it checks any (a revoked client is refused there).
  const { orgSlug } = await sessionNames(ctx.deps.store.db, current.session.orgId, null);
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
