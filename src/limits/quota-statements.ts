/**
 * The statements of the quota counters (usage_counters, one row per org and billing period, and quota_leases), typed:
 * the monthly quota (quota.ts, quota-lease.ts) and the usage meter of unlimited plans (usage.ts) touch the tables only
 * through these. The lease statement is the hot path's and runs prepared (store/db.ts executePrepared).
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

/** The nil uuid: an ask without a block (its calls are counted, nothing is leased). */
export const NO_LEASE = '00000000-0000-0000-0000-000000000000';

/**
 * What one holder asks of one (org, period) counter in a lease statement (decision 0393): settle what it spent from
 * its block, maybe give the rest back, have its waiting calls counted and take the next block.
 */
export interface LeaseAsk {
  orgId: string;
  period: string;
  /** The holder's block (a uuid it chose), NO_LEASE for none. */
  leaseId: string;
  /** Calls spent from this block so far, cumulative: a statement sent twice settles them once. */
  spent: number;
  /** What the store had settled of `spent` by the holder's last answer (used when the block is gone from the store). */
  acked: number;
  /** Calls waiting for this statement: counted now, up to what the quota leaves. */
  need: number;
  /** The block asked for beyond them (granted only when much is left: at most an eighth of it). */
  extra: number;
  /** Give the rest of the block back (a stop, an idle holder, a smaller quota). */
  release: boolean;
  quota: number;
}

/**
 * One counter's answer: calls counted of `need`, the block granted now, the block's unspent calls in the store, the
 * unspent calls of other holders' blocks, and what is left to grant.
 */
export interface LeaseRow {
  org_id: string;
  period: string;
  granted: number | string;
  extra: number | string;
  block: number | string;
  others: number | string;
  remaining: number | string;
}

/**
 * The hot path's one statement (the store function quota_lease of migration 28, whose comment gives its steps): every
 * ask of a batch, for any number of orgs, atomically. Row locks on the counters, taken in key order, serialise it
 * against every other instance's, so tool_calls + leased never passes a quota when anything is granted. The asks go
 * in as arrays (store/db.ts arrayParam), one per field, so the text is fixed and runs prepared.
 */
export function runLease(db: Queryable, asks: LeaseAsk[], ttlMs: number): Promise<LeaseRow[]> {
  const ints = (pick: (a: LeaseAsk) => number) => arrayParam('bigint', asks.map(pick));
  const query = sql`SELECT r_org AS org_id, r_period AS period, r_granted AS granted, r_extra AS extra, r_block AS block,
      r_others AS others, r_left AS remaining
    FROM quota_lease(${arrayParam(
      'uuid',
      asks.map((a) => a.orgId),
    )}::uuid[], ${arrayParam(
      'date',
      asks.map((a) => a.period),
    )}::date[], ${arrayParam(
      'uuid',
      asks.map((a) => a.leaseId),
    )}::uuid[], ${ints((a) => a.spent)}::bigint[], ${ints((a) => a.acked)}::bigint[], ${ints((a) => a.need)}::bigint[],
      ${ints((a) => a.extra)}::bigint[], ${ints((a) => (a.release ? 1 : 0))}::bigint[], ${ints((a) => a.quota)}::bigint[],
      ${ttlMs}::bigint)`;
  return executePrepared<LeaseRow>(db, 'toolgate_quota_lease', query);
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
