/**
 * POST /console/auth/password: a member signs in with the org, e-mail and password (auth/member-sign-in.ts: the
 * failed-sign-in limits before the hash, one answer for every wrong combination). The session's bearer is a gateway
 * token naming the member, whose status REST reads on every request.
 */
import { signInMember } from '../auth/member-sign-in.ts';
import { MANAGE_SCOPE, MCP_SCOPE } from '../auth/credentials.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { BodyError, readBodyCapped } from '../util/body.ts';
import { crossSite, type ConsoleContext } from './context.ts';
import { errorReply, jsonReply, respond } from './replies.ts';

/** A member's console session lasts a working day (the member is checked on every request meanwhile). */
const MEMBER_SESSION_SECONDS = 12 * 3600;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_BODY_BYTES = 4096;

async function readInput(request: Request): Promise<{ org: string; email: string; password: string } | Response> {
  if ((request.headers.get('content-type') ?? '').split(';')[0]!.trim() !== 'application/json')
    return errorReply(415, 'unsupported_media_type', 'Content-Type must be application/json.');
  let input: Record<string, unknown>;
  try {
    input = JSON.parse(new TextDecoder().decode(await readBodyCapped(request, MAX_BODY_BYTES))) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof BodyError && err.status === 413) return errorReply(413, 'payload_too_large', 'The body is too large.');
    return errorReply(400, 'invalid_json', 'The body is not valid JSON.');
  }
  const text = (key: string) => (typeof input?.[key] === 'string' ? (input[key] as string) : '');
  const [org, email, password] = [text('org').trim(), text('email').trim(), text('password')];
  if (!org || !email || !password) return errorReply(400, 'validation_error', 'Enter the org, your e-mail and your password.');
  return { org, email, password };
}

export async function signInWithPassword(ctx: ConsoleContext, request: Request): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const input = await readInput(request);
  if (input instanceof Response) return input;
  const { deps } = ctx;
  const org = SLUG.test(input.org) ? await findOrgBySlug(deps.store.db, input.org) : undefined;
  const address = sourceAddressOf(request, deps.config.trustedProxies);
  const outcome = await signInMember({ db: deps.store.db, authFailures: deps.authFailures }, org?.id ?? null, input.email, input.password, address);
  if (outcome.kind === 'refused') {
    return respond(JSON.stringify({ error: 'rate_limited', message: outcome.message }), 429, {
      'content-type': 'application/json',
      'retry-after': String(outcome.retryAfterSeconds),
    });
  }
  if (outcome.kind === 'wrong') return errorReply(401, 'unauthenticated', outcome.message);
  if (org!.suspendedAt) return errorReply(403, 'org_suspended', 'The org is suspended by the gateway operator.');
  const { member } = outcome;
  const bearer = await deps.signer.issue({
    orgId: member.orgId,
    clientId: `member:${member.id}`,
    memberId: member.id,
    scopes: [MANAGE_SCOPE, MCP_SCOPE],
    ttlSeconds: MEMBER_SESSION_SECONDS,
  });
  const expiresAt = new Date(Date.now() + MEMBER_SESSION_SECONDS * 1000);
  const cookies = await ctx.startSession(request, { orgId: member.orgId, kind: 'member', actor: member.id, bearer, expiresAt });
  return jsonReply({ signed_in: true }, 200, cookies);
}
