/**
 * Passkeys in the console (decision 0380): a member signs in with one (startConsolePasskeySignIn, then
 * signInConsolePasskey: no org or e-mail asked, the passkey names its member), and a signed-in member lists, registers,
 * renames and removes their own (listConsolePasskeys, startConsolePasskeyRegistration, registerConsolePasskey,
 * renameConsolePasskey, removeConsolePasskey). The console session is the only credential of the latter (a WebAuthn
 * ceremony runs in a browser on the gateway's origin), changes carry its CSRF token, and the member is read on every
 * request. A registration's challenge is bound to the member and this session; a sign-in's to a cookie of the browser.
 */
import { signInMemberWithPasskey } from '../auth/passkey-sign-in.ts';
import { AppError, json, unauthenticated } from '../errors.ts';
import { findMember, type MemberRow } from '../members/repository.ts';
import {
  authenticationOptions,
  listPasskeys,
  registrationOptions,
  relyingParty,
  removePasskey,
  renamePasskey,
  savePasskey,
  verifyRegistration,
} from '../members/passkeys.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { findOrgById } from '../orgs/repository.ts';
import { randomSecret } from '../util/crypto.ts';
import { crossSite, errorReply, jsonReply, lacksCsrf, type ConsoleContext } from './context.ts';
import { memberSession } from './member-sign-in.ts';

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

const passkeyDeps = (ctx: ConsoleContext) => ({ db: ctx.deps.store.db, publicUrl: ctx.deps.config.publicUrl });
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

export async function renameOwnPasskey(ctx: ConsoleContext, request: Request, passkeyId: string, input: { name: string }): Promise<Response> {
  const { member } = await signedInMember(ctx, request, true);
  return jsonReply(await renamePasskey(ctx.deps.store.db, member, passkeyId, input.name, memberActor(member)));
}

/**
 * The options of a passkey sign-in: any discoverable passkey of this gateway (usernameless). The challenge is bound to
 * a random value in a cookie of this browser (HttpOnly, SameSite=Strict, 5 minutes): it is accepted from here only.
 */
export async function passkeySignInOptions(ctx: ConsoleContext, request: Request): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const browser = randomSecret(24);
  const options = await authenticationOptions(passkeyDeps(ctx), `console:${browser}`);
  return jsonReply({ options }, 200, [ctx.passkeyCookie(browser)]);
}

/** The answer to those options, through the member sign-in door; a session that ends when the passkey is removed. */
export async function passkeySignIn(ctx: ConsoleContext, request: Request, input: { response: unknown }): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const { deps } = ctx;
  const browser = ctx.cookieOf(request, 'passkey') ?? '';
  const address = sourceAddressOf(request, deps.config.trustedProxies);
  const signInDeps = { ...passkeyDeps(ctx), authFailures: deps.authFailures };
  // A browser without the binding cookie still goes through the limits and gets the one answer (its challenge fails).
  const outcome = await signInMemberWithPasskey(signInDeps, null, input.response, `console:${browser}`, address);
  const cookies = [ctx.clearPasskey];
  if (outcome.kind === 'refused') return json({ error: 'rate_limited', message: outcome.message }, 429, { 'retry-after': String(outcome.retryAfterSeconds) });
  if (outcome.kind === 'wrong') return errorReply(401, 'unauthenticated', outcome.message, cookies);
  const org = await findOrgById(deps.store.db, outcome.member.orgId);
  if (!org || org.suspendedAt) return errorReply(403, 'org_suspended', 'The org is suspended by the gateway operator.', cookies);
  return memberSession(ctx, request, outcome.member, outcome.passkeyId, cookies);
}
