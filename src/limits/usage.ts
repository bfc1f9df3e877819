/**
 * Usage counting on the hot path. Plans with a monthly quota count each call atomically in the store before it runs
 * (no overshoot, on any number of instances), the calls of one event-loop turn in one statement (quota-batch.ts).
 * Unlimited plans need no gate, so their calls are summed in memory and written once a second: usage stays visible
 * without a store write per call.
 *
 * A unit is reserved before a call runs and kept once the call reached its connector. A call the driver refused
 * before that (the SQL guard) gives its unit back (`refund`): the counter only ever goes down for a unit it granted,
 * so a refund can never let more calls run than the quota (docs/quota-and-audit-accounting.md).
 */
import type { Db } from '../store/db.ts';
import { periodStart } from './plans.ts';
import { QuotaBatcher, type QuotaBatchStats } from './quota-batch.ts';
import { addToolCalls, subtractToolCalls } from './quota-statements.ts';

const FLUSH_INTERVAL_MS = 1000;

/** A unit of quota granted to one call: what `refund` gives back. */
export interface QuotaReservation {
  orgId: string;
  period: string;
}

export class UsageMeter {
  private pending = new Map<string, number>();
  /** Units given back, per org and period, not written yet (written by the next turn of the event loop, or `flush`). */
  private refunds = new Map<string, number>();
  private refundScheduled = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly quotas: QuotaBatcher;

  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.quotas = new QuotaBatcher(db);
  }

  /** Counts one tool call; false when the quota of the period is used up (the call must not run). */
  async consume(orgId: string, quota: number | null): Promise<boolean> {
    return (await this.reserve(orgId, quota)) !== null;
  }

  /** Counts one tool call and returns its unit (for `refund`); null when the quota of the period is used up. */
  async reserve(orgId: string, quota: number | null): Promise<QuotaReservation | null> {
    const period = periodStart(this.now());
    if (quota !== null) return (await this.quotas.consume(orgId, quota, period)) ? { orgId, period } : null;
    const key = `${orgId}|${period}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.timer ??= setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    return { orgId, period };
  }

  /**
   * Gives back the unit of a call that ran nothing. Taken from the unwritten count of an unlimited plan when there is
   * one, else written with the refunds of the same event-loop turn (one statement per org and period), never below 0.
   */
  refund(reservation: QuotaReservation): void {
    const key = `${reservation.orgId}|${reservation.period}`;
    const unwritten = this.pending.get(key) ?? 0;
    if (unwritten > 0) {
      if (unwritten === 1) this.pending.delete(key);
      else this.pending.set(key, unwritten - 1);
      return;
    }
    this.refunds.set(key, (this.refunds.get(key) ?? 0) + 1);
    if (this.refundScheduled) return;
    this.refundScheduled = true;
    setImmediate(() => {
      this.refundScheduled = false;
      void this.flush();
    });
  }

  /** Writes the summed counts of unlimited plans and the refunds. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const refunds = this.refunds;
      this.refunds = new Map();
      for (const [key, n] of refunds) {
        const [orgId, period] = key.split('|') as [string, string];
        await subtractToolCalls(this.db, orgId, period, n).catch(() => this.refunds.set(key, (this.refunds.get(key) ?? 0) + n));
      }
      const batch = this.pending;
      if (!batch.size) return;
      this.pending = new Map();
      for (const [key, n] of batch) {
        const [orgId, period] = key.split('|') as [string, string];
        await addToolCalls(this.db, orgId, period, n).catch(() => this.pending.set(key, (this.pending.get(key) ?? 0) + n));
      }
    });
    return this.flushing;
  }

  /** Statements the quota batcher sent and the calls they counted (tests; batch size = calls / batches). */
  quotaStats(): QuotaBatchStats {
    return this.quotas.stats();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.quotas.drain();
    await this.flush();
  }
}
