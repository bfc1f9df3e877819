/**
 * SQL of members' passkeys (member_passkeys), the ceremonies' challenges (passkey_challenges), and what a passkey's
 * removal ends (the console sessions and MCP grants signed in with it); the live-link read used before a link is
 * followed. Decision 0380.
 */
import { and, asc, eq, gt, isNull, lt } from 'drizzle-orm';
import type { Queryable } from '../../store/db.ts';
import { mcpOauthGrants, memberLinks, memberPasskeys, passkeyChallenges } from '../../store/schema.ts';

export type PasskeyRow = typeof memberPasskeys.$inferSelect;
type ChallengeRow = typeof passkeyChallenges.$inferSelect;

/** A live link, without using it (a passkey's registration options are asked for before the link is followed). */
export async function findLiveLink(db: Queryable, tokenHash: string, now: Date) {
  const [row] = await db
    .select()
    .from(memberLinks)
    .where(and(eq(memberLinks.tokenHash, tokenHash), isNull(memberLinks.usedAt), gt(memberLinks.expiresAt, now)));
  return row;
}

export async function listPasskeyRows(db: Queryable, orgId: string, memberId: string): Promise<PasskeyRow[]> {
  return db
    .select()
    .from(memberPasskeys)
    .where(and(eq(memberPasskeys.orgId, orgId), eq(memberPasskeys.memberId, memberId)))
    .orderBy(asc(memberPasskeys.createdAt))
    .limit(100);
}

/** A passkey by its WebAuthn credential id (unique across the gateway: it is one relying party). */
export async function findPasskeyByCredentialId(db: Queryable, credentialId: string): Promise<PasskeyRow | undefined> {
  const [row] = await db.select().from(memberPasskeys).where(eq(memberPasskeys.credentialId, credentialId));
  return row;
}

/** Inserts a passkey; undefined when its credential id is already registered. */
export async function insertPasskey(db: Queryable, values: typeof memberPasskeys.$inferInsert): Promise<PasskeyRow | undefined> {
  const [row] = await db.insert(memberPasskeys).values(values).onConflictDoNothing().returning();
  return row;
}

/**
 * Records a sign-in with the passkey: its new counter and last use. The counter only moves forward (0 stays 0: an
 * authenticator that keeps none); undefined when another sign-in moved it past this one meanwhile.
 */
export async function passkeyUsed(db: Queryable, id: string, counter: number, now: Date): Promise<PasskeyRow | undefined> {
  const [row] = await db
    .update(memberPasskeys)
    .set({ counter, lastUsedAt: now })
    .where(and(eq(memberPasskeys.id, id), counter === 0 ? eq(memberPasskeys.counter, 0) : lt(memberPasskeys.counter, counter)))
    .returning();
  return row;
}

export async function renamePasskeyRow(db: Queryable, orgId: string, memberId: string, passkeyId: string, name: string): Promise<PasskeyRow | undefined> {
  const [row] = await db
    .update(memberPasskeys)
    .set({ name })
    .where(and(eq(memberPasskeys.orgId, orgId), eq(memberPasskeys.memberId, memberId), eq(memberPasskeys.id, passkeyId)))
    .returning();
  return row;
}

/**
 * Deletes the passkey: the console sessions signed in with it go with it (ON DELETE CASCADE), and the MCP grants
 * made after signing in with it are revoked first (their refresh tokens and access tokens stop on the next use).
 */
export async function deletePasskey(db: Queryable, orgId: string, memberId: string, passkeyId: string): Promise<PasskeyRow | undefined> {
  await db
    .update(mcpOauthGrants)
    .set({ revokedAt: new Date(), revokedReason: 'passkey_removed' })
    .where(and(eq(mcpOauthGrants.orgId, orgId), eq(mcpOauthGrants.passkeyId, passkeyId), isNull(mcpOauthGrants.revokedAt)));
  const [row] = await db
    .delete(memberPasskeys)
    .where(and(eq(memberPasskeys.orgId, orgId), eq(memberPasskeys.memberId, memberId), eq(memberPasskeys.id, passkeyId)))
    .returning();
  return row;
}

/** Stores an issued challenge (hashes only); challenges that expired are deleted on the way, so the table stays small. */
export async function insertChallenge(db: Queryable, values: ChallengeRow, now: Date): Promise<void> {
  await db.delete(passkeyChallenges).where(lt(passkeyChallenges.expiresAt, now));
  await db.insert(passkeyChallenges).values(values);
}

/** Takes a challenge: deletes its row and returns it; undefined when it was never issued or is already used (anywhere). */
export async function takeChallenge(db: Queryable, challengeHash: string): Promise<ChallengeRow | undefined> {
  const [row] = await db.delete(passkeyChallenges).where(eq(passkeyChallenges.challengeHash, challengeHash)).returning();
  return row;
}
