/** SQL of billing: the org's plan row, the period's counted calls per connector, and the live connector count. */
import { and, count, eq, isNull, sql } from 'drizzle-orm';
import { rollupRows } from '../audit/insights-statements.ts';
import { rowsOf, type Queryable } from '../store/db.ts';
import { connectors, orgs } from '../store/schema.ts';

export async function findOrgRow(db: Queryable, orgId: string): Promise<typeof orgs.$inferSelect | undefined> {
  const [org] = await db.select().from(orgs).where(eq(orgs.id, orgId));
  return org;
}

/**
 * Calls counted against the quota since `start` (YYYY-MM-DD, UTC) per connector, most first: the period's audit rows of `tool.called`, `approval.executed` and `approval.failed` marked counted, read from the hourly roll-up
 * (audit_rollups, decision 0347), at its daily level (a period starts at a day, decision 0412), rather than the log;
 * with the connector's name (archived ones too).
 */
export async function countedCallsByConnector(
  db: Queryable,
  orgId: string,
  start: string,
): Promise<{ connectorId: string | null; connectorName: string | null; calls: number }[]> {
  const rows = rowsOf<{ connector_id: string | null; name: string | null; n: number | string }>(
    await db.execute(sql`SELECT counted.connector_id, c.name, counted.n FROM (
        SELECT NULLIF(connector_id, '') AS connector_id, sum(counted) AS n FROM ${rollupRows('audit_rollups', orgId, new Date(`${start}T00:00:00Z`))}
        WHERE action IN ('tool.called', 'approval.executed', 'approval.failed')
        GROUP BY 1 HAVING sum(counted) > 0) counted
      LEFT JOIN connectors c ON c.org_id = ${orgId} AND c.id::text = counted.connector_id
      ORDER BY counted.n DESC, counted.connector_id`),
  );
  return rows.map((r) => ({ connectorId: r.connector_id, connectorName: r.name, calls: Number(r.n) }));
}

export async function liveConnectorCount(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), isNull(connectors.archivedAt)));
  return Number(row?.n ?? 0);
}

/**
 * Locks the org row FOR NO KEY UPDATE and returns its plan (undefined when there is no such org). Not FOR UPDATE: it
 * serialises concurrent connector creations the same way, but does not conflict with the KEY SHARE lock of a
 * foreign-key check. FOR UPDATE did: a transaction holding the org's audit chain head and inserting its audit row
 * (FK to orgs) waited here, while this one waited for that head (a deadlock, 500s).
 */
export async function lockOrgPlan(tx: Queryable, orgId: string): Promise<string | undefined> {
  return rowsOf<{ plan: string }>(await tx.execute(sql`SELECT plan FROM orgs WHERE id = ${orgId} FOR NO KEY UPDATE`))[0]?.plan;
}
