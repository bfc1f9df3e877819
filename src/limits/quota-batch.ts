/**
 * The monthly quota on the hot path, by group commit: the quota consumptions requested during one turn of the event
 * loop (and, while MAX_IN_FLIGHT batches are out, until one comes back) go to the store as ONE statement for every org
 * in the batch (quota.ts grantToolCalls). Each (org, period) asks for its number of calls and is granted
 * min(asked, quota - used) atomically; the first `granted` callers of that org, in arrival order, may run, the others
 * are refused. The statement's row locks serialise it against every other instance's, so the quota is never
 * overshot; a statement that fails grants nothing and fails every call of its batch, as one failing increment failed
 * its call before. Under load the store sees one write and commit per batch instead of one per call.
 */
import type { Queryable } from '../store/db.ts';
import { grantToolCalls, QuotaCounterError, quotaAskKey, type QuotaAsk } from './quota.ts';

/**
 * Batches out at once; consumptions requested meanwhile wait for the next batch (that is the group commit). A call
 * waits at most for the batch ahead of it plus its own. Measured with bench/run.ts --plan=growth: docs/decisions/0129-quota-group-commit.md.
 */
const MAX_IN_FLIGHT = 1;
/** Distinct (org, period) counters per statement at most: a batch past it goes out at once. */
const MAX_ASKS = 500;

interface Waiter {
  resolve: (allowed: boolean) => void;
  reject: (err: unknown) => void;
}

interface PendingAsk {
  ask: QuotaAsk;
  waiters: Waiter[];
}

/** What the batcher did since it started (tests, and to see the batch size): statements sent, calls they counted. */
export interface QuotaBatchStats {
  batches: number;
  calls: number;
}

export class QuotaBatcher {
  private pending = new Map<string, PendingAsk>();
  private scheduled = false;
  private inFlight = new Set<Promise<void>>();
  private readonly counts: QuotaBatchStats = { batches: 0, calls: 0 };

  constructor(private readonly db: Queryable) {}

  /** Counts one call of `orgId` in `period` (periodStart) against `quota`; false when the quota is used up. */
  consume(orgId: string, quota: number, period: string): Promise<boolean> {
    if (quota < 1) return Promise.resolve(false);
    return new Promise<boolean>((resolve, reject) => {
      const key = quotaAskKey(orgId, period);
      let entry = this.pending.get(key);
      if (!entry) {
        entry = { ask: { orgId, period, calls: 0, quota }, waiters: [] };
        this.pending.set(key, entry);
      }
      entry.ask.calls += 1;
      // A plan change between two calls of one batch: the smaller quota applies to the batch.
      entry.ask.quota = Math.min(entry.ask.quota, quota);
      entry.waiters.push({ resolve, reject });
      if (this.pending.size >= MAX_ASKS) this.flush();
      else this.schedule();
    });
  }

  stats(): QuotaBatchStats {
    return { ...this.counts };
  }

  /** Waits until every consumption requested so far is answered (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.pending.size || this.inFlight.size) {
      if (this.inFlight.size) await Promise.all(this.inFlight);
      else this.flush();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight.size >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    // After the I/O of this loop turn: every call that arrived with it joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (!this.pending.size) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    const run = this.run(batch).finally(() => {
      this.inFlight.delete(run);
      if (this.pending.size) this.schedule();
    });
    this.inFlight.add(run);
  }

  private async run(batch: PendingAsk[]): Promise<void> {
    this.counts.batches += 1;
    for (const entry of batch) this.counts.calls += entry.ask.calls;
    let granted: Map<string, number>;
    try {
      granted = await grantToolCalls(
        this.db,
        batch.map((entry) => entry.ask),
      );
    } catch (err) {
      for (const entry of batch) for (const waiter of entry.waiters) waiter.reject(err);
      return;
    }
    for (const { ask, waiters } of batch) {
      const allowed = granted.get(quotaAskKey(ask.orgId, ask.period));
      if (allowed === undefined) for (const waiter of waiters) waiter.reject(new QuotaCounterError());
      else for (const [i, waiter] of waiters.entries()) waiter.resolve(i < allowed);
    }
  }
}
