/**
 * An org's members: invite, list, change, suspend, remove, and the one-time links (invitation, password reset) by
 * which a person sets a password. Links are shown once and kept only as their SHA-256; hashes never leave this module
 * (views carry neither), and audit rows name the member by id.
 */
import { recordAudit, type Actor } from '../audit/repository.ts';
import { conflict, notFound, unprocessable } from '../errors.ts';
import type { Role } from '../principal.ts';
import type { Db, Queryable } from '../store/db.ts';
import { hashSecret, randomSecret } from '../util/crypto.ts';
import { hashPassword, passwordProblem } from './password.ts';
import {
  deleteMember,
  endMemberAccess,
  findMember,
  insertLink,
  insertMember,
  listMemberRows,
  updateMember,
  useLink,
  type LinkPurpose,
  type MemberRow,
} from './repository.ts';

/** How long an invitation or reset link stays usable. */
const LINK_TTL_MS = 7 * 24 * 3600_000;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
const ROLES: readonly Role[] = ['admin', 'contributor', 'finance'];

export interface MemberView {
  id: string;
  email: string;
  display_name: string | null;
  roles: Role[];
  status: 'invited' | 'active' | 'suspended';
  attributes: Record<string, string>;
  has_password: boolean;
  last_sign_in_at: string | null;
  created_at: string;
}

function memberView(m: MemberRow): MemberView {
  return {
    id: m.id,
    email: m.email,
    display_name: m.displayName,
    roles: m.roles as Role[],
    status: m.status as MemberView['status'],
    attributes: m.attributes,
    has_password: m.passwordHash !== null,
    last_sign_in_at: m.lastSignInAt?.toISOString() ?? null,
    created_at: m.createdAt.toISOString(),
  };
}

export interface LinkView {
  purpose: LinkPurpose;
  /** Shown once: the token is in the fragment, which browsers never send to a server (nor to its logs). */
  url: string;
  expires_at: string;
}

const linkUrl = (publicUrl: string, token: string) => `${publicUrl}/console#/join/${token}`;

/** A new one-time link of `purpose` for `member` (the older unused one of that purpose stops working). */
export async function issueLink(db: Queryable, publicUrl: string, member: MemberRow, purpose: LinkPurpose, ttlMs = LINK_TTL_MS): Promise<LinkView> {
  const token = `tgl_${randomSecret(32)}`;
  const expiresAt = new Date(Date.now() + ttlMs);
  await insertLink(db, { tokenHash: hashSecret(token), orgId: member.orgId, memberId: member.id, purpose, expiresAt });
  return { purpose, url: linkUrl(publicUrl, token), expires_at: expiresAt.toISOString() };
}

function checkRoles(roles: readonly string[]): Role[] {
  const unknown = roles.filter((r) => !ROLES.includes(r as Role));
  if (unknown.length) throw unprocessable('invalid_role', `Roles are admin, contributor and finance; not ${unknown.join(', ').slice(0, 100)}.`);
  return [...new Set(roles as Role[])];
}

export interface MembersDeps {
  db: Db;
  publicUrl: string;
}

export async function listMembers(deps: MembersDeps, orgId: string) {
  return { members: (await listMemberRows(deps.db, orgId)).map(memberView) };
}

/** Invites a person: a member in status `invited` and a one-time invitation link (7 days). */
export async function inviteMember(
  deps: MembersDeps,
  orgId: string,
  input: { email: string; display_name?: string | null; roles?: string[] },
  actor: Actor,
  db: Queryable = deps.db,
): Promise<{ member: MemberView; invitation: LinkView }> {
  const email = input.email.trim();
  if (!EMAIL.test(email)) throw unprocessable('invalid_email', 'The e-mail address is not valid.');
  const roles = checkRoles(input.roles ?? ['contributor']);
  const member = await insertMember(db, { orgId, email, displayName: input.display_name ?? null, roles, status: 'invited', attributes: {} });
  if (!member) throw conflict('member_exists', 'The org already has a member with this e-mail address.');
  const invitation = await issueLink(db, deps.publicUrl, member, 'invitation');
  await recordAudit(db, { orgId, action: 'member.invited', actor, targetType: 'member', targetId: member.id, details: { roles: roles.join(' ') } });
  return { member: memberView(member), invitation };
}

async function existing(db: Queryable, orgId: string, memberId: string): Promise<MemberRow> {
  const member = await findMember(db, orgId, memberId);
  if (!member) throw notFound('member_not_found', 'The org has no member with this id.');
  return member;
}

/** Refuses a change that would leave the org without an active admin member while it has had one. */
async function keepAnAdmin(db: Queryable, orgId: string, member: MemberRow, after: { roles: string[]; status: string } | null): Promise<void> {
  const wasAdmin = member.status === 'active' && member.roles.includes('admin');
  const staysAdmin = after !== null && after.status === 'active' && after.roles.includes('admin');
  if (!wasAdmin || staysAdmin) return;
  const others = (await listMemberRows(db, orgId)).filter((m) => m.id !== member.id && m.status === 'active' && m.roles.includes('admin'));
  if (others.length === 0) throw conflict('last_admin', 'This is the org’s last active admin member: make another member admin first.');
}

export interface MemberChange {
  display_name?: string | null;
  roles?: string[];
  status?: 'active' | 'suspended';
  attributes?: Record<string, string>;
}

/** Changes roles, name, attributes or status; suspending ends the member's console sessions and MCP sign-ins at once. */
export async function changeMember(deps: MembersDeps, orgId: string, memberId: string, change: MemberChange, actor: Actor): Promise<MemberView> {
  return deps.db.transaction(async (tx) => {
    const member = await existing(tx, orgId, memberId);
    const roles = change.roles ? checkRoles(change.roles) : (member.roles as Role[]);
    let status = member.status;
    if (change.status) {
      if (member.status === 'invited') throw conflict('member_invited', 'An invited member becomes active by accepting the invitation.');
      status = change.status;
    }
    await keepAnAdmin(tx, orgId, member, { roles, status });
    const row = await updateMember(tx, orgId, memberId, {
      roles,
      status,
      ...(change.display_name !== undefined ? { displayName: change.display_name } : {}),
      ...(change.attributes ? { attributes: change.attributes } : {}),
    });
    if (status === 'suspended' && member.status !== 'suspended') await endMemberAccess(tx, orgId, memberId, 'member_suspended');
    const changed = Object.keys(change).sort().join(' ');
    const action =
      change.status && change.status !== member.status ? (change.status === 'suspended' ? 'member.suspended' : 'member.resumed') : 'member.updated';
    await recordAudit(tx, { orgId, action, actor, targetType: 'member', targetId: memberId, details: { changed, roles: roles.join(' ') } });
    return memberView(row!);
  });
}

export async function removeMember(deps: MembersDeps, orgId: string, memberId: string, actor: Actor): Promise<MemberView> {
  return deps.db.transaction(async (tx) => {
    const member = await existing(tx, orgId, memberId);
    await keepAnAdmin(tx, orgId, member, null);
    await endMemberAccess(tx, orgId, memberId, 'member_removed');
    await deleteMember(tx, orgId, memberId);
    await recordAudit(tx, { orgId, action: 'member.removed', actor, targetType: 'member', targetId: memberId });
    return memberView(member);
  });
}

/** A new one-time link: an invitation again for an invited member, a password reset for an active one. */
export async function memberLink(deps: MembersDeps, orgId: string, memberId: string, actor: Actor): Promise<LinkView> {
  return deps.db.transaction(async (tx) => {
    const member = await existing(tx, orgId, memberId);
    if (member.status === 'suspended') throw conflict('member_suspended', 'A suspended member gets no link: resume the member first.');
    const purpose: LinkPurpose = member.status === 'invited' ? 'invitation' : 'password_reset';
    const link = await issueLink(tx, deps.publicUrl, member, purpose);
    await recordAudit(tx, {
      orgId,
      action: purpose === 'invitation' ? 'member.invited' : 'member.password_reset_issued',
      actor,
      targetType: 'member',
      targetId: memberId,
    });
    return link;
  });
}

/**
 * A person follows a link and sets a password: an invitation makes the member active, a reset replaces the password
 * and ends the member's sessions and sign-ins. One answer for an unknown, used or expired link.
 */
export async function acceptLink(
  deps: MembersDeps,
  input: { token: string; password: string; display_name?: string | null },
): Promise<{ email: string; org_id: string; purpose: LinkPurpose }> {
  const problem = passwordProblem(input.password);
  if (problem) throw unprocessable('weak_password', problem);
  const passwordHash = await hashPassword(input.password);
  return deps.db.transaction(async (tx) => {
    const link = await useLink(tx, hashSecret(input.token), new Date());
    const member = link ? await findMember(tx, link.orgId, link.memberId) : undefined;
    const fits = member && (link!.purpose === 'invitation' ? member.status === 'invited' : member.status === 'active');
    if (!link || !member || !fits) throw notFound('link_invalid', 'This link is unknown, used or expired: ask an admin of the org for a new one.');
    await updateMember(tx, member.orgId, member.id, {
      passwordHash,
      passwordChangedAt: new Date(),
      status: 'active',
      ...(link.purpose === 'invitation' && input.display_name ? { displayName: input.display_name } : {}),
    });
    if (link.purpose === 'password_reset') await endMemberAccess(tx, member.orgId, member.id, 'password_reset');
    await recordAudit(tx, {
      orgId: member.orgId,
      action: link.purpose === 'invitation' ? 'member.joined' : 'member.password_reset',
      actor: { type: 'user', id: member.email },
      targetType: 'member',
      targetId: member.id,
    });
    return { email: member.email, org_id: member.orgId, purpose: link.purpose };
  });
}
/** For onboarding and the demo: a member who is active at once, with this password (no link). */
export async function addActiveMember(
  db: Queryable,
  orgId: string,
  input: { email: string; roles: Role[]; password: string },
  actor: Actor,
): Promise<MemberView> {
  const member = await insertMember(db, {
    orgId,
    email: input.email,
    displayName: null,
    roles: input.roles,
    status: 'active',
    attributes: {},
    passwordHash: await hashPassword(input.password),
    passwordChangedAt: new Date(),
  });
  if (!member) throw conflict('member_exists', 'The org already has a member with this e-mail address.');
  await recordAudit(db, { orgId, action: 'member.added', actor, targetType: 'member', targetId: member.id, details: { roles: input.roles.join(' ') } });
  return memberView(member);
}
