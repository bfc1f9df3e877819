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
export const SHARE_BEAT_MS = 5_000;
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

/** Registers this instance, takes its share at once (the first beat is awaited), then beats until stopped. */
export async function startStoreShare(options: StoreShareOptions): Promise<StoreShare> {
  const { db, server, capacity } = options;
  const beatMs = options.beatMs ?? SHARE_BEAT_MS;
  const id = randomUUID();
  let live = 1;
  let cap = 0;
  let lastOk = performance.now();
  let failing = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<void> = Promise.resolve();

  const beat = async (): Promise<void> => {
    const held = connectionBudget.usage(server);
    const rows = rowsOf<{ r_live: number; r_cap: number }>(
      await db.execute(
        sql`SELECT r_live, r_cap FROM gateway_instance_beat(${id}::uuid, ${capacity}::int, ${held}::int, ${beatMs * STALE_BEATS}::bigint)`,
      ),
    );
    live = Number(rows[0]!.r_live);
    cap = Number(rows[0]!.r_cap);
    lastOk = performance.now();
    if (!stopped) connectionBudget.capServer(server, cap);
  };

  const schedule = (): void => {
    if (stopped) return;
    const fair = Math.floor(Math.max(0, capacity) / Math.max(1, live));
    timer = setTimeout(
      () => {
        running = beat().then(
          () => {
            if (failing) options.onTrouble?.('connection budget: the store answers the instance beat again');
            failing = false;
          },
          () => {
            // Unseen by the others for long, this instance may have been dropped from the count: it takes no new
            // connection to the store's server until a beat works again (its idle pools there close).
            if (!stopped && performance.now() - lastOk > 2 * beatMs) connectionBudget.capServer(server, 0);
            if (!failing) options.onTrouble?.('connection budget: the instance beat failed; retrying');
            failing = true;
          },
        );
        void running.then(schedule);
      },
      cap < fair ? Math.max(1, Math.round(beatMs / CATCH_UP)) : beatMs,
    );
    // A beat must not keep the process alive.
    timer.unref?.();
  };

  connectionBudget.capServer(server, 0);
  await beat();
  schedule();
  return {
    id,
    state: () => ({ live, cap }),
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running.catch(() => undefined);
      await db.execute(sql`DELETE FROM gateway_instances WHERE id = ${id}::uuid`).catch(() => undefined);
    },
  };
}
