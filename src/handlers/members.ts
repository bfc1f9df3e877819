/**
 * The org's members on the wire: list, invite, change, remove, one-time links, a member's passkeys (listed and removed
 * by admins and the operator), and following a link (public: a password and/or a passkey).
 */
import { actorOf } from '../principal.ts';
import { recordAudit } from '../audit/repository.ts';
import { AppError, json } from '../errors.ts';
import * as members from '../members/service.ts';
import { listPasskeys, removePasskey } from '../members/passkeys.ts';
import { peopleSignIn, setPeopleSignIn as savePeopleSignIn, type PeopleSignIn } from '../members/repository.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { findOrgById } from '../orgs/repository.ts';
import { orgBySlug } from '../orgs/operator.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler, RequestContext } from './context.ts';
import type { InviteMemberRequest, UpdateMemberRequest } from '../../generated/client/types.gen.ts';

const NO_STORE = { 'cache-control': 'no-store' };
/** Link follow-ups per second from one address: each costs a password hash. */
const ACCEPTS_PER_SECOND = 2;

const membersDeps = (deps: AppDeps) => ({ db: deps.store.db, publicUrl: deps.config.publicUrl });

export async function memberList(deps: AppDeps, orgId: string) {
  const [list, mode, idp] = await Promise.all([
    members.listMembers(membersDeps(deps), orgId),
    peopleSignIn(deps.store.db, orgId),
    findIdpConfig(deps.store.db, orgId),
  ]);
  return { ...list, people_sign_in: mode, idp_configured: Boolean(idp?.consoleClientId) };
}

export const listMembers: Handler = async ({ principal, deps }) => json(await memberList(deps, principal!.orgId));

export const inviteMember: Handler = async ({ principal, deps, body }: RequestContext<InviteMemberRequest>) =>
  json(await members.inviteMember(membersDeps(deps), principal!.orgId, body, actorOf(principal)), 201, NO_STORE);

export const updateMember: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateMemberRequest>) =>
  json(await members.changeMember(membersDeps(deps), principal!.orgId, params.memberId!, body, actorOf(principal)));

export const removeMember: Handler = async ({ principal, deps, params }) =>
  json(await members.removeMember(membersDeps(deps), principal!.orgId, params.memberId!, actorOf(principal)));

export const createMemberLink: Handler = async ({ principal, deps, params }) =>
  json(await members.memberLink(membersDeps(deps), principal!.orgId, params.memberId!, actorOf(principal)), 201, NO_STORE);

export const setPeopleSignIn: Handler = async ({ principal, deps, body }: RequestContext<{ people_sign_in: PeopleSignIn }>) => {
  await deps.store.db.transaction(async (tx) => {
    await savePeopleSignIn(tx, principal!.orgId, body.people_sign_in);
    await recordAudit(tx, {
      orgId: principal!.orgId,
      action: 'people_sign_in.updated',
      actor: actorOf(principal),
      details: { people_sign_in: body.people_sign_in },
    });
  });
  return json(await memberList(deps, principal!.orgId));
};

/** Link follow-ups from one address: each costs a password hash or a signature check. */
async function takeLinkAttempt(deps: AppDeps, request: Request): Promise<void> {
  const decision = await deps.limiter.take(`member-link:${sourceAddressOf(request, deps.config.trustedProxies)}`, ACCEPTS_PER_SECOND);
  if (!decision.allowed) {
    const retryAfter = String(decision.retryAfterSeconds);
    throw new AppError(429, 'rate_limited', `Too many attempts; retry after ${retryAfter} second(s).`, { 'retry-after': retryAfter });
  }
}

const passkeyDeps = (deps: AppDeps) => ({ db: deps.store.db, publicUrl: deps.config.publicUrl, box: deps.box });

type AcceptBody = { token: string; password?: string; display_name?: string; passkey?: { name?: string; response: unknown } };

export const acceptMemberLink: Handler = async ({ request, deps, body }: RequestContext<AcceptBody>) => {
  await takeLinkAttempt(deps, request);
  const { passkey, ...rest } = body;
  const checked = passkey ? { name: passkey.name, checked: await members.checkLinkPasskey(passkeyDeps(deps), body.token, passkey.response) } : undefined;
  const done = await members.acceptLink(membersDeps(deps), { ...rest, ...(checked ? { passkey: checked } : {}) });
  const org = await findOrgById(deps.store.db, done.org_id);
  return json({ email: done.email, org_slug: org?.slug ?? '', purpose: done.purpose }, 200, NO_STORE);
};

export const startMemberLinkPasskey: Handler = async ({ request, deps, body }: RequestContext<{ token: string }>) => {
  await takeLinkAttempt(deps, request);
  return json(await members.linkPasskeyOptions(passkeyDeps(deps), body.token), 200, NO_STORE);
};

/** A member of the org (404 otherwise), for the passkey operations. */
async function orgMember(deps: AppDeps, orgId: string, memberId: string): Promise<void> {
  await members.memberById(membersDeps(deps), orgId, memberId);
}

export const listMemberPasskeys: Handler = async ({ principal, deps, params }) => {
  await orgMember(deps, principal!.orgId, params.memberId!);
  return json(await listPasskeys(deps.store.db, principal!.orgId, params.memberId!));
};

export const removeMemberPasskey: Handler = async ({ principal, deps, params }) =>
  json(await removePasskey(deps.store.db, principal!.orgId, params.memberId!, params.passkeyId!, actorOf(principal)));

/** The operator's view of one org's members (the CLI): the same operations, the org named by its slug. */
const OPERATOR = { type: 'operator', id: null } as const;
const orgIdOf = async (deps: AppDeps, slug: string) => (await orgBySlug(deps, slug)).id;

export const listOperatorMembers: Handler = async ({ deps, params }) => json(await memberList(deps, await orgIdOf(deps, params.slug!)), 200, NO_STORE);

export const inviteOperatorMember: Handler = async ({ deps, params, body }: RequestContext<InviteMemberRequest>) =>
  json(await members.inviteMember(membersDeps(deps), await orgIdOf(deps, params.slug!), body, OPERATOR), 201, NO_STORE);

export const updateOperatorMember: Handler = async ({ deps, params, body }: RequestContext<UpdateMemberRequest>) =>
  json(await members.changeMember(membersDeps(deps), await orgIdOf(deps, params.slug!), params.memberId!, body, OPERATOR), 200, NO_STORE);

export const removeOperatorMember: Handler = async ({ deps, params }) =>
  json(await members.removeMember(membersDeps(deps), await orgIdOf(deps, params.slug!), params.memberId!, OPERATOR), 200, NO_STORE);

export const createOperatorMemberLink: Handler = async ({ deps, params }) =>
  json(await members.memberLink(membersDeps(deps), await orgIdOf(deps, params.slug!), params.memberId!, OPERATOR), 201, NO_STORE);

export const listOperatorMemberPasskeys: Handler = async ({ deps, params }) => {
  const orgId = await orgIdOf(deps, params.slug!);
  await orgMember(deps, orgId, params.memberId!);
  return json(await listPasskeys(deps.store.db, orgId, params.memberId!), 200, NO_STORE);
};

export const removeOperatorMemberPasskey: Handler = async ({ deps, params }) =>
  json(await removePasskey(deps.store.db, await orgIdOf(deps, params.slug!), params.memberId!, params.passkeyId!, OPERATOR), 200, NO_STORE);
