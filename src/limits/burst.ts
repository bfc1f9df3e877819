/**
 * Per-second burst limits: a fixed one-second window per org, counted in Redis so every instance shares it,
 * with a per-instance fallback when Redis is unreachable (never a 5xx because the limiter is down).
 */
import type { createClient } from 'redis';
import type { Logger } from '../util/log.ts';

export interface BurstDecision {
  allowed: boolean;
  /** Whole seconds to wait before retrying (at least 1). */
  retryAfterSeconds: number;
}

export interface BurstLimiter {
  take(orgId: string, limitPerSecond: number): Promise<BurstDecision>;
  close(): Promise<void>;
  /** shared: Redis answers; fallback: Redis configured but not ready (per-instance windows); local: no Redis. */
  mode?(): 'shared' | 'fallback' | 'local';
}

/** The same fixed-window arithmetic, in process: used alone without Redis, and as the fallback with it. */
export class LocalWindow {
  private second = 0;
  private counts = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  take(orgId: string, limit: number): BurstDecision {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.counts = new Map();
    }
    const count = (this.counts.get(orgId) ?? 0) + 1;
    this.counts.set(orgId, count);
    return { allowed: count <= limit, retryAfterSeconds: 1 };
  }
}

export function createLocalLimiter(now?: () => number): BurstLimiter {
  const window = new LocalWindow(now);
  return { take: async (orgId, limit) => window.take(orgId, limit), close: async () => {}, mode: () => 'local' };
}

type Redis = ReturnType<typeof createClient>;

/** Adds to a window and gives it a lifetime on first use: one command and one reply per org per turn. */
const WINDOW_SCRIPT = `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], 2) end
return n`;

export interface RedisLimiterOptions {
  url: string;
  log: Logger;
  /** How long a Redis round trip may take before the local window decides instead. */
  commandTimeoutMs?: number;
  now?: () => number;
}

export async function createRedisLimiter(options: RedisLimiterOptions): Promise<BurstLimiter> {
  const fallback = new LocalWindow(options.now);
  const now = options.now ?? Date.now;
  const timeoutMs = options.commandTimeoutMs ?? 50;
  // Loaded here, not at import: the package takes 0.1-0.4 s to load, which a gateway without Redis (the embedded
  // `npm start`) should not pay at start-up (issue 14: start-up to the first served call).
  const { createClient } = await import('redis');
  const client: Redis = createClient({
    url: options.url,
    // Fail fast instead of queueing commands while disconnected: the local window takes over meanwhile.
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: (retries: number) => Math.min(200 * 2 ** retries, 5000) },
  });
  let warned = false;
  client.on('error', () => {
    if (!warned) options.log.error('redis unavailable: burst limits fall back to per-instance windows');
    warned = true;
  });
  client.on('ready', () => {
    warned = false;
  });
  // Connect in the background: start-up never waits for (or fails on) Redis.
  client.connect().catch(() => {});

  async function incrBy(key: string, by: number): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis timeout')), timeoutMs);
    });
    try {
      return Number(await Promise.race([client.eval(WINDOW_SCRIPT, { keys: [key], arguments: [String(by)] }), timeout]));
    } finally {
      clearTimeout(timer);
    }
  }

  // Calls for the same org and second that arrive in one turn of the event loop share one INCRBY: the window's
  // new total tells which of them fit (the first `limit - before` do), so the count stays exact across instances
  // while Redis sees one command per org per turn instead of one per call.
  interface Waiting {
    orgId: string;
    limit: number;
    resolve: (decision: BurstDecision) => void;
  }
  let pending = new Map<string, Waiting[]>();
  let scheduled = false;

  async function settle(key: string, waiters: Waiting[]): Promise<void> {
    try {
      const total = await incrBy(key, waiters.length);
      const before = total - waiters.length;
      waiters.forEach((w, i) => w.resolve({ allowed: before + i + 1 <= w.limit, retryAfterSeconds: 1 }));
    } catch {
      for (const w of waiters) w.resolve(fallback.take(w.orgId, w.limit));
    }
  }

  function flush(): void {
    scheduled = false;
    const batch = pending;
    pending = new Map();
    for (const [key, waiters] of batch) void settle(key, waiters);
  }

  return {
    mode: () => (client.isReady ? 'shared' : 'fallback'),
    take(orgId, limit) {
      if (!client.isReady) return Promise.resolve(fallback.take(orgId, limit));
      const key = `toolgate:burst:${orgId}:${Math.floor(now() / 1000)}`;
      return new Promise<BurstDecision>((resolve) => {
        const list = pending.get(key);
        if (list) list.push({ orgId, limit, resolve });
        else pending.set(key, [{ orgId, limit, resolve }]);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    async close() {
      // A client that never connected (or is reconnecting) has nothing to flush: drop it at once.
      if (!client.isReady) {
        if (client.isOpen) client.destroy();
        return;
      }
      await client.close().catch(() => client.destroy());
    },
  };
}
