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
import { ItemFailure, MicroBatcher } from '../util/batch.ts';
import { grantToolCalls, QuotaCounterError, quotaAskKey, type QuotaAsk } from './quota.ts';

/**
 * Batches out at once; consumptions requested meanwhile wait for the next batch (that is the group commit). A call
 * waits at most for the batch ahead of it plus its own. Measured with bench/run.ts --plan=growth: docs/decisions/0129-quota-group-commit.md.
 */
const MAX_IN_FLIGHT = 1;
/** Distinct (org, period) counters per statement at most: a batch past it goes out at once. */
const MAX_ASKS = 500;

/** A counter of the batch being filled: what it asks for, then how many of its calls may still run (-1: not counted). */
interface Counter {
  key: string;
  ask: QuotaAsk;
  left: number;
}

/** What the batcher did since it started (tests, and to see the batch size): statements sent, calls they counted. */
export interface QuotaBatchStats {
  batches: number;
  calls: number;
}

export class QuotaBatcher {
  private readonly counts: QuotaBatchStats = { batches: 0, calls: 0 };
  /** Each call is its counter in the batch (the first `left` calls of a counter, in arrival order, may run). */
  private readonly batcher: MicroBatcher<Counter, boolean>;
  /** The counters of the batch being filled, taken by `run` when the batch is cut. */
  private open = new Map<string, Counter>();

  constructor(private readonly db: Queryable) {
    this.batcher = new MicroBatcher({ send: (calls) => this.run(calls), maxInFlight: MAX_IN_FLIGHT });
  }

  /** Counts one call of `orgId` in `period` (periodStart) against `quota`; false when the quota is used up. */
  consume(orgId: string, quota: number, period: string): Promise<boolean> {
    if (quota < 1) return Promise.resolve(false);
    const key = quotaAskKey(orgId, period);
    let counter = this.open.get(key);
    if (!counter) {
      counter = { key, ask: { orgId, period, calls: 0, quota }, left: 0 };
      this.open.set(key, counter);
    }
    counter.ask.calls += 1;
    // A plan change between two calls of one batch: the smaller quota applies to the batch.
    counter.ask.quota = Math.min(counter.ask.quota, quota);
    const allowed = this.batcher.add(counter);
    if (this.open.size >= MAX_ASKS) this.batcher.flush();
    return allowed;
  }

  stats(): QuotaBatchStats {
    return { ...this.counts };
  }

  /** Waits until every consumption requested so far is answered (shutdown, tests). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /** One statement for the batch (called when it is cut: the open counters are exactly its calls'). */
  private async run(calls: Counter[]): Promise<ArrayLike<boolean | ItemFailure>> {
    const counters = this.open;
    this.open = new Map();
    this.counts.batches += 1;
    this.counts.calls += calls.length;
    const granted = await grantToolCalls(
      this.db,
      Array.from(counters.values(), (c) => c.ask),
    );
    for (const counter of counters.values()) counter.left = granted.get(counter.key) ?? -1;
    const answers: Array<boolean | ItemFailure> = new Array(calls.length);
    for (let i = 0; i < calls.length; i++) {
      const counter = calls[i]!;
      // -1: the counter is missing from the answer (not counted): its calls fail.
      if (counter.left < 0) answers[i] = new ItemFailure(new QuotaCounterError());
      else if (counter.left === 0) answers[i] = false;
      else {
        answers[i] = true;
        counter.left -= 1;
      }
    }
    return answers;
  }
}
