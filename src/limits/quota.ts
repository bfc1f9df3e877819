/** The monthly tool-call quota: a durable count per org and billing period in the store, never overshot. */
import type { Queryable } from '../store/db.ts';
import { periodStart } from './plans.ts';
import { addToolCalls, NO_LEASE, readToolCalls, runLease, type QuotaAsk } from './quota-statements.ts';

export type { QuotaAsk } from './quota-statements.ts';

/** The key of an ask's answer: org id (lower case, as the store prints a uuid) and period. */
export const quotaAskKey = (orgId: string, period: string) => `${orgId.toLowerCase()}|${period}`;

/** A counter could not be written (the lease statement failed): the calls that asked for it fail, none runs. */
export class QuotaCounterError extends Error {
  constructor() {
    super('the quota counter could not be written');
    this.name = 'QuotaCounterError';
  }
}

/**
 * Grants each ask min(calls, quota - used - leased) calls, atomically, in one statement (the lease statement without
 * blocks: quota-statements.ts runLease); returns the grant per quotaAskKey. Asks must name distinct (org, period)
 * pairs, with calls >= 1 and quota >= 1. Throws when the statement fails (nothing is counted then).
 */
export async function grantToolCalls(db: Queryable, asks: QuotaAsk[]): Promise<Map<string, number>> {
  const rows = await runLease(
    db,
    asks.map((a) => ({ orgId: a.orgId, period: a.period, leaseId: NO_LEASE, spent: 0, acked: 0, need: a.calls, extra: 0, release: false, quota: a.quota })),
    0,
  );
  return new Map(rows.map((row) => [quotaAskKey(row.org_id, row.period), Number(row.granted)]));
}

/**
 * Counts one call if the quota allows it, on its own (the hot path leases blocks: quota-lease.ts). Concurrent calls on
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
