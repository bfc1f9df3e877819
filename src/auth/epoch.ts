/**
 * The auth epoch: one value, shared by every instance, that changes whenever what the MCP endpoint's credential
 * lookup returns may have changed (an API key created or revoked, a catalog_version bumped, an org provisioned).
 * Writers set a new one after their transaction commits and before they answer; each instance's credential cache
 * (mcp/auth-cache.ts) uses an entry only while the epoch it was filled under is the one a fresh read returns.
 *
 * The value is a random token, never a counter: a Redis that restarts empty starts from a new token (set by the first
 * reader that finds none), so no entry filled before can ever match again. Without Redis, an embedded store (PGlite:
 * one process) keeps the epoch in process; a PostgreSQL store without Redis has no shared epoch and no cache.
 */
import { randomBytes } from 'node:crypto';
import type { createClient } from 'redis';
import type { Logger } from '../util/log.ts';

/** What a writer calls once a change to what the MCP credential lookup returns has committed (never throws). */
export interface AuthChanges {
  changed(): Promise<void>;
}

export interface AuthEpoch {
  /** shared: Redis, every instance; local: this process only (the embedded store serves one process). */
  readonly scope: 'shared' | 'local';
  /** The epoch now, read after this call; null when it cannot be known (Redis down or slow, or no epoch set yet). */
  read(): string | null | Promise<string | null>;
  /** Sets a new epoch; resolves once it is set, or once setting it failed (logged, and retried in the background). */
  bump(): Promise<void>;
  close(): Promise<void>;
}

const newToken = () => randomBytes(16).toString('base64url');

/** The embedded store's epoch: one process, so a variable is the whole truth. */
export function createLocalEpoch(): AuthEpoch {
  let token = newToken();
  return {
    scope: 'local',
    read: () => token,
    bump: async () => {
      token = newToken();
    },
    close: async () => {},
  };
}

type Redis = ReturnType<typeof createClient>;

export interface RedisEpochOptions {
  url: string;
  log: Logger;
  /** The key holding the token (tests give each suite its own, so suites running at once do not share it). */
  key?: string;
  /** How long a read may take before the request is answered from the store instead. */
  readTimeoutMs?: number;
  /** How long a writer waits for its new epoch to be set before it answers anyway (and retries in the background). */
  writeTimeoutMs?: number;
}

const AUTH_EPOCH_KEY = 'toolgate:auth-epoch';

export async function createRedisEpoch(options: RedisEpochOptions): Promise<AuthEpoch> {
  const key = options.key ?? AUTH_EPOCH_KEY;
  const readTimeoutMs = options.readTimeoutMs ?? 100;
  const writeTimeoutMs = options.writeTimeoutMs ?? 1000;
  // Loaded here, not at import, like the burst limiter's client (start-up of a gateway without Redis).
  const { createClient } = await import('redis');
  const client: Redis = createClient({
    url: options.url,
    // Fail fast while disconnected: the request is answered from the store meanwhile.
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: (retries: number) => Math.min(200 * 2 ** retries, 5000) },
  });
  let warned = false;
  // Changes signalled (`wanted`) and covered by a token set after them (`done`). One not covered yet is set again as
  // soon as Redis answers (until then, entries elsewhere live at most their TTL; docs/decisions/0113-mcp-credential-cache.md).
  let wanted = 0;
  let done = 0;
  let retry: ReturnType<typeof setTimeout> | null = null;
  let closed = false;
  let initializing = false;
  client.on('error', () => {
    if (!warned) options.log.error('redis unavailable: MCP credential lookups go to the store on every request');
    warned = true;
  });
  client.on('ready', () => {
    warned = false;
    if (done < wanted) void setNewToken();
  });
  client.connect().catch(() => {});

  function withTimeout<T>(command: Promise<T>, ms: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis timeout')), ms);
    });
    return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
  }

  /** No epoch yet (a fresh or flushed Redis): the first reader sets one; nothing is cached until then. */
  function initialize(): void {
    if (initializing) return;
    initializing = true;
    withTimeout(client.set(key, newToken(), { NX: true }), writeTimeoutMs)
      .catch(() => {})
      .finally(() => {
        initializing = false;
      });
  }

  async function read(): Promise<string | null> {
    if (!client.isReady) return null;
    try {
      const token = await withTimeout(client.get(key), readTimeoutMs);
      if (token === null) initialize();
      return token;
    } catch {
      return null;
    }
  }

  async function setNewToken(): Promise<void> {
    const covers = wanted;
    try {
      if (!client.isReady) throw new Error('redis not ready');
      await withTimeout(client.set(key, newToken()), writeTimeoutMs);
      done = Math.max(done, covers);
    } catch {
      if (!closed && retry === null) {
        options.log.error('redis unavailable: a new auth epoch is not set yet (retried); cached MCP credentials elsewhere expire within their TTL');
        retry = setTimeout(() => {
          retry = null;
          if (done < wanted) void setNewToken();
        }, 1000);
        retry.unref?.();
      }
    }
  }

  function bump(): Promise<void> {
    wanted++;
    return setNewToken();
  }

  return {
    scope: 'shared',
    read,
    bump,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      if (!client.isReady) {
        if (client.isOpen) client.destroy();
        return;
      }
      await client.close().catch(() => client.destroy());
    },
  };
}
