/** The console's session routes: who is signed in (with the CSRF token), and signing out. */
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
