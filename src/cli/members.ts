/**
 * `members list | invite | set-roles | suspend | resume | remove | link | passkeys | remove-passkey`: one org's members,
 * through the operator API of a running server or on the store. A member is named by e-mail; both paths print the
 * same wire objects.
 */
import type { Member, MemberInvitation, MemberLink, MemberList, Passkey, PasskeyList } from '../../generated/client/types.gen.ts';
import { memberList } from '../handlers/members.ts';
import { mailMemberLink } from '../handlers/member-mail.ts';
import { orgBySlug } from '../orgs/operator.ts';
import * as members from '../members/service.ts';
import { listPasskeys, removePasskey } from '../members/passkeys.ts';
import { print, requireSlug } from './orgs.ts';
import { apiJson, chooseTarget, CliError, EXIT, onStore } from './target.ts';

const OPERATOR = { type: 'operator', id: null } as const;
const ROLES = ['admin', 'contributor', 'finance'];

type Values = { org?: string; email?: string; roles?: string; passkey?: string; json?: boolean };

function rolesOf(value: string | undefined, flag: string): string[] {
  const roles = (value ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (roles.some((r) => !ROLES.includes(r))) throw new CliError(`${flag} lists roles among ${ROLES.join(', ')} (comma-separated)`, EXIT.usage);
  return roles;
}

function requireEmail(value: string | undefined): string {
  if (!value?.includes('@')) throw new CliError('--email is required (the member’s e-mail address)', EXIT.usage);
  return value;
}

const line = (m: Member) =>
  `${m.email.padEnd(32)} ${m.status.padEnd(9)} ${(m.roles.join(',') || '-').padEnd(26)} ${m.last_sign_in_at ? `last sign-in ${m.last_sign_in_at}` : 'never signed in'}`;

/** The wire object of one operation, through the API or on the store; `act` gets the org id and the member (by e-mail). */
type Action<T> = {
  api: (base: string, member: Member | null) => { method: string; path: string; body?: unknown };
  store: (deps: Parameters<Parameters<typeof onStore>[1]>[0]['deps'], orgId: string, member: Member | null) => Promise<T>;
};

async function run<T>(slug: string, email: string | null, action: Action<T>): Promise<T> {
  const target = chooseTarget();
  const find = (list: MemberList) => {
    if (email === null) return null;
    const found = list.members.find((m) => m.email.toLowerCase() === email.toLowerCase());
    if (!found) throw new CliError(`${slug} has no member with the e-mail ${email}`);
    return found;
  };
  if (target.kind === 'api') {
    const base = `/operator/orgs/${slug}/members`;
    const member = email === null ? null : find(await apiJson<MemberList>(target, 'GET', base));
    const call = action.api(base, member);
    return apiJson<T>(target, call.method, call.path, call.body);
  }
  return onStore(target.config, async ({ deps }) => {
    const orgId = (await orgBySlug(deps, slug)).id;
    const member = email === null ? null : find(await memberList(deps, orgId));
    return action.store(deps, orgId, member);
  });
}

const storeDeps = (deps: { store: { db: import('../store/db.ts').Db }; config: { publicUrl: string } }) => ({
  db: deps.store.db,
  publicUrl: deps.config.publicUrl,
});

export async function membersList(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const list = await run<MemberList>(slug, null, { api: (base) => ({ method: 'GET', path: base }), store: (deps, orgId) => memberList(deps, orgId) });
  print(Boolean(values.json), list, () => list.members.map(line).join('\n') || `${slug} has no members`);
}

export async function membersInvite(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const email = requireEmail(values.email);
  const roles = values.roles === undefined ? ['contributor'] : rolesOf(values.roles, '--roles');
  const body = { email, roles };
  const result = await run<MemberInvitation>(slug, null, {
    api: (base) => ({ method: 'POST', path: base, body }),
    store: async (deps, orgId) => {
      const invited = await members.inviteMember(storeDeps(deps), orgId, body, OPERATOR);
      mailMemberLink(deps, orgId, invited.member.id, invited.invitation);
      return invited;
    },
  });
  print(
    Boolean(values.json),
    result,
    () =>
      `Invited ${email} to ${slug} as ${roles.join(', ') || 'no role'}.\nInvitation link (shown only now, one use, until ${result.invitation.expires_at}):\n${result.invitation.url}`,
  );
}

function change(values: Values, body: members.MemberChange, say: (m: Member) => string) {
  const slug = requireSlug(values.org, '--org');
  return run<Member>(slug, requireEmail(values.email), {
    api: (base, m) => ({ method: 'PATCH', path: `${base}/${m!.id}`, body }),
    store: (deps, orgId, m) => members.changeMember(storeDeps(deps), orgId, m!.id, body, OPERATOR),
  }).then((member) => print(Boolean(values.json), member, () => say(member)));
}

export const membersSetRoles = (values: Values) =>
  change(values, { roles: rolesOf(values.roles, '--roles') }, (m) => `${m.email} now has ${m.roles.join(', ') || 'no role'}.`);

export const membersSuspend = (values: Values, suspended: boolean) =>
  change(values, { status: suspended ? 'suspended' : 'active' }, (m) =>
    suspended ? `${m.email} is suspended: their console sessions and MCP sign-ins ended.` : `${m.email} is active again.`,
  );

export async function membersRemove(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const member = await run<Member>(slug, requireEmail(values.email), {
    api: (base, m) => ({ method: 'DELETE', path: `${base}/${m!.id}` }),
    store: (deps, orgId, m) => members.removeMember(storeDeps(deps), orgId, m!.id, OPERATOR),
  });
  print(Boolean(values.json), member, () => `${member.email} is no longer a member of ${slug}.`);
}

export async function membersLink(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const link = await run<MemberLink>(slug, requireEmail(values.email), {
    api: (base, m) => ({ method: 'POST', path: `${base}/${m!.id}/link` }),
    store: async (deps, orgId, m) => {
      const link = await members.memberLink(storeDeps(deps), orgId, m!.id, OPERATOR);
      mailMemberLink(deps, orgId, m!.id, link);
      return link;
    },
  });
  const what = link.purpose === 'invitation' ? 'Invitation' : 'Password-reset';
  print(Boolean(values.json), link, () => `${what} link (shown only now, one use, until ${link.expires_at}):\n${link.url}`);
}

const passkeyLine = (p: Passkey) =>
  `${p.id}  ${p.name.padEnd(24)} created ${p.created_at}  ${p.last_used_at ? `last used ${p.last_used_at}` : 'never used'}${p.backed_up ? '  synced' : ''}`;

export async function membersPasskeys(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const email = requireEmail(values.email);
  const list = await run<PasskeyList>(slug, email, {
    api: (base, m) => ({ method: 'GET', path: `${base}/${m!.id}/passkeys` }),
    store: (deps, orgId, m) => listPasskeys(deps.store.db, orgId, m!.id),
  });
  print(Boolean(values.json), list, () => list.passkeys.map(passkeyLine).join('\n') || `${email} has no passkeys`);
}

export async function membersRemovePasskey(values: Values): Promise<void> {
  const slug = requireSlug(values.org, '--org');
  const email = requireEmail(values.email);
  const passkeyId = values.passkey ?? '';
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(passkeyId)) {
    throw new CliError('--passkey is required (the passkey id, from `members passkeys`)', EXIT.usage);
  }
  const removed = await run<Passkey>(slug, email, {
    api: (base, m) => ({ method: 'DELETE', path: `${base}/${m!.id}/passkeys/${passkeyId}` }),
    store: (deps, orgId, m) => removePasskey(deps.store.db, orgId, m!.id, passkeyId, OPERATOR),
  });
  print(Boolean(values.json), removed, () => `Removed the passkey “${removed.name}” of ${email}: it signs nobody in any more.`);
}
