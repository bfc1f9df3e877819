/**
 * A signed-in member's own passkeys, from the console (operations listConsolePasskeys, startConsolePasskeyRegistration,
 * registerConsolePasskey, removeConsolePasskey): the console session is the only credential (a WebAuthn ceremony runs
 * in a browser on the gateway's origin), changes carry its CSRF token, and the member is read on every request. A
 * registration's challenge is bound to the member and this session (decision 0380).
 */
import { AppError, unauthenticated } from '../errors.ts';
import { findMember, type MemberRow } from '../members/repository.ts';
import { listPasskeys, registrationOptions, relyingParty, removePasskey, savePasskey, verifyRegistration } from '../members/passkeys.ts';
import { jsonReply, lacksCsrf, type ConsoleContext } from './context.ts';

interface SignedInMember {
  member: MemberRow;
  sessionId: string;
}

/** The session's member, active; a change also needs the session's CSRF token. */
async function signedInMember(ctx: ConsoleContext, request: Request, change: boolean): Promise<SignedInMember> {
  const current = await ctx.sessionOf(request);
  if (!current) throw unauthenticated('Not signed in, or the console session ended. Sign in again.');
  if (change && lacksCsrf(request, current.id)) throw new AppError(403, 'csrf', 'The request lacks the console CSRF token.');
  const { session } = current;
  if (session.kind !== 'member') {
    throw new AppError(403, 'not_a_member', 'Passkeys belong to members of the org: this session signed in with an OAuth client or the identity provider.');
  }
  const member = await findMember(ctx.deps.store.db, session.orgId, session.actor);
  if (member?.status !== 'active') throw unauthenticated('Not signed in, or the console session ended. Sign in again.');
  return { member, sessionId: current.id };
}

const passkeyDeps = (ctx: ConsoleContext) => ({ db: ctx.deps.store.db, publicUrl: ctx.deps.config.publicUrl, box: ctx.deps.box });
const bindingOf = (who: SignedInMember) => `console:${who.member.id}:${who.sessionId}`;
const memberActor = (member: MemberRow) => ({ type: 'user' as const, id: member.email });

export async function listOwnPasskeys(ctx: ConsoleContext, request: Request): Promise<Response> {
  const { member } = await signedInMember(ctx, request, false);
  const list = await listPasskeys(ctx.deps.store.db, member.orgId, member.id);
  return jsonReply({ ...list, available: relyingParty(ctx.deps.config.publicUrl) !== null });
}

export async function ownRegistrationOptions(ctx: ConsoleContext, request: Request): Promise<Response> {
  const who = await signedInMember(ctx, request, true);
  return jsonReply({ options: await registrationOptions(passkeyDeps(ctx), who.member, bindingOf(who)) });
}

export async function registerOwnPasskey(ctx: ConsoleContext, request: Request, input: { name?: string; response: unknown }): Promise<Response> {
  const who = await signedInMember(ctx, request, true);
  const checked = await verifyRegistration(passkeyDeps(ctx), bindingOf(who), input.response);
  const db = ctx.deps.store.db;
  return jsonReply(await savePasskey(db, who.member, checked, input.name, memberActor(who.member)), 201);
}

export async function removeOwnPasskey(ctx: ConsoleContext, request: Request, passkeyId: string): Promise<Response> {
  const { member } = await signedInMember(ctx, request, true);
  return jsonReply(await removePasskey(ctx.deps.store.db, member.orgId, member.id, passkeyId, memberActor(member)));
}
