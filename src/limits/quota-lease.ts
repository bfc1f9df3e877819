/**
 * The monthly quota on the hot path, by lease (issue 42; docs/decisions/0393-quota-by-lease.md). Per (org, period)
 * this instance holds a block of calls taken from the org's counter in one statement and spends it in memory: a call
 * that finds calls left in its block runs at once, with no store round trip. Calls that find none wait for the next
 * statement (one per turn of the event loop for every org, as the group commit before: util/batch.ts), which counts
 * them exactly up to the quota and takes the next block; a block running low is refilled ahead of need.
 *
 * Each statement also settles what was spent from the block (tool_calls, the usage figure, moves up by it) and gives
 * back what an idle holder, a smaller quota or a stop leaves unspent. The store never grants past
 * quota - tool_calls - leased, so blocks of any number of instances never add up past the quota; a block carries an
 * expiry, renewed by each statement of its holder, after which the next statement on that counter takes it back.
 * The block's size follows this instance's rate of calls for the org (about BLOCK_SECONDS of calls; none for rare
 * calls) and the store caps it at an eighth of what is left, none in the last 32 calls, so the end of a quota is
 * granted call by call, exactly.
 */
import type { Queryable } from '../store/db.ts';
import { ItemFailure, MicroBatcher } from '../util/batch.ts';
import { QuotaCounterError, quotaAskKey } from './quota.ts';
import { NO_LEASE, runLease, type LeaseAsk, type LeaseRow } from './quota-statements.ts';

/** The tuning of leases; the defaults are the gateway's, tests shorten the times. */
export interface LeaseTuning {
  /** A block's life in the store without a statement of its holder. */
  ttlMs: number;
  /** A block is about this many seconds of this instance's calls for the org. */
  blockSeconds: number;
  /** The largest block asked for. */
  maxBlock: number;
  /** Below this size no block is asked for: the calls are counted batch by batch (rare calls). */
  minBlock: number;
  /** What is spent from a block is settled (written to the usage figure) at most this long after. */
  settleMs: number;
  /** A block whose org had no call for this long is given back. */
  idleReturnMs: number;
  /** The same near the end of a quota (fewer than ENDGAME calls left to grant), where other instances may be waiting. */
  endgameReturnMs: number;
  /**
   * How long a call refused while other instances hold blocks waits for them to be spent or given back (longer than
   * idleReturnMs: a holder that did not see the end coming gives its block back when idle).
   */
  waitForBlocksMs: number;
}

const DEFAULT_LEASE_TUNING: LeaseTuning = {
  ttlMs: 30_000,
  blockSeconds: 1,
  maxBlock: 1_000,
  minBlock: 8,
  settleMs: 1_000,
  idleReturnMs: 2_000,
  endgameReturnMs: 50,
  waitForBlocksMs: 3_000,
};

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Distinct (org, period) counters per statement at most: a batch past it goes out at once. */
const MAX_ASKS = 500;
/** A block is spent only until this share of its life is left, so its holder stops before the store takes it back. */
const DEADLINE_SHARE = 0.75;
/** Fewer calls than this left to grant: the store grants no more blocks (quota_lease), and blocks out go back fast. */
const ENDGAME = 32;
/** A call waiting for other instances' blocks asks again after this long. */
const RETRY_MS = 10;
/** The answer to a waiting call that should ask again (other instances hold blocks). */
const RETRY = 'retry';

/** One call waiting for a statement: its lease, and since when it waits (local clock). */
interface WaitingCall {
  lease: Lease;
  since: number;
}

/** This instance's block and call rate for one (org, period). */
interface Lease {
  key: string;
  orgId: string;
  period: string;
  /** The store's id of the current block; NO_LEASE while none was asked for. */
  id: string;
  /** Calls left to spend here. */
  balance: number;
  /** Calls spent from block `id`, cumulative; `acked` of them the store has settled. */
  spent: number;
  acked: number;
  /** `spent` as sent by the statement out, settled once it answers. */
  sentSpent: number | null;
  /** The quota the block was granted under: a call under a smaller quota does not spend it. */
  quota: number;
  /** The smallest quota of the calls waiting for the next statement, and the quota of the latest call. */
  askQuota: number;
  lastQuota: number;
  /** Local clock (ms): the block is not spent after it. */
  deadline: number;
  /** Give the block back in the next statement. */
  release: boolean;
  /** Refill: a statement is wanted for this lease even with no call waiting. */
  wanted: boolean;
  /** Calls per second (exponential average over statements) and the calls since the last statement. */
  rate: number;
  windowCalls: number;
  windowStart: number;
  lastCall: number;
  lastStatement: number;
  /** Size of the last block granted, for the refill mark. */
  lastBlock: number;
  /** The last answer left fewer than ENDGAME calls to grant: the block goes back after endgameReturnMs idle. */
  endgame: boolean;
  endgameTimer: ReturnType<typeof setTimeout> | null;
}

/** Calls left in a block at which the next one is asked for: a quarter of the last block (it lasts the round trip). */
const refillMark = (lease: Lease) => Math.max(1, lease.lastBlock >> 2);

/** What the leases did since start (tests, bench): statements sent, calls counted, calls of them served from a block. */
export interface QuotaStats {
  batches: number;
  calls: number;
  fromBlock: number;
}

export class QuotaLeases {
  private readonly counts: QuotaStats = { batches: 0, calls: 0, fromBlock: 0 };
  private readonly leases = new Map<string, Lease>();
  /** The leases with calls in the batch being filled. */
  private waiting = new Set<Lease>();
  private readonly batcher: MicroBatcher<WaitingCall, string | false>;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closing = false;
  private readonly tuning: LeaseTuning;

  constructor(
    private readonly db: Queryable,
    tuning: Partial<LeaseTuning> = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.tuning = { ...DEFAULT_LEASE_TUNING, ...tuning };
    this.batcher = new MicroBatcher({
      send: (calls) => this.run(calls),
      maxInFlight: 1,
      moreWork: () => this.someWanted(),
    });
  }

  /**
   * Counts one call of `orgId` in `period` (periodStart) against `quota`: from this instance's block when it has
   * calls left, else by the next statement. Resolves with the unit's block id (NO_LEASE: counted by a statement), or
   * false when the quota is used up.
   */
  consume(orgId: string, quota: number, period: string): Promise<string | false> {
    if (quota < 1) return Promise.resolve(false);
    const now = this.clock();
    const lease = this.leaseOf(orgId, period, now);
    lease.windowCalls += 1;
    lease.lastCall = now;
    lease.lastQuota = quota;
    this.counts.calls += 1;
    return this.take(lease, quota, now);
  }

  /** One call: from the block when it can, else by the next statement (again, while other instances' blocks may come back). */
  private take(lease: Lease, quota: number, since: number): Promise<string | false> {
    const now = this.clock();
    if (lease.balance > 0 && !lease.release && quota >= lease.quota && now < lease.deadline) {
      lease.balance -= 1;
      lease.spent += 1;
      this.counts.fromBlock += 1;
      if (lease.balance <= refillMark(lease)) this.want(lease);
      if (lease.endgame) this.armEndgame(lease);
      return Promise.resolve(lease.id);
    }
    // A smaller quota than the block's (a downgrade): the block goes back with this statement.
    if (lease.balance > 0 && quota < lease.quota) lease.release = true;
    lease.askQuota = Math.min(lease.askQuota, quota);
    const unit = this.batcher.add({ lease, since });
    this.waiting.add(lease);
    if (this.waiting.size >= MAX_ASKS) this.batcher.flush();
    // A call asking again takes the lease as the map holds it then (an idle one may have been forgotten meanwhile).
    return unit.then((answer) =>
      answer === RETRY ? pause(RETRY_MS).then(() => this.take(this.leaseOf(lease.orgId, lease.period, this.clock()), quota, since)) : answer,
    );
  }

  /** Gives back a unit spent from a block whose spending is not settled yet; false when it must go to the store. */
  refund(orgId: string, period: string, leaseId: string): boolean {
    const lease = this.leases.get(quotaAskKey(orgId, period));
    if (!lease || leaseId === NO_LEASE || lease.id !== leaseId) return false;
    if (lease.spent <= Math.max(lease.acked, lease.sentSpent ?? 0)) return false;
    lease.spent -= 1;
    lease.balance += 1;
    return true;
  }

  stats(): QuotaStats {
    return { ...this.counts };
  }

  /** Settles what was spent from every block (the usage figure is then exact for this instance's calls). */
  async settle(): Promise<void> {
    for (const lease of this.leases.values()) if (lease.spent > lease.acked) lease.wanted = true;
    await this.batcher.drain();
  }

  /** Waits until every call so far is answered (tests). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /** A stop: settles and gives back every block, then answers nothing more from memory. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const lease of this.leases.values()) {
      if (lease.endgameTimer) clearTimeout(lease.endgameTimer);
      lease.endgameTimer = null;
      if (lease.id === NO_LEASE) continue;
      lease.release = true;
      lease.wanted = true;
    }
    await this.batcher.drain();
  }

  private leaseOf(orgId: string, period: string, now: number): Lease {
    const key = quotaAskKey(orgId, period);
    let lease = this.leases.get(key);
    if (!lease) {
      lease = {
        key,
        orgId,
        period,
        id: NO_LEASE,
        balance: 0,
        spent: 0,
        acked: 0,
        sentSpent: null,
        quota: Number.POSITIVE_INFINITY,
        askQuota: Number.POSITIVE_INFINITY,
        lastQuota: 0,
        deadline: 0,
        release: false,
        wanted: false,
        rate: 0,
        windowCalls: 0,
        windowStart: now,
        lastCall: now,
        lastStatement: now,
        lastBlock: 0,
        endgame: false,
        endgameTimer: null,
      };
      this.leases.set(key, lease);
      this.startTimer();
    }
    return lease;
  }

  private want(lease: Lease): void {
    if (lease.wanted) return;
    lease.wanted = true;
    this.batcher.schedule();
  }

  private someWanted(): boolean {
    for (const lease of this.leases.values()) if (lease.wanted && lease.sentSpent === null) return true;
    return false;
  }

  /**
   * The block to ask for: about blockSeconds of the calls seen since the last statement (averaged; the first window
   * counts as a second, so one call is no rate), none when rare or while the block in hand is above its refill mark.
   */
  private blockFor(lease: Lease, now: number): number {
    const elapsed = Math.max(now - lease.windowStart, lease.rate === 0 ? 1000 : 250);
    const rate = (lease.windowCalls * 1000) / elapsed;
    lease.rate = lease.rate === 0 ? rate : (lease.rate + rate) / 2;
    lease.windowCalls = 0;
    lease.windowStart = now;
    if (this.closing || lease.release || lease.balance > refillMark(lease)) return 0;
    const block = Math.min(this.tuning.maxBlock, Math.round(lease.rate * this.tuning.blockSeconds));
    return block >= this.tuning.minBlock ? block : 0;
  }

  /** The ask of one lease for the statement being cut. */
  private askOf(lease: Lease, need: number, now: number): LeaseAsk {
    const extra = this.blockFor(lease, now);
    if (extra > 0 && lease.id === NO_LEASE) lease.id = crypto.randomUUID();
    const quota = Math.min(lease.askQuota, lease.lastQuota || lease.askQuota);
    lease.askQuota = Number.POSITIVE_INFINITY;
    lease.sentSpent = lease.spent;
    return {
      orgId: lease.orgId,
      period: lease.period,
      leaseId: lease.id,
      spent: lease.spent,
      acked: lease.acked,
      need,
      extra,
      release: lease.release,
      quota,
    };
  }

  /** One statement for the waiting calls and every lease that wants one; answers each call with its block id or false. */
  private async run(calls: WaitingCall[]): Promise<ArrayLike<string | false | ItemFailure>> {
    const now = this.clock();
    this.waiting = new Set();
    const need = new Map<Lease, number>();
    for (const { lease } of calls) need.set(lease, (need.get(lease) ?? 0) + 1);
    for (const lease of this.leases.values()) if (lease.wanted && lease.sentSpent === null && !need.has(lease)) need.set(lease, 0);
    const sent = [...need].map(([lease, n]) => ({ lease, ask: this.askOf(lease, n, now) }));
    for (const { lease } of sent) lease.wanted = false;
    const answers: Array<string | false | ItemFailure> = new Array(calls.length);
    if (sent.length === 0) return answers;
    this.counts.batches += 1;
    let rows: Awaited<ReturnType<typeof runLease>>;
    try {
      rows = await runLease(
        this.db,
        sent.map((s) => s.ask),
        this.tuning.ttlMs,
      );
    } catch {
      // Nothing was counted: the waiting calls fail; blocks keep serving until their deadline, settled later.
      for (const { lease } of sent) lease.sentSpent = null;
      return answers.fill(new ItemFailure(new QuotaCounterError()));
    }
    const byKey = new Map(rows.map((r) => [quotaAskKey(r.org_id, r.period), r]));
    const left = new Map<Lease, number>();
    const othersHold = new Set<Lease>();
    for (const { lease, ask } of sent) {
      const row = byKey.get(lease.key);
      left.set(lease, this.answered(lease, ask, row, now));
      if (row && Number(row.others) > 0) othersHold.add(lease);
    }
    for (let i = 0; i < calls.length; i++) {
      const { lease, since } = calls[i]!;
      const n = left.get(lease) ?? -1;
      if (n < 0) answers[i] = new ItemFailure(new QuotaCounterError());
      else if (n > 0) {
        answers[i] = NO_LEASE;
        left.set(lease, n - 1);
      } else if (othersHold.has(lease) && now - since < this.tuning.waitForBlocksMs) answers[i] = RETRY;
      else answers[i] = false;
    }
    return answers;
  }

  /** Takes a lease's answer in: its block and settled count; returns the calls granted to its waiting calls (-1: none). */
  private answered(lease: Lease, ask: LeaseAsk, row: LeaseRow | undefined, sentAt: number): number {
    lease.sentSpent = null;
    lease.lastStatement = sentAt;
    if (!row) return -1;
    lease.acked = ask.spent;
    lease.endgame = Number(row.remaining) < ENDGAME;
    const spentSince = lease.spent - ask.spent;
    if (ask.release) {
      // The block is gone from the store: a fresh one next time (spending stopped while the release was out).
      lease.release = false;
      lease.id = NO_LEASE;
      lease.spent = lease.acked = 0;
      lease.balance = 0;
      lease.quota = Number.POSITIVE_INFINITY;
    } else if (ask.leaseId !== NO_LEASE) {
      lease.balance = Math.max(Number(row.block) - spentSince, 0);
      if (Number(row.extra) > 0) lease.lastBlock = Number(row.extra);
      lease.quota = ask.quota;
      lease.deadline = sentAt + this.tuning.ttlMs * DEADLINE_SHARE;
      if (lease.endgame && lease.balance > 0) this.armEndgame(lease);
    }
    return Number(row.granted);
  }

  /** Near the end of a quota, a block not spent for endgameReturnMs goes back: other instances may be waiting for it. */
  private armEndgame(lease: Lease): void {
    if (lease.endgameTimer) return;
    lease.endgameTimer = setTimeout(() => {
      lease.endgameTimer = null;
      if (lease.balance === 0 || lease.release || lease.id === NO_LEASE) return;
      if (this.clock() - lease.lastCall >= this.tuning.endgameReturnMs) {
        lease.release = true;
        this.want(lease);
      } else this.armEndgame(lease);
    }, this.tuning.endgameReturnMs);
    lease.endgameTimer.unref?.();
  }

  private startTimer(): void {
    if (this.timer || this.closing) return;
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.min(this.tuning.settleMs, this.tuning.idleReturnMs) / 4));
    this.timer.unref?.();
  }

  /** Settles spending older than settleMs, gives back idle blocks, renews blocks past half their life, forgets idle leases. */
  private tick(): void {
    const now = this.clock();
    for (const lease of this.leases.values()) {
      if (lease.sentSpent !== null) continue;
      const idle = now - lease.lastCall >= this.tuning.idleReturnMs;
      // An idle holder gives its block back, spent or not: the store forgets it (no empty block rows left behind).
      if (lease.id !== NO_LEASE && idle) lease.release = true;
      const stale = now - lease.lastStatement >= this.tuning.settleMs;
      if ((lease.spent > lease.acked && stale) || lease.release || (lease.balance > 0 && now >= lease.deadline - (this.tuning.ttlMs * DEADLINE_SHARE) / 2)) {
        this.want(lease);
      } else if (idle && lease.id === NO_LEASE && lease.spent === 0) this.leases.delete(lease.key);
    }
    if (this.leases.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
