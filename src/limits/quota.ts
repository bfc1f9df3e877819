/** The monthly tool-call quota: a durable count per org and billing period in the store, never overshot. */
import type { Queryable } from '../store/db.ts';
import { periodStart } from './plans.ts';
import { addToolCalls, readToolCalls, runGrant, type GrantRow, type QuotaAsk } from './quota-statements.ts';

export type { QuotaAsk } from './quota-statements.ts';

/** The key of an ask's answer: org id (lower case, as the store prints a uuid) and period. */
export const quotaAskKey = (orgId: string, period: string) => `${orgId.toLowerCase()}|${period}`;

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
 * Grants each ask min(calls, quota - used) calls, atomically, in one statement (quota-statements.ts grantStatement);
 * returns the grant per quotaAskKey. Asks must name distinct (org, period) pairs, with calls >= 1 and quota >= 1. Throws when the first
 * statement fails (nothing is counted then). An ask missing from the answer was not counted: its row met a
 * concurrent first insert and the statement run again for it failed, or did so GRANT_ATTEMPTS times; the
 * caller fails its calls (the grants of the first statement are committed and stand).
 */
export async function grantToolCalls(db: Queryable, asks: QuotaAsk[]): Promise<Map<string, number>> {
  const granted = new Map<string, number>();
  let open = asks;
  for (let attempt = 1; open.length > 0 && attempt <= GRANT_ATTEMPTS; attempt++) {
    let rows: GrantRow[];
    try {
      rows = await runGrant(db, open);
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
    await addToolCalls(db, orgId, period, 1);
    return true;
  }
  if (quota < 1) return false;
  const granted = (await grantToolCalls(db, [{ orgId, period, calls: 1, quota }])).get(quotaAskKey(orgId, period));
  if (granted === undefined) throw new QuotaCounterError();
  return granted === 1;
}

export async function toolCallsInPeriod(db: Queryable, orgId: string, at: Date = new Date()): Promise<number> {
  return readToolCalls(db, orgId, periodStart(at));
}
