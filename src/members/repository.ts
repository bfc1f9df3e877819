/** SQL of an org's members (org_members), their one-time links (member_links) and the org's people sign-in setting. */
import { and, asc, eq, gt, gte, isNull, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { consoleSessions, mcpOauthGrants, mcpOauthSettings, memberLinks, orgMembers } from '../store/schema.ts';

export type MemberRow = typeof orgMembers.$inferSelect;
export type LinkPurpose = 'invitation' | 'password_reset';
export type PeopleSignIn = 'idp_only' | 'members_only' | 'both';

export const emailKey = (email: string) => email.trim().toLowerCase();

export async function listMemberRows(db: Queryable, orgId: string): Promise<MemberRow[]> {
  return db.select().from(orgMembers).where(eq(orgMembers.orgId, orgId)).orderBy(asc(orgMembers.emailKey)).limit(5000);
}

export async function findMember(db: Queryable, orgId: string, memberId: string): Promise<MemberRow | undefined> {
  const [row] = await db
    .select()
    .from(orgMembers)
    .where(and(eq(orgMembers.orgId, orgId), eq(orgMembers.id, memberId)));
  return row;
}

export async function findMemberByEmail(db: Queryable, orgId: string, email: string): Promise<MemberRow | undefined> {
  const [row] = await db
    .select()
    .from(orgMembers)
    .where(and(eq(orgMembers.orgId, orgId), eq(orgMembers.emailKey, emailKey(email))));
  return row;
}

/** Inserts a member; undefined when the org already has one with this e-mail. */
export async function insertMember(db: Queryable, values: Omit<typeof orgMembers.$inferInsert, 'emailKey'>): Promise<MemberRow | undefined> {
  const [row] = await db
    .insert(orgMembers)
    .values({ ...values, emailKey: emailKey(values.email) })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function updateMember(
  db: Queryable,
  orgId: string,
  memberId: string,
  set: Partial<Pick<MemberRow, 'displayName' | 'roles' | 'status' | 'attributes' | 'passwordHash' | 'passwordChangedAt' | 'lastSignInAt'>>,
): Promise<MemberRow | undefined> {
  const [row] = await db
    .update(orgMembers)
    .set({ ...set, updatedAt: new Date() })
    .where(and(eq(orgMembers.orgId, orgId), eq(orgMembers.id, memberId)))
    .returning();
  return row;
}

export async function deleteMember(db: Queryable, orgId: string, memberId: string): Promise<MemberRow | undefined> {
  const [row] = await db
    .delete(orgMembers)
    .where(and(eq(orgMembers.orgId, orgId), eq(orgMembers.id, memberId)))
    .returning();
  return row;
}

export async function countActiveMembers(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(orgMembers)
    .where(and(eq(orgMembers.orgId, orgId), eq(orgMembers.status, 'active')));
  return row?.n ?? 0;
}

/** The member's grants (MCP sign-ins) and console sessions end: a suspended or removed member keeps nothing. */
export async function endMemberAccess(db: Queryable, orgId: string, memberId: string, reason: string): Promise<void> {
  await db
    .update(mcpOauthGrants)
    .set({ revokedAt: new Date(), revokedReason: reason })
    .where(and(eq(mcpOauthGrants.orgId, orgId), eq(mcpOauthGrants.subject, `member:${memberId}`), isNull(mcpOauthGrants.revokedAt)));
  await db.delete(consoleSessions).where(and(eq(consoleSessions.orgId, orgId), eq(consoleSessions.kind, 'member'), eq(consoleSessions.actor, memberId)));
}

/** A new link replaces the member's unused links of the same purpose (only the newest one works). */
export async function insertLink(db: Queryable, values: { tokenHash: string; orgId: string; memberId: string; purpose: LinkPurpose; expiresAt: Date }) {
  await db
    .update(memberLinks)
    .set({ usedAt: new Date() })
    .where(and(eq(memberLinks.memberId, values.memberId), eq(memberLinks.purpose, values.purpose), isNull(memberLinks.usedAt)));
  await db.insert(memberLinks).values(values);
}

/** Marks a live link used and returns it; undefined when it is unknown, used or expired (the one request that flips it wins). */
export async function useLink(db: Queryable, tokenHash: string, now: Date) {
  const [row] = await db
    .update(memberLinks)
    .set({ usedAt: now })
    .where(and(eq(memberLinks.tokenHash, tokenHash), isNull(memberLinks.usedAt), gt(memberLinks.expiresAt, now)))
    .returning();
  return row;
}

export async function peopleSignIn(db: Queryable, orgId: string): Promise<PeopleSignIn> {
  const [row] = await db.select({ mode: mcpOauthSettings.peopleSignIn }).from(mcpOauthSettings).where(eq(mcpOauthSettings.orgId, orgId));
  return (row?.mode as PeopleSignIn | undefined) ?? 'idp_only';
}

export async function setPeopleSignIn(db: Queryable, orgId: string, mode: PeopleSignIn): Promise<void> {
  await db
    .insert(mcpOauthSettings)
    .values({ orgId, peopleSignIn: mode })
    .onConflictDoUpdate({ target: mcpOauthSettings.orgId, set: { peopleSignIn: mode, updatedAt: new Date() } });
}

/** How many links of `purpose` the member was given since `since` (used, voided or live): the mail cap of 0386. */
export async function countLinksSince(db: Queryable, memberId: string, purpose: LinkPurpose, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(memberLinks)
    .where(and(eq(memberLinks.memberId, memberId), eq(memberLinks.purpose, purpose), gte(memberLinks.createdAt, since)));
  return row?.n ?? 0;
}
