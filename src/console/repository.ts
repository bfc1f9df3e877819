/** SQL of console sessions (console_sessions): rows keyed by the hash of the cookie's id; sessions.ts holds the logic. */
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { consoleSessions } from '../store/schema.ts';

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
