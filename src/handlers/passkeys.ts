/**
 * Members' passkeys on the wire (decision 0380): the console's sign-in with one and a member's own (list, register,
 * rename, remove), the options of one registered while following a link, and an admin's or the operator's view of a
 * member's passkeys (list, remove).
 */
import { consoleContext } from '../console/context.ts';
import {
  listOwnPasskeys,
  ownRegistrationOptions,
  passkeySignIn,
  passkeySignInOptions,
  registerOwnPasskey,
  removeOwnPasskey,
  renameOwnPasskey,
} from '../console/passkeys.ts';
import { AppError, json, notFound } from '../errors.ts';
import { linkPasskeyOptions } from '../members/passkey-links.ts';
import { listPasskeys, removePasskey } from '../members/passkeys.ts';
import { findMember } from '../members/repository.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { orgBySlug } from '../orgs/operator.ts';
import { actorOf } from '../principal.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler, RequestContext } from './context.ts';

const NO_STORE = { 'cache-control': 'no-store' };
/** Anonymous passkey options per second from one address (each writes a challenge). */
const OPTIONS_PER_SECOND = 5;

export const passkeyDepsOf = (deps: AppDeps) => ({ db: deps.store.db, publicUrl: deps.config.publicUrl });

/**
 * Anonymous options write a challenge row each: a few per second from one address (decision 0380), the console's
 * sign-in and the org's MCP sign-in page together (one window per address).
 */
export function takePasskeyOptions(deps: AppDeps, address: string) {
  return deps.limiter.take(`passkey-options:${address}`, OPTIONS_PER_SECOND);
}

async function takeOptionsAttempt(deps: AppDeps, request: Request): Promise<void> {
  const decision = await takePasskeyOptions(deps, sourceAddressOf(request, deps.config.trustedProxies));
  if (!decision.allowed) {
    const retryAfter = String(decision.retryAfterSeconds);
    throw new AppError(429, 'rate_limited', `Too many attempts; retry after ${retryAfter} second(s).`, { 'retry-after': retryAfter });
  }
}

export const startConsolePasskeySignIn: Handler = async ({ deps, request }) => {
  await takeOptionsAttempt(deps, request);
  return passkeySignInOptions(consoleContext(deps), request);
};
export const signInConsolePasskey: Handler = ({ deps, request, body }: RequestContext<{ response: unknown }>) =>
  passkeySignIn(consoleContext(deps), request, body);
export const listConsolePasskeys: Handler = ({ deps, request }) => listOwnPasskeys(consoleContext(deps), request);
export const startConsolePasskeyRegistration: Handler = ({ deps, request }) => ownRegistrationOptions(consoleContext(deps), request);
export const registerConsolePasskey: Handler = ({ deps, request, body }: RequestContext<{ name?: string; response: unknown }>) =>
  registerOwnPasskey(consoleContext(deps), request, body);
export const renameConsolePasskey: Handler = ({ deps, request, params, body }: RequestContext<{ name: string }>) =>
  renameOwnPasskey(consoleContext(deps), request, params.passkeyId!, body);
export const removeConsolePasskey: Handler = ({ deps, request, params }) => removeOwnPasskey(consoleContext(deps), request, params.passkeyId!);

export const startMemberLinkPasskey: Handler = async ({ request, deps, body }: RequestContext<{ token: string }>) => {
  await takeOptionsAttempt(deps, request);
  return json(await linkPasskeyOptions(passkeyDepsOf(deps), body.token), 200, NO_STORE);
};

/** The org's member (404 `member_not_found` otherwise), for an admin's or the operator's passkey operations. */
async function orgMember(deps: AppDeps, orgId: string, memberId: string): Promise<void> {
  if (!(await findMember(deps.store.db, orgId, memberId))) throw notFound('member_not_found', 'The org has no member with this id.');
}

export const listMemberPasskeys: Handler = async ({ principal, deps, params }) => {
  await orgMember(deps, principal!.orgId, params.memberId!);
  return json(await listPasskeys(deps.store.db, principal!.orgId, params.memberId!));
};

export const removeMemberPasskey: Handler = async ({ principal, deps, params }) =>
  json(await removePasskey(deps.store.db, principal!.orgId, params.memberId!, params.passkeyId!, actorOf(principal)));

const OPERATOR = { type: 'operator', id: null } as const;
const orgIdOf = async (deps: AppDeps, slug: string) => (await orgBySlug(deps, slug)).id;

export const listOperatorMemberPasskeys: Handler = async ({ deps, params }) => {
  const orgId = await orgIdOf(deps, params.slug!);
  await orgMember(deps, orgId, params.memberId!);
  return json(await listPasskeys(deps.store.db, orgId, params.memberId!), 200, NO_STORE);
};

export const removeOperatorMemberPasskey: Handler = async ({ deps, params }) =>
  json(await removePasskey(deps.store.db, await orgIdOf(deps, params.slug!), params.memberId!, params.passkeyId!, OPERATOR), 200, NO_STORE);
