/**
 * The gateway's one Redis connection (docs/decisions/0181-one-redis-connection.md): the limits (limits/redis.ts:
 * burst, REST and failed-authentication windows) and the auth epoch (auth/epoch.ts) send their commands on it.
 * Connected in the background (start-up never waits for, or fails on, Redis), reconnecting with a capped back-off,
 * failing fast while down (no offline queue: each user falls back at once), and every command capped in time. The
 * gateway opens it once and closes it last; its users never close it. Nothing here subscribes: were a subscriber
 * ever needed (a Redis connection in subscribe mode takes no other command), it would be a second connection made
 * by `openRedis` with the same options.
 */
import type { createClient } from 'redis';
import type { Logger } from './log.ts';

type RedisClient = ReturnType<typeof createClient>;

export interface RedisConnection {
  /** Whether commands can be sent now (connected and ready). */
  ready(): boolean;
  /** Sends one command; rejects at once when Redis is not ready, and when no answer came within `timeoutMs`. */
  command<T>(send: (client: RedisClient) => Promise<T>, timeoutMs: number): Promise<T>;
  /** Calls `listener` each time the connection becomes ready again (after a reconnect, too). */
  onReady(listener: () => void): void;
  close(): Promise<void>;
}

export interface RedisOptions {
  url: string;
  log: Logger;
  /** What the log says stops being shared while Redis is down (logged once per outage). */
  whenDown: string;
}

/** The back-off between reconnection attempts: 200 ms, doubling, at most 5 s. */
const reconnectDelay = (retries: number) => Math.min(200 * 2 ** retries, 5000);

export async function openRedis(options: RedisOptions): Promise<RedisConnection> {
  // Loaded here, not at import: the package takes 0.1-0.4 s to load, which a gateway without Redis (the embedded
  // `npm start`) should not pay at start-up (issue 14: start-up to the first served call).
  const { createClient: connect } = await import('redis');
  const client: RedisClient = connect({
    url: options.url,
    // Fail fast instead of queueing commands while disconnected: every user has a fallback meanwhile.
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: reconnectDelay },
  });
  const listeners: Array<() => void> = [];
  let warned = false;
  client.on('error', () => {
    if (!warned) options.log.error(`redis unavailable: ${options.whenDown}`);
    warned = true;
  });
  client.on('ready', () => {
    warned = false;
    for (const listener of listeners) listener();
  });
  client.connect().catch(() => {});

  return {
    ready: () => client.isReady,
    command(send, timeoutMs) {
      if (!client.isReady) return Promise.reject(new Error('redis not ready'));
      return withTimeout(send(client), timeoutMs);
    },
    onReady(listener) {
      listeners.push(listener);
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

function withTimeout<T>(command: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('redis timeout')), ms);
  });
  return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
}
