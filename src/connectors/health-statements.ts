/** SQL of connector health (docs/decisions/0325): the shared state, its transitions, and the claim of due probes. */
import { and, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { connectors } from '../store/schema.ts';
import type { ConnectorRow } from './repository.ts';

export type HealthState = 'unknown' | 'healthy' | 'unhealthy';

/**
 * Sets the connector's health when it differs from `state`, in the caller's transaction; the state it had before, or null when nothing changed (another instance saw it first, or it is
 * archived), so only the first observer of a change audits it.
 */
export async function setHealth(db: Queryable, orgId: string, id: string, state: HealthState, reason: string | null): Promise<HealthState | null> {
  const result = await db.execute(sql`
    UPDATE ${connectors} AS c SET health = ${state}, health_reason = ${reason}, health_changed_at = now()
    FROM (SELECT id, health AS before FROM ${connectors} WHERE id = ${id} AND org_id = ${orgId} AND archived_at IS NULL FOR UPDATE) AS old
    WHERE c.id = old.id AND c.health <> ${state}
    RETURNING old.before`);
  const [row] = rowsOf<{ before: string }>(result);
  return (row?.before as HealthState | undefined) ?? null;
}

/**
 * Claims up to `limit` active connectors whose probe is due (not claimed by any instance within `intervalMs`), marks
 * them claimed and returns them. SKIP LOCKED: instances probing at once each take different connectors.
 */
export async function claimDueProbes(db: Queryable, intervalMs: number, limit: number): Promise<ConnectorRow[]> {
  const due = db
    .select({ id: connectors.id })
    .from(connectors)
    .where(
      and(
        eq(connectors.status, 'active'),
        isNull(connectors.archivedAt),
        or(isNull(connectors.healthCheckedAt), sql`${connectors.healthCheckedAt} < now() - make_interval(secs => ${intervalMs / 1000})`),
      ),
    )
    .orderBy(sql`${connectors.healthCheckedAt} NULLS FIRST`)
    .limit(limit)
    .for('update', { skipLocked: true });
  return db.update(connectors).set({ healthCheckedAt: sql`now()` }).where(inArray(connectors.id, due)).returning();
}

/** The connector as a probe needs it (a call's early probe), if it is still active. */
export async function findActiveConnector(db: Queryable, id: string): Promise<ConnectorRow | undefined> {
  const [row] = await db
    .select()
    .from(connectors)
    .where(and(eq(connectors.id, id), eq(connectors.status, 'active'), isNull(connectors.archivedAt)));
  return row;
}
