/**
 * The Redis connection the limits share (burst windows, REST windows, failed-authentication counts): connected in the
 * background, failing fast while down (each limiter then decides in process), every command capped in time.
 */
import type { createClient } from 'redis';
import type { Logger } from '../util/log.ts';

export interface LimitsRedis {
  ready(): boolean;
  /** Runs a Lua script; rejects when Redis is down or slower than the command timeout. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  close(): Promise<void>;
}

export interface LimitsRedisOptions {
  url: string;
  log: Logger;
  /** How long a Redis round trip may take before the local fallback decides instead. */
  commandTimeoutMs?: number;
}

export async function openLimitsRedis(options: LimitsRedisOptions): Promise<LimitsRedis> {
  const timeoutMs = options.commandTimeoutMs ?? 50;
  // Loaded here, not at import: the package takes 0.1-0.4 s to load, which a gateway without Redis (the embedded
  // `npm start`) should not pay at start-up (issue 14: start-up to the first served call).
  const { createClient: connect } = await import('redis');
  const client: ReturnType<typeof createClient> = connect({
    url: options.url,
    // Fail fast instead of queueing commands while disconnected: the local windows take over meanwhile.
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: (retries: number) => Math.min(200 * 2 ** retries, 5000) },
  });
  let warned = false;
  client.on('error', () => {
    if (!warned) options.log.error('redis unavailable: limits fall back to per-instance counts');
    warned = true;
  });
  client.on('ready', () => {
    warned = false;
  });
  // Connect in the background: start-up never waits for (or fails on) Redis.
  client.connect().catch(() => {});

  return {
    ready: () => client.isReady,
    async eval(script, keys, args) {
      if (!client.isReady) throw new Error('redis not ready');
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('redis timeout')), timeoutMs);
      });
      try {
        return await Promise.race([client.eval(script, { keys, arguments: args }), timeout]);
      } finally {
        clearTimeout(timer);
      }
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
