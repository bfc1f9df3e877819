/**
 * The store server's connector connections, shared by the live instances of one PostgreSQL store (decision 0409,
 * amending 0323). Each instance beats in the store every few seconds (gateway_instance_beat, migration 29): the beat
 * counts the live instances, grants this one its share of max_connections minus the store's reserve (never more than
 * what the other instances' claims leave) and publishes what this instance may hold until its next beat. The budget's
 * cap on the store's server follows each beat; an instance that cannot beat for two intervals takes no new connection
 * there. A clean stop deletes the row, so the others get its share at their next beat.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../store/db.ts';
import { connectionBudget } from './budget.ts';

/** The default interval of beats; an instance not seen for STALE_BEATS of them is gone. */
const SHARE_BEAT_MS = 5_000;
const STALE_BEATS = 3;
/** Below its fair share (another instance still claims it), an instance beats this many times as often. */
const CATCH_UP = 5;

export interface StoreShareOptions {
  db: Db;
  /** The store's server (budget.ts serverKey). */
  server: string;
  /** max_connections minus the store's reserve: what all instances' connector connections to it stay within. */
  capacity: number;
  beatMs?: number;
  /** Told once when beats start failing and once when they work again. */
  onTrouble?: (message: string) => void;
}

export interface StoreShare {
  /** This instance's id in gateway_instances. */
  readonly id: string;
  /** Live instances and this one's cap at the last beat. */
  state(): { live: number; cap: number };
  /** Stops beating and deletes this instance's row (call once its connector pools are closed). */
  stop(): Promise<void>;
}

/** One instance's beats: its id, the last answer, and the timers of the next beat and of the watchdog. */
class ShareBeats implements StoreShare {
  readonly id = randomUUID();
  private live = 1;
  private cap = 0;
  private failing = false;
  private stopped = false;
  private next: ReturnType<typeof setTimeout> | null = null;
  private watchdog: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> = Promise.resolve();
  private readonly beatMs: number;

  constructor(private readonly options: StoreShareOptions) {
    this.beatMs = options.beatMs ?? SHARE_BEAT_MS;
  }

  state(): { live: number; cap: number } {
    return { live: this.live, cap: this.cap };
  }

  /** One beat; the watchdog is re-armed from the moment the beat was sent. */
  async beat(): Promise<void> {
    const { db, server, capacity } = this.options;
    const sentAt = performance.now();
    const held = connectionBudget.usage(server);
    const rows = rowsOf<{ r_live: number; r_cap: number }>(
      await db.execute(
        sql`SELECT r_live, r_cap FROM gateway_instance_beat(${this.id}::uuid, ${capacity}::int, ${held}::int, ${this.beatMs * STALE_BEATS}::bigint)`,
      ),
    );
    this.live = Number(rows[0]!.r_live);
    this.cap = Number(rows[0]!.r_cap);
    if (this.stopped) return;
    connectionBudget.capServer(server, this.cap, this.id);
    this.arm(sentAt);
  }

  /**
   * No answered beat for two intervals (the store unreachable, or its pool too busy): the others drop this instance
   * after three, so it takes no new connection to the store's server from now on and its idle pools there close.
   */
  private arm(sentAt: number): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = setTimeout(
      () => {
        if (!this.stopped) connectionBudget.capServer(this.options.server, 0, this.id);
      },
      Math.max(0, sentAt + 2 * this.beatMs - performance.now()),
    );
    this.watchdog.unref?.();
  }

  /** The next beat: sooner while below the fair share (another instance still claims part of it). */
  schedule(): void {
    if (this.stopped) return;
    const fair = Math.floor(Math.max(0, this.options.capacity) / Math.max(1, this.live));
    this.next = setTimeout(
      () => {
        this.running = this.beat().then(
          () => {
            if (this.failing) this.options.onTrouble?.('connection budget: the store answers the instance beat again');
            this.failing = false;
          },
          () => {
            if (!this.failing) this.options.onTrouble?.('connection budget: the instance beat failed; retrying');
            this.failing = true;
          },
        );
        void this.running.then(() => this.schedule());
      },
      this.cap < fair ? Math.max(1, Math.round(this.beatMs / CATCH_UP)) : this.beatMs,
    );
    // A beat must not keep the process alive.
    this.next.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.next) clearTimeout(this.next);
    if (this.watchdog) clearTimeout(this.watchdog);
    await this.running.catch(() => undefined);
    connectionBudget.dropCap(this.options.server, this.id);
    await this.options.db.execute(sql`DELETE FROM gateway_instances WHERE id = ${this.id}::uuid`).catch(() => undefined);
  }
}

/** Registers this instance and takes its share at once (the first beat is awaited; none until then), then beats until stopped. */
export async function startStoreShare(options: StoreShareOptions): Promise<StoreShare> {
  const share = new ShareBeats(options);
  connectionBudget.capServer(options.server, 0, share.id);
  try {
    await share.beat();
  } catch (err) {
    connectionBudget.dropCap(options.server, share.id);
    throw err;
  }
  share.schedule();
  return share;
}
