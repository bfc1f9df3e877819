/**
 * Per-second limits: a fixed one-second window per key (an org's MCP calls, a credential's REST calls), counted in
 * Redis so every instance shares it, with a per-instance fallback when Redis is unreachable (never a 5xx because the
 * limiter is down).
 */
import { MicroBatcher } from '../util/batch.ts';
import type { LimitsRedis } from './redis.ts';

export interface BurstDecision {
  allowed: boolean;
  /** Whole seconds to wait before retrying (at least 1). */
  retryAfterSeconds: number;
}

export interface BurstLimiter {
  /** Counts one call against `key`'s window (an org id; `rest:<credential>` for REST) with `limitPerSecond`. */
  take(key: string, limitPerSecond: number): Promise<BurstDecision>;
  close(): Promise<void>;
  /** shared: Redis answers; fallback: Redis configured but not ready (per-instance windows); local: no Redis. */
  mode?(): 'shared' | 'fallback' | 'local';
}

/** The same fixed-window arithmetic, in process: used alone without Redis, and as the fallback with it. */
export class LocalWindow {
  private second = 0;
  private counts = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  take(key: string, limit: number): BurstDecision {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return { allowed: count <= limit, retryAfterSeconds: 1 };
  }
}

export function createLocalLimiter(now?: () => number): BurstLimiter {
  const window = new LocalWindow(now);
  return { take: async (key, limit) => window.take(key, limit), close: async () => {}, mode: () => 'local' };
}

/** Adds to a window and gives it a lifetime on first use: one command and one reply per key per turn. */
const WINDOW_SCRIPT = `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], 2) end
return n`;

export interface RedisLimiterOptions {
  /** The limits' view of the gateway's one Redis connection (limits/redis.ts); closed by the gateway, not the limiter. */
  redis: LimitsRedis;
  now?: () => number;
}

/** One call waiting for its window: the window's Redis key, the caller's key and limit (for the fallback). */
interface WindowCall {
  windowKey: string;
  key: string;
  limit: number;
}

export function createRedisLimiter(options: RedisLimiterOptions): BurstLimiter {
  const fallback = new LocalWindow(options.now);
  const now = options.now ?? Date.now;
  const { redis } = options;

  /** The calls of one window: one INCRBY for all of them; the window's new total tells which fit. */
  async function settle(calls: WindowCall[], at: number[], answers: BurstDecision[]): Promise<void> {
    try {
      const total = Number(await redis.eval(WINDOW_SCRIPT, [calls[at[0]!]!.windowKey], [String(at.length)]));
      const before = total - at.length;
      for (const [n, i] of at.entries()) answers[i] = { allowed: before + n + 1 <= calls[i]!.limit, retryAfterSeconds: 1 };
    } catch {
      for (const i of at) answers[i] = fallback.take(calls[i]!.key, calls[i]!.limit);
    }
  }

  // Calls for the same key and second that arrive in one turn of the event loop share one INCRBY: the window's
  // new total tells which of them fit (the first `limit - before` do), so the count stays exact across instances
  // while Redis sees one command per key per turn instead of one per call. Every turn's batch goes out at once.
  const batcher = new MicroBatcher<WindowCall, BurstDecision>({
    maxInFlight: Number.POSITIVE_INFINITY,
    async send(calls) {
      const windows = new Map<string, number[]>();
      for (const [i, call] of calls.entries()) {
        const at = windows.get(call.windowKey);
        if (at) at.push(i);
        else windows.set(call.windowKey, [i]);
      }
      const answers: BurstDecision[] = new Array(calls.length);
      await Promise.all(Array.from(windows.values(), (at) => settle(calls, at, answers)));
      return answers;
    },
  });

  return {
    mode: () => (redis.ready() ? 'shared' : 'fallback'),
    take(key, limit) {
      if (!redis.ready()) return Promise.resolve(fallback.take(key, limit));
      return batcher.add({ windowKey: `toolgate:burst:${key}:${Math.floor(now() / 1000)}`, key, limit });
    },
    close: () => batcher.drain(),
  };
}
