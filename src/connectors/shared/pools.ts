/** One lazily opened, bounded pool per connector id, replaced when the config or credential changes, closed when idle. */
import { createHash } from 'node:crypto';
import type { DatabaseConfig } from '../types.ts';

export interface PoolSettings {
  /** Connections per connector. */
  max: number;
  /** A pool unused for this long is closed (it reopens on the next call). */
  idleMs: number;
  /** Connect timeout of pool connections. */
  connectTimeoutMs: number;
}

export const DEFAULT_POOL_SETTINGS: PoolSettings = { max: 10, idleMs: 5 * 60_000, connectTimeoutMs: 5_000 };

export interface PoolFactory<P, O = undefined> {
  /** `extra` comes from the call that opens the pool (postgresql: the session defaults of its fast path). */
  open(config: DatabaseConfig, credential: string | null, settings: PoolSettings, extra?: O): P;
  end(pool: P): Promise<void>;
}

interface Entry<P> {
  pool: P;
  fingerprint: string;
  active: number;
  timer: ReturnType<typeof setTimeout> | null;
}

/** A digest, so the registry never keeps a second copy of the password in clear. */
function fingerprintOf(config: DatabaseConfig, credential: string | null, settings: PoolSettings): string {
  return createHash('sha256').update(JSON.stringify([config, credential, settings])).digest('hex');
}

export class PoolRegistry<P, O = undefined> {
  private readonly entries = new Map<string, Entry<P>>();
  private settings: PoolSettings = { ...DEFAULT_POOL_SETTINGS };

  constructor(private readonly factory: PoolFactory<P, O>) {}

  /** Changes the settings of pools opened from now on (open pools are replaced on their next use). */
  configure(settings: Partial<PoolSettings>): void {
    this.settings = { ...this.settings, ...settings };
  }

  get currentSettings(): PoolSettings {
    return this.settings;
  }

  /**
   * Runs `fn` with the connector's pool, opening it (or replacing a stale one) first; tracks use for idle close.
   * `extra` is handed to the factory only when this call opens the pool; it is not part of the identity.
   */
  async use<T>(connectorId: string, config: DatabaseConfig, credential: string | null, fn: (pool: P) => Promise<T>, extra?: O): Promise<T> {
    const entry = this.acquire(connectorId, config, credential, extra);
    entry.active++;
    if (entry.timer) clearTimeout(entry.timer), (entry.timer = null);
    try {
      return await fn(entry.pool);
    } finally {
      entry.active--;
      if (entry.active === 0 && this.entries.get(connectorId) === entry) this.armIdle(connectorId, entry);
    }
  }

  private acquire(connectorId: string, config: DatabaseConfig, credential: string | null, extra: O | undefined): Entry<P> {
    const fingerprint = fingerprintOf(config, credential, this.settings);
    const current = this.entries.get(connectorId);
    if (current?.fingerprint === fingerprint) return current;
    if (current) this.retire(connectorId, current);
    const entry: Entry<P> = { pool: this.factory.open(config, credential, this.settings, extra), fingerprint, active: 0, timer: null };
    this.entries.set(connectorId, entry);
    return entry;
  }

  private armIdle(connectorId: string, entry: Entry<P>): void {
    entry.timer = setTimeout(() => {
      if (entry.active === 0 && this.entries.get(connectorId) === entry) this.retire(connectorId, entry);
    }, this.settings.idleMs);
    // An idle pool must not keep the process alive.
    entry.timer.unref?.();
  }

  /** Drops the entry now; the pool ends in the background (in-flight calls finish on it). */
  private retire(connectorId: string, entry: Entry<P>): Promise<void> {
    if (entry.timer) clearTimeout(entry.timer), (entry.timer = null);
    if (this.entries.get(connectorId) === entry) this.entries.delete(connectorId);
    return this.factory.end(entry.pool).catch(() => undefined);
  }

  async close(connectorId: string): Promise<void> {
    const entry = this.entries.get(connectorId);
    if (entry) await this.retire(connectorId, entry);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.entries.entries()].map(([id, e]) => this.retire(id, e)));
  }

  /** Number of open pools (tests, metrics). */
  get size(): number {
    return this.entries.size;
  }
}
