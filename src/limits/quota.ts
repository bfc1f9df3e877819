/** The monthly tool-call quota: a durable count per org and billing period in the store, never overshot. */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { periodStart } from './plans.ts';

/**
 * Counts one call if the quota allows it. The conditional upsert runs atomically in the store, so
 * concurrent calls on any number of instances can never push the count past the quota.
 * Returns false when the quota is used up (nothing is counted then).
 */
export async function consumeToolCall(db: Queryable, orgId: string, quota: number | null, at: Date = new Date()): Promise<boolean> {
  const period = periodStart(at);
  if (quota === null) {
    await db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, 1)
      ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = usage_counters.tool_calls + 1`);
    return true;
  }
  const result = await db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls)
      SELECT ${orgId}, ${period}, 1 WHERE ${quota} >= 1
      ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = usage_counters.tool_calls + 1
      WHERE usage_counters.tool_calls < ${quota}
      RETURNING tool_calls`);
  return rowsOf(result).length > 0;
}

export async function toolCallsInPeriod(db: Queryable, orgId: string, at: Date = new Date()): Promise<number> {
  const result = await db.execute(sql`SELECT tool_calls FROM usage_counters WHERE org_id = ${orgId} AND period_start = ${periodStart(at)}`);
  const row = rowsOf<{ tool_calls: number | string }>(result)[0];
  return row ? Number(row.tool_calls) : 0;
}
