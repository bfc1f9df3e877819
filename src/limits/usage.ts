/**
 * Usage counting on the hot path. Plans with a monthly quota count each call before it runs, from a block of calls
 * this instance leased from the org's counter, or else by one statement per event-loop turn for every org
 * (quota-lease.ts; no overshoot, on any number of instances).
 * Unlimited plans need no gate, so their calls are summed in memory and written once a second: usage stays visible
 * without a store write per call.
 *
 * A unit is reserved before a call runs and kept once the call reached its connector. A call the driver refused
 * before that (the SQL guard) gives its unit back (`refund`): the counter only ever goes down for a unit it granted,
 * so a refund can never let more calls run than the quota (docs/quota-and-audit-accounting.md).
 */
import type { Db } from '../store/db.ts';
import { periodStart } from './plans.ts';
import { QuotaLeases, type LeaseTuning, type QuotaStats } from './quota-lease.ts';
import { addToolCalls, subtractToolCalls } from './quota-statements.ts';

const FLUSH_INTERVAL_MS = 1000;

/** A unit of quota granted to one call: what `refund` gives back. */
export interface QuotaReservation {
  orgId: string;
  period: string;
  /** The block it was spent from (quota-lease.ts), if any. */
  leaseId?: string;
}

export class UsageMeter {
  private pending = new Map<string, number>();
  /** Units given back, per org and period, not written yet (written by the next turn of the event loop, or `flush`). */
  private refunds = new Map<string, number>();
  private refundScheduled = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly quotas: QuotaLeases;

  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
    leaseTuning: Partial<LeaseTuning> = {},
  ) {
    this.quotas = new QuotaLeases(db, leaseTuning, () => this.now().getTime());
  }

  /** Counts one tool call; false when the quota of the period is used up (the call must not run). */
  async consume(orgId: string, quota: number | null): Promise<boolean> {
    return (await this.reserve(orgId, quota)) !== null;
  }

  /** Counts one tool call and returns its unit (for `refund`); null when the quota of the period is used up. */
  async reserve(orgId: string, quota: number | null): Promise<QuotaReservation | null> {
    const period = periodStart(this.now());
    if (quota !== null) {
      const leaseId = await this.quotas.consume(orgId, quota, period);
      return leaseId === false ? null : { orgId, period, leaseId };
    }
    const key = `${orgId}|${period}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.timer ??= setInterval(() => void this.writeCounts(), FLUSH_INTERVAL_MS);
    return { orgId, period };
  }

  /**
   * Gives back the unit of a call that ran nothing. Taken from the unwritten count of an unlimited plan when there is
   * one, else written with the refunds of the same event-loop turn (one statement per org and period), never below 0.
   */
  refund(reservation: QuotaReservation): void {
    if (reservation.leaseId && this.quotas.refund(reservation.orgId, reservation.period, reservation.leaseId)) return;
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
      void this.writeCounts();
    });
  }

  /**
   * Makes the store's usage figure exact for this instance's calls: settles what was spent from its blocks, then writes
   * the summed counts of unlimited plans and the refunds (billing reads call it before reading the counter).
   */
  async flush(): Promise<void> {
    await this.quotas.settle();
    await this.writeCounts();
  }

  /** Writes the summed counts of unlimited plans and the refunds. */
  private writeCounts(): Promise<void> {
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

  /** Quota statements sent, calls counted, and how many of them were served from a block (tests, bench). */
  quotaStats(): QuotaStats {
    return this.quotas.stats();
  }

  /** A stop: settles and gives back every block of quota (quota-lease.ts), then writes what is left. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.quotas.close();
    await this.writeCounts();
  }
}
