/** The org's members on the wire: list, invite, change, remove, one-time links, and following a link (public). */
import { actorOf } from '../principal.ts';
import { recordAudit } from '../audit/repository.ts';
import { AppError, json } from '../errors.ts';
import * as members from '../members/service.ts';
import { checkLinkPasskey, saveLinkPasskey } from '../members/passkey-links.ts';
import { peopleSignIn, setPeopleSignIn as savePeopleSignIn, type PeopleSignIn } from '../members/repository.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { findOrgById } from '../orgs/repository.ts';
import { orgBySlug } from '../orgs/operator.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler, RequestContext } from './context.ts';
import { passkeyDepsOf } from './passkeys.ts';
import { mailMemberLink } from './member-mail.ts';
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

/** Invites, and mails the link too where SMTP is configured (the answer still shows it once). */
async function invite(deps: AppDeps, orgId: string, body: InviteMemberRequest, actor: Parameters<typeof members.inviteMember>[3]) {
  const invited = await members.inviteMember(membersDeps(deps), orgId, body, actor);
  mailMemberLink(deps, orgId, invited.member.id, invited.invitation);
  return json(invited, 201, NO_STORE);
}

async function link(deps: AppDeps, orgId: string, memberId: string, actor: Parameters<typeof members.memberLink>[3]) {
  const issued = await members.memberLink(membersDeps(deps), orgId, memberId, actor);
  mailMemberLink(deps, orgId, memberId, issued);
  return json(issued, 201, NO_STORE);
}

export const inviteMember: Handler = async ({ principal, deps, body }: RequestContext<InviteMemberRequest>) =>
  invite(deps, principal!.orgId, body, actorOf(principal));

export const updateMember: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateMemberRequest>) =>
  json(await members.changeMember(membersDeps(deps), principal!.orgId, params.memberId!, body, actorOf(principal)));

export const removeMember: Handler = async ({ principal, deps, params }) =>
  json(await members.removeMember(membersDeps(deps), principal!.orgId, params.memberId!, actorOf(principal)));

export const createMemberLink: Handler = async ({ principal, deps, params }) => link(deps, principal!.orgId, params.memberId!, actorOf(principal));

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

type AcceptBody = { token: string; password: string; display_name?: string; passkey?: { name?: string; response: unknown } };

export const acceptMemberLink: Handler = async ({ request, deps, body }: RequestContext<AcceptBody>) => {
  const decision = await deps.limiter.take(`member-link:${sourceAddressOf(request, deps.config.trustedProxies)}`, ACCEPTS_PER_SECOND);
  if (!decision.allowed) {
    const retryAfter = String(decision.retryAfterSeconds);
    throw new AppError(429, 'rate_limited', `Too many attempts; retry after ${retryAfter} second(s).`, { 'retry-after': retryAfter });
  }
  // A passkey registered while following the link (decision 0380) is checked while the link is live, stored once it is used.
  const passkey = body.passkey ? await checkLinkPasskey(passkeyDepsOf(deps), body.token, body.passkey.response) : null;
  const done = await members.acceptLink(membersDeps(deps), body);
  if (passkey) await saveLinkPasskey(deps.store.db, done, passkey, body.passkey?.name);
  const org = await findOrgById(deps.store.db, done.org_id);
  return json({ email: done.email, org_slug: org?.slug ?? '', purpose: done.purpose }, 200, NO_STORE);
};

/** The operator's view of one org's members (the CLI): the same operations, the org named by its slug. */
const OPERATOR = { type: 'operator', id: null } as const;
const orgIdOf = async (deps: AppDeps, slug: string) => (await orgBySlug(deps, slug)).id;

export const listOperatorMembers: Handler = async ({ deps, params }) => json(await memberList(deps, await orgIdOf(deps, params.slug!)), 200, NO_STORE);

export const inviteOperatorMember: Handler = async ({ deps, params, body }: RequestContext<InviteMemberRequest>) =>
  invite(deps, await orgIdOf(deps, params.slug!), body, OPERATOR);

export const updateOperatorMember: Handler = async ({ deps, params, body }: RequestContext<UpdateMemberRequest>) =>
  json(await members.changeMember(membersDeps(deps), await orgIdOf(deps, params.slug!), params.memberId!, body, OPERATOR), 200, NO_STORE);

export const removeOperatorMember: Handler = async ({ deps, params }) =>
  json(await members.removeMember(membersDeps(deps), await orgIdOf(deps, params.slug!), params.memberId!, OPERATOR), 200, NO_STORE);

export const createOperatorMemberLink: Handler = async ({ deps, params }) => link(deps, await orgIdOf(deps, params.slug!), params.memberId!, OPERATOR);
