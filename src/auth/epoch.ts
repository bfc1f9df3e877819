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
import type { Logger } from '../util/log.ts';
import type { RedisConnection } from '../util/redis.ts';

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

export interface RedisEpochOptions {
  /** The gateway's Redis connection (util/redis.ts); its owner closes it, not the epoch. */
  redis: RedisConnection;
  log: Logger;
  /** The key holding the token (tests give each suite its own, so suites running at once do not share it). */
  key?: string;
  /** How long a read may take before the request is answered from the store instead. */
  readTimeoutMs?: number;
  /** How long a writer waits for its new epoch to be set before it answers anyway (and retries in the background). */
  writeTimeoutMs?: number;
}

const AUTH_EPOCH_KEY = 'toolgate:auth-epoch';

/** Reads the epoch: null while Redis is down or slow; the first reader that finds none sets one (nothing cached until then). */
function epochReader(redis: RedisConnection, key: string, readTimeoutMs: number, writeTimeoutMs: number): () => Promise<string | null> {
  let initializing = false;
  /** No epoch yet (a fresh or flushed Redis): the first reader sets one; nothing is cached until then. */
  function initialize(): void {
    if (initializing) return;
    initializing = true;
    redis
      .command((client) => client.set(key, newToken(), { NX: true }), writeTimeoutMs)
      .catch(() => {})
      .finally(() => {
        initializing = false;
      });
  }
  return async () => {
    if (!redis.ready()) return null;
    try {
      const token = await redis.command((client) => client.get(key), readTimeoutMs);
      if (token === null) initialize();
      return token;
    } catch {
      return null;
    }
  };
}

/**
 * Sets new epochs. Changes signalled (`wanted`) and covered by a token set after them (`done`): one not covered yet
 * is set again once a second, and as soon as Redis is ready again (until then, entries elsewhere live at most their
 * TTL; docs/decisions/0113-mcp-credential-cache.md).
 */
class EpochWriter {
  private wanted = 0;
  private done = 0;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly log: Logger,
    private readonly key: string,
    private readonly writeTimeoutMs: number,
  ) {
    redis.onReady(() => {
      if (!this.closed && this.done < this.wanted) void this.setNewToken();
    });
  }

  bump(): Promise<void> {
    this.wanted++;
    return this.setNewToken();
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
  }

  private async setNewToken(): Promise<void> {
    const covers = this.wanted;
    try {
      await this.redis.command((client) => client.set(this.key, newToken()), this.writeTimeoutMs);
      this.done = Math.max(this.done, covers);
    } catch {
      if (!this.closed && this.retry === null) {
        this.log.error('redis unavailable: a new auth epoch is not set yet (retried); cached MCP credentials elsewhere expire within their TTL');
        this.retry = setTimeout(() => {
          this.retry = null;
          if (this.done < this.wanted) void this.setNewToken();
        }, 1000);
        this.retry.unref?.();
      }
    }
  }
}

export function createRedisEpoch(options: RedisEpochOptions): AuthEpoch {
  const key = options.key ?? AUTH_EPOCH_KEY;
  const writeTimeoutMs = options.writeTimeoutMs ?? 1000;
  const writer = new EpochWriter(options.redis, options.log, key, writeTimeoutMs);
  return {
    scope: 'shared',
    read: epochReader(options.redis, key, options.readTimeoutMs ?? 100, writeTimeoutMs),
    bump: () => writer.bump(),
    close: async () => writer.close(),
  };
}
