/**
 * Usage counting on the hot path. Plans with a monthly quota count each call atomically in the store before it runs
 * (no overshoot, on any number of instances), the calls of one event-loop turn in one statement (quota-batch.ts).
 * Unlimited plans need no gate, so their calls are summed in memory and written once a second: usage stays visible
 * without a store write per call.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { periodStart } from './plans.ts';
import { QuotaBatcher, type QuotaBatchStats } from './quota-batch.ts';

const FLUSH_INTERVAL_MS = 1000;

export class UsageMeter {
  private pending = new Map<string, number>();
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
    if (quota !== null) return this.quotas.consume(orgId, quota, periodStart(this.now()));
    const key = `${orgId}|${periodStart(this.now())}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.timer ??= setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    return true;
  }

  /** Writes the summed counts of unlimited plans. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const batch = this.pending;
      if (!batch.size) return;
      this.pending = new Map();
      for (const [key, n] of batch) {
        const [orgId, period] = key.split('|') as [string, string];
        await this.db
          .execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, ${n})
            ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = usage_counters.tool_calls + ${n}`)
          .catch(() => this.pending.set(key, (this.pending.get(key) ?? 0) + n));
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
