/**
 * The statements of the quota counters (usage_counters, one row per org and billing period), typed: the monthly
 * quota (quota.ts, quota-batch.ts) and the usage meter of unlimited plans (usage.ts) touch the table only through
 * these. The grant is the hot path's statement and runs prepared (store/db.ts executePrepared).
 */
import { sql } from 'drizzle-orm';
import { arrayParam, executePrepared, rowsOf, type Queryable } from '../store/db.ts';

/** What one org asks of its quota in one billing period: `calls` more calls, against `quota` calls a period. */
export interface QuotaAsk {
  orgId: string;
  /** periodStart() of the period the calls belong to. */
  period: string;
  calls: number;
  quota: number;
}

/**
 * A statement that grants quota to several (org, period) counters at once, each counted exactly once:
 *  - rows that exist are locked first, in key order (two instances' statements lock common rows in the same order, so
 *    they queue instead of deadlocking), and read as they are once locked: the latest committed count, not the
 *    statement's snapshot (READ COMMITTED re-reads a row it had to wait for);
 *  - each locked row below its quota moves to least(count + asked, quota); the grant is the difference. A row at or
 *    above its quota (used up, or a downgrade) is not written: it is answered with a grant of 0, so a flood of
 *    refused calls writes nothing;
 *  - rows that do not exist yet are inserted with least(asked, quota). When another instance inserted the same row
 *    since the snapshot, ON CONFLICT DO NOTHING returns nothing for it and the ask is run again (grantToolCalls).
 * The row locks serialise concurrent statements on a counter, so no number of instances can push it past the quota;
 * the statement is atomic, so a failure grants nothing. The asks go in as arrays (store/db.ts arrayParam), which the
 * planner counts: as one JSON parameter it guessed 100 asks and scanned all of usage_counters (one row per org and
 * month) instead of probing its key once per ask.
 */
export const grantStatement = (asks: QuotaAsk[]) => sql`
  WITH ask AS MATERIALIZED (
    SELECT * FROM unnest(${arrayParam(
      'uuid',
      asks.map((a) => a.orgId),
    )}::uuid[], ${arrayParam(
      'date',
      asks.map((a) => a.period),
    )}::date[],
      ${arrayParam(
        'bigint',
        asks.map((a) => a.calls),
      )}::bigint[], ${arrayParam(
        'bigint',
        asks.map((a) => a.quota),
      )}::bigint[])
      AS r(org_id, period_start, calls, quota)
  ),
  locked AS MATERIALIZED (
    SELECT u.org_id, u.period_start, u.tool_calls AS old
    FROM usage_counters u JOIN ask a ON a.org_id = u.org_id AND a.period_start = u.period_start
    ORDER BY u.org_id, u.period_start
    FOR UPDATE OF u
  ),
  updated AS (
    UPDATE usage_counters u SET tool_calls = least(l.old + a.calls, a.quota)
    FROM locked l JOIN ask a ON a.org_id = l.org_id AND a.period_start = l.period_start
    WHERE u.org_id = l.org_id AND u.period_start = l.period_start AND l.old < a.quota
    RETURNING u.org_id, u.period_start, l.old, u.tool_calls AS new
  ),
  inserted AS (
    INSERT INTO usage_counters (org_id, period_start, tool_calls)
    SELECT a.org_id, a.period_start, least(a.calls, a.quota) FROM ask a
    WHERE NOT EXISTS (SELECT 1 FROM locked l WHERE l.org_id = a.org_id AND l.period_start = a.period_start)
    ORDER BY a.org_id, a.period_start
    ON CONFLICT (org_id, period_start) DO NOTHING
    RETURNING org_id, period_start, 0::bigint AS old, tool_calls AS new
  )
  SELECT org_id::text, to_char(period_start, 'YYYY-MM-DD') AS period, old, new FROM updated
  UNION ALL
  SELECT org_id::text, to_char(period_start, 'YYYY-MM-DD') AS period, old, new FROM inserted
  UNION ALL
  SELECT l.org_id::text, to_char(l.period_start, 'YYYY-MM-DD') AS period, l.old, l.old AS new
  FROM locked l JOIN ask a ON a.org_id = l.org_id AND a.period_start = l.period_start
  WHERE l.old >= a.quota`;

/** One counter's answer to a grant: its count before and after (as the store prints them). */
export interface GrantRow {
  org_id: string;
  period: string;
  old: number | string;
  new: number | string;
}

/** Runs grantStatement, prepared: fixed text (the asks are four array parameters, any count). */
export function runGrant(db: Queryable, asks: QuotaAsk[]): Promise<GrantRow[]> {
  return executePrepared<GrantRow>(db, 'toolgate_quota_grant', grantStatement(asks));
}

/** Adds `calls` to the counter of an org and period, creating it (plans without a quota: nothing to check). */
export async function addToolCalls(db: Queryable, orgId: string, period: string, calls: number): Promise<void> {
  await db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, ${calls})
    ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = usage_counters.tool_calls + ${calls}`);
}

/** Gives `calls` back to the counter of an org and period, never below 0. */
export async function subtractToolCalls(db: Queryable, orgId: string, period: string, calls: number): Promise<void> {
  await db.execute(sql`UPDATE usage_counters SET tool_calls = greatest(tool_calls - ${calls}, 0) WHERE org_id = ${orgId} AND period_start = ${period}`);
}

/** The count of an org and period; 0 when it has no counter yet. */
export async function readToolCalls(db: Queryable, orgId: string, period: string): Promise<number> {
  const result = await db.execute(sql`SELECT tool_calls FROM usage_counters WHERE org_id = ${orgId} AND period_start = ${period}`);
  const row = rowsOf<{ tool_calls: number | string }>(result)[0];
  return row ? Number(row.tool_calls) : 0;
}
