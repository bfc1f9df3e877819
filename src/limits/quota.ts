/** The monthly tool-call quota: a durable count per org and billing period in the store, never overshot. */
import { sql } from 'drizzle-orm';
import { arrayParam, executePrepared, rowsOf, type Queryable } from '../store/db.ts';
import { periodStart } from './plans.ts';

/** What one org asks of its quota in one billing period: `calls` more calls, against `quota` calls a period. */
export interface QuotaAsk {
  orgId: string;
  /** periodStart() of the period the calls belong to. */
  period: string;
  calls: number;
  quota: number;
}

/** The key of an ask's answer: org id (lower case, as the store prints a uuid) and period. */
export const quotaAskKey = (orgId: string, period: string) => `${orgId.toLowerCase()}|${period}`;

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

/** A counter could not be written (grantToolCalls): the calls that asked for it fail, none runs. */
export class QuotaCounterError extends Error {
  constructor() {
    super('the quota counter could not be written');
    this.name = 'QuotaCounterError';
  }
}

/** Runs of the statement for asks that met a concurrent first insert of their row; more means something is wrong. */
const GRANT_ATTEMPTS = 3;

/**
 * Grants each ask min(calls, quota - used) calls, atomically, in one statement (see grantStatement); returns the grant
 * per quotaAskKey. Asks must name distinct (org, period) pairs, with calls >= 1 and quota >= 1. Throws when the first
 * statement fails (nothing is counted then). An ask missing from the answer was not counted: its row met a
 * concurrent first insert and the statement run again for it failed, or did so GRANT_ATTEMPTS times; the
 * caller fails its calls (the grants of the first statement are committed and stand).
 */
export async function grantToolCalls(db: Queryable, asks: QuotaAsk[]): Promise<Map<string, number>> {
  const granted = new Map<string, number>();
  let open = asks;
  for (let attempt = 1; open.length > 0 && attempt <= GRANT_ATTEMPTS; attempt++) {
    let rows: Array<{ org_id: string; period: string; old: number | string; new: number | string }>;
    try {
      // Fixed text (the asks are four array parameters, any count), so it runs prepared on a PostgreSQL store (store/db.ts).
      rows = await executePrepared(db, grantStatement(open));
    } catch (err) {
      if (attempt === 1) throw err;
      break;
    }
    for (const row of rows) granted.set(quotaAskKey(row.org_id, row.period), Number(row.new) - Number(row.old));
    open = open.filter((a) => !granted.has(quotaAskKey(a.orgId, a.period)));
  }
  return granted;
}

/**
 * Counts one call if the quota allows it, on its own (the hot path batches calls: quota-batch.ts). Concurrent calls on
 * any number of instances can never push the count past the quota. Returns false when the quota is used up (nothing
 * is counted then).
 */
export async function consumeToolCall(db: Queryable, orgId: string, quota: number | null, at: Date = new Date()): Promise<boolean> {
  const period = periodStart(at);
  if (quota === null) {
    await db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, 1)
      ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = usage_counters.tool_calls + 1`);
    return true;
  }
  if (quota < 1) return false;
  const granted = (await grantToolCalls(db, [{ orgId, period, calls: 1, quota }])).get(quotaAskKey(orgId, period));
  if (granted === undefined) throw new QuotaCounterError();
  return granted === 1;
}

export async function toolCallsInPeriod(db: Queryable, orgId: string, at: Date = new Date()): Promise<number> {
  const result = await db.execute(sql`SELECT tool_calls FROM usage_counters WHERE org_id = ${orgId} AND period_start = ${periodStart(at)}`);
  const row = rowsOf<{ tool_calls: number | string }>(result)[0];
  return row ? Number(row.tool_calls) : 0;
}
