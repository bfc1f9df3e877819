/**
 * SQL of console sessions (console_sessions): rows keyed by the hash of the cookie's id; sessions.ts holds the logic.
 * Also the names the sidebar shows: the org's, and the signed-in OAuth client's.
 */
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { consoleSessions, oauthClients, orgs } from '../store/schema.ts';

type SessionRow = typeof consoleSessions.$inferSelect;

/** Deletes the sessions expired before `now`. */
export async function deleteExpiredSessions(db: Db, now: Date): Promise<void> {
  await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now));
}

export async function insertSession(db: Db, values: typeof consoleSessions.$inferInsert): Promise<void> {
  await db.insert(consoleSessions).values(values);
}

/** The session of this id hash while it has not expired at `now`. */
export async function findLiveSession(db: Db, idHash: string, now: Date): Promise<SessionRow | undefined> {
  const [row] = await db
    .select()
    .from(consoleSessions)
    .where(and(eq(consoleSessions.idHash, idHash), gt(consoleSessions.expiresAt, now)));
  return row;
}

export async function deleteSessionRow(db: Db, idHash: string): Promise<void> {
  await db.delete(consoleSessions).where(eq(consoleSessions.idHash, idHash));
}

/** The org's name and slug, and the name of the OAuth client `clientId` of that org (when given and found). */
export async function sessionNames(db: Db, orgId: string, clientId: string | null): Promise<{ orgName: string; orgSlug: string; clientName: string | null }> {
  const [org] = await db.select({ name: orgs.name, slug: orgs.slug }).from(orgs).where(eq(orgs.id, orgId));
  const [found] = clientId
    ? await db
        .select({ name: oauthClients.name })
        .from(oauthClients)
        .where(and(eq(oauthClients.orgId, orgId), eq(oauthClients.clientId, clientId)))
    : [];
  return { orgName: org?.name ?? '', orgSlug: org?.slug ?? '', clientName: found?.name ?? null };
}
