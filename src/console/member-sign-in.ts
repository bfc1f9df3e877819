/**
 * POST /console/auth/password (operation signInConsolePassword): a member signs in with the org, e-mail and password
 * (auth/member-sign-in.ts: the failed-sign-in limits before the hash, one answer for every wrong combination). The
 * body is the pipeline's (declared in the contract, validated before the handler). The session's bearer is a gateway
 * token naming the member, whose status REST reads on every request.
 */
import { signInMember } from '../auth/member-sign-in.ts';
import type { MemberRow } from '../members/repository.ts';
import { MANAGE_SCOPE, MCP_SCOPE } from '../auth/credentials.ts';
import { json } from '../errors.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
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
  if (outcome.kind === 'refused') return json({ error: 'rate_limited', message: outcome.message }, 429, { 'retry-after': String(outcome.retryAfterSeconds) });
  if (outcome.kind === 'wrong') return errorReply(401, 'unauthenticated', outcome.message);
  if (org!.suspendedAt) return errorReply(403, 'org_suspended', 'The org is suspended by the gateway operator.');
  return memberSession(ctx, request, outcome.member);
}

/** A signed-in member's console session (`passkeyId`: the passkey it signed in with, whose removal ends it). */
export async function memberSession(ctx: ConsoleContext, request: Request, member: MemberRow, passkeyId?: string, cookies: string[] = []): Promise<Response> {
  const bearer = await ctx.deps.signer.issue({
    orgId: member.orgId,
    clientId: `member:${member.id}`,
    memberId: member.id,
    scopes: [MANAGE_SCOPE, MCP_SCOPE],
    ttlSeconds: MEMBER_SESSION_SECONDS,
  });
  const expiresAt = new Date(Date.now() + MEMBER_SESSION_SECONDS * 1000);
  const session = await ctx.startSession(request, { orgId: member.orgId, kind: 'member', actor: member.id, bearer, expiresAt, passkeyId });
  return jsonReply({ signed_in: true }, 200, [...session, ...cookies]);
}
