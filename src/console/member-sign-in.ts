/**
 * A member signs the console in: POST /console/auth/password (signInConsolePassword) with the org, e-mail and password,
 * or with a passkey (startConsolePasskeySignIn, then signInConsolePasskey: no org or e-mail asked, the passkey names
 * its member). auth/member-sign-in.ts applies the failed-sign-in limits before the hash or the signature, with one
 * answer for every wrong combination. Bodies are the pipeline's (declared in the contract, validated before the
 * handler). The session's bearer is a gateway token naming the member, whose status REST reads on every request.
 */
import { signInMember, signInMemberWithPasskey, type MemberSignIn } from '../auth/member-sign-in.ts';
import { authenticationOptions } from '../members/passkeys.ts';
import { randomSecret } from '../util/crypto.ts';
import { MANAGE_SCOPE, MCP_SCOPE } from '../auth/credentials.ts';
import { json } from '../errors.ts';
import { findOrgById, findOrgBySlug } from '../orgs/repository.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { crossSite, errorReply, jsonReply, type ConsoleContext } from './context.ts';

/** A member's console session lasts a working day (the member is checked on every request meanwhile). */
const MEMBER_SESSION_SECONDS = 12 * 3600;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export interface PasswordInput {
  org?: string;
  email?: string;
  password?: string;
}

export async function passwordSignIn(ctx: ConsoleContext, request: Request, input: PasswordInput): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const [slug, email, password] = [input.org?.trim() ?? '', input.email?.trim() ?? '', input.password ?? ''];
  if (!slug || !email || !password) return errorReply(400, 'validation_error', 'Enter the org, your e-mail and your password.');
  const { deps } = ctx;
  const org = SLUG.test(slug) ? await findOrgBySlug(deps.store.db, slug) : undefined;
  const address = sourceAddressOf(request, deps.config.trustedProxies);
  const outcome = await signInMember({ db: deps.store.db, authFailures: deps.authFailures }, org?.id ?? null, email, password, address);
  return sessionFor(ctx, request, outcome);
}

/** The answer to a member's sign-in: refused (429), wrong (401), a suspended org (403), or a session. */
async function sessionFor(ctx: ConsoleContext, request: Request, outcome: MemberSignIn, cookies: string[] = []): Promise<Response> {
  const { deps } = ctx;
  if (outcome.kind === 'refused') return json({ error: 'rate_limited', message: outcome.message }, 429, { 'retry-after': String(outcome.retryAfterSeconds) });
  if (outcome.kind === 'wrong') return errorReply(401, 'unauthenticated', outcome.message, cookies);
  const { member } = outcome;
  const org = await findOrgById(deps.store.db, member.orgId);
  if (!org || org.suspendedAt) return errorReply(403, 'org_suspended', 'The org is suspended by the gateway operator.', cookies);
  const bearer = await deps.signer.issue({
    orgId: member.orgId,
    clientId: `member:${member.id}`,
    memberId: member.id,
    scopes: [MANAGE_SCOPE, MCP_SCOPE],
    ttlSeconds: MEMBER_SESSION_SECONDS,
  });
  const expiresAt = new Date(Date.now() + MEMBER_SESSION_SECONDS * 1000);
  const session = await ctx.startSession(request, { orgId: member.orgId, kind: 'member', actor: member.id, bearer, expiresAt });
  return jsonReply({ signed_in: true }, 200, [...session, ...cookies]);
}

const passkeyDeps = (ctx: ConsoleContext) => ({ db: ctx.deps.store.db, publicUrl: ctx.deps.config.publicUrl, box: ctx.deps.box });

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

export async function passkeySignIn(ctx: ConsoleContext, request: Request, input: { response: unknown }): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const { deps } = ctx;
  const browser = ctx.cookieOf(request, 'passkey') ?? '';
  const address = sourceAddressOf(request, deps.config.trustedProxies);
  const signInDeps = { ...passkeyDeps(ctx), authFailures: deps.authFailures, db: deps.store.db };
  // A browser without the binding cookie still goes through the limits and gets the one answer (its challenge fails).
  const outcome = await signInMemberWithPasskey(signInDeps, null, input.response, `console:${browser}`, address);
  return sessionFor(ctx, request, outcome, [ctx.clearPasskey]);
}
