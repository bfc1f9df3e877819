/**
 * Per-second limits: a fixed one-second window per key (an org's MCP calls, a credential's REST calls), counted in
 * Redis so every instance shares it, with a per-instance fallback when Redis is unreachable (never a 5xx because the
 * limiter is down).
 */
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
  /** The limits' shared connection (limits/redis.ts); closed by its owner, not by the limiter. */
  redis: LimitsRedis;
  now?: () => number;
}

export function createRedisLimiter(options: RedisLimiterOptions): BurstLimiter {
  const fallback = new LocalWindow(options.now);
  const now = options.now ?? Date.now;
  const { redis } = options;

  async function incrBy(key: string, by: number): Promise<number> {
    return Number(await redis.eval(WINDOW_SCRIPT, [key], [String(by)]));
  }

  // Calls for the same key and second that arrive in one turn of the event loop share one INCRBY: the window's
  // new total tells which of them fit (the first `limit - before` do), so the count stays exact across instances
  // while Redis sees one command per key per turn instead of one per call.
  interface Waiting {
    key: string;
    limit: number;
    resolve: (decision: BurstDecision) => void;
  }
  let pending = new Map<string, Waiting[]>();
  let scheduled = false;

  async function settle(key: string, waiters: Waiting[]): Promise<void> {
    try {
      const total = await incrBy(key, waiters.length);
      const before = total - waiters.length;
      for (const [i, w] of waiters.entries()) w.resolve({ allowed: before + i + 1 <= w.limit, retryAfterSeconds: 1 });
    } catch {
      for (const w of waiters) w.resolve(fallback.take(w.key, w.limit));
    }
  }

  function flush(): void {
    scheduled = false;
    const batch = pending;
    pending = new Map();
    for (const [key, waiters] of batch) void settle(key, waiters);
  }

  return {
    mode: () => (redis.ready() ? 'shared' : 'fallback'),
    take(key, limit) {
      if (!redis.ready()) return Promise.resolve(fallback.take(key, limit));
      const windowKey = `toolgate:burst:${key}:${Math.floor(now() / 1000)}`;
      return new Promise<BurstDecision>((resolve) => {
        const list = pending.get(windowKey);
        if (list) list.push({ key, limit, resolve });
        else pending.set(windowKey, [{ key, limit, resolve }]);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    close: async () => {},
  };
}
