/** One lazily opened, bounded pool per connector id, replaced when the config or credential changes, closed when idle. */
import { sha256Hex } from '../../util/crypto.ts';
import type { CallLimits, DatabaseConfig } from '../types.ts';
import { countConnectorBusy, observeConnectorWait, registerPoolSource } from '../../observability/metrics.ts';
import { connectionBudget, type Evictable } from './budget.ts';

export interface PoolSettings {
  /** Connections per connector. */
  max: number;
  /** A pool unused for this long is closed (it reopens on the next call). */
  idleMs: number;
  /** Connect timeout of pool connections. */
  connectTimeoutMs: number;
}

const DEFAULT_POOL_SETTINGS: PoolSettings = { max: 10, idleMs: 10_000, connectTimeoutMs: 5_000 };

export interface PoolFactory<P, O = undefined, C = DatabaseConfig> {
  /** The connector type these pools serve (the metrics label: toolgate_connector_*). */
  type?: string;
  /** `extra` comes from the call that opens the pool (postgresql: the session defaults of its fast path). */
  open(config: C, credential: string | null, settings: PoolSettings, extra?: O): P;
  end(pool: P): Promise<void>;
  /** The server (host:port, see budget.ts serverKey) a pool's connections go to: set, the pool draws on the budget. */
  server?(config: C): string;
  /**
   * Budget tokens the pool holds for connections beside its own (the PostgreSQL cancel session, decision 0411), which
   * come back with `end`: counted when the budget closes the pool to make room.
   */
  sideTokens?(pool: P): number;
}

/** How many calls may run on one connector at once, and how long a call may wait for its turn. */
export interface Admission {
  maxConcurrentCalls: number;
  queueTimeoutMs: number;
  /** The caller went away: a call still waiting for a slot leaves the queue and runs nothing. */
  signal?: AbortSignal;
}

/** The call's admission limits, when the gateway set them, with the caller's abort signal. */
export function admissionOf(limits: CallLimits, signal?: AbortSignal): Admission | undefined {
  const { maxConcurrentCalls, queueTimeoutMs } = limits;
  return maxConcurrentCalls === undefined ? undefined : { maxConcurrentCalls, queueTimeoutMs: queueTimeoutMs ?? 1000, signal };
}

/** What a call whose caller went away fails with before it ran anything (every driver answers it "aborted"). */
const abortedError = (): Error => Object.assign(new Error('ABORTED'), { code: 'ABORTED' });

/** Thrown by PoolRegistry.use when the connector stayed full for the whole queue deadline. */
export class ConnectorBusyError extends Error {
  readonly code = 'CONNECTOR_BUSY';
  constructor(
    readonly running: number,
    readonly waitedMs: number,
  ) {
    super('CONNECTOR_BUSY');
  }
}

/** The tool-error text of a ConnectorBusyError (both drivers). */
export const busyText = (e: ConnectorBusyError): string =>
  `The connector is busy: ${e.running} calls are already running on it and none finished within ${e.waitedMs} ms. Try again shortly.`;

interface Waiter {
  resolve: () => void;
  timer: ReturnType<typeof setTimeout>;
  /** Removes the abort listener (the waiter got its slot or timed out). */
  unlisten: () => void;
}

interface Entry<P> {
  pool: P;
  fingerprint: string;
  active: number;
  timer: ReturnType<typeof setTimeout> | null;
  /** Calls holding one of the connector's slots, and calls waiting for one (FIFO). */
  running: number;
  waiting: Waiter[];
  /** Budget: the server, the tokens held (connections the pool may have open), calls in fn, last use, closed. */
  server: string | null;
  tokens: number;
  inFn: number;
  lastUsed: number;
  ended: boolean;
}

/** A digest, so the registry never keeps a second copy of the password in clear. */
function fingerprintOf(config: unknown, credential: string | null, settings: PoolSettings): string {
  return sha256Hex(JSON.stringify([config, credential, settings]));
}

/** C: the connector type's config (any type may pool: database connections, upstream MCP sessions). */
export class PoolRegistry<P, O = undefined, C = DatabaseConfig> {
  private readonly entries = new Map<string, Entry<P>>();
  private settings: PoolSettings = { ...DEFAULT_POOL_SETTINGS };

  private readonly type: string;

  constructor(private readonly factory: PoolFactory<P, O, C>) {
    this.type = factory.type ?? 'unknown';
    registerPoolSource({ type: this.type, usage: () => this.usage() });
    if (factory.server) connectionBudget.addSource((server) => this.leastRecentlyUsedIdle(server));
  }

  /** The idle pool holding connections (on `server` when given) used longest ago: the budget closes it to free its tokens. */
  private leastRecentlyUsedIdle(server?: string): Evictable | null {
    let best: [string, Entry<P>] | null = null;
    for (const [id, e] of this.entries)
      if (e.active === 0 && e.tokens > 0 && (server === undefined || e.server === server) && (!best || e.lastUsed < best[1].lastUsed)) best = [id, e];
    if (!best) return null;
    const [id, e] = best;
    const tokens = e.tokens + (this.factory.sideTokens?.(e.pool) ?? 0);
    return { server: e.server!, lastUsed: e.lastUsed, tokens, evict: () => this.retire(id, e) };
  }

  /** One more budget token when the calls in fn outnumber the pool's tokens (never past the pool size). */
  private async grow(entry: Entry<P>, signal?: AbortSignal): Promise<void> {
    if (entry.server === null || entry.inFn <= entry.tokens || entry.tokens >= this.settings.max) return;
    await connectionBudget.acquire(entry.server, signal);
    if (entry.ended) connectionBudget.release(entry.server, 1);
    else entry.tokens++;
  }

  /** Open pools, calls holding a slot and calls waiting for one, over every connector (read at metrics scrape). */
  usage(): { pools: number; running: number; waiting: number } {
    let running = 0;
    let waiting = 0;
    for (const entry of this.entries.values()) {
      running += entry.running;
      waiting += entry.waiting.length;
    }
    return { pools: this.entries.size, running, waiting };
  }

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
  async use<T>(connectorId: string, config: C, credential: string | null, fn: (pool: P) => Promise<T>, extra?: O, admission?: Admission): Promise<T> {
    const entry = this.acquire(connectorId, config, credential, extra);
    entry.active++;
    if (entry.timer) clearTimeout(entry.timer), (entry.timer = null);
    let admitted = false;
    let inFn = false;
    try {
      if (admission) {
        // Never more slots than connections: a call past the pool size would wait inside the driver, where no
        // deadline applies.
        await this.admit(entry, Math.max(1, Math.min(admission.maxConcurrentCalls, this.settings.max)), admission.queueTimeoutMs, admission.signal);
        admitted = true;
        // Gone while it waited, and the slot came at the same turn: nothing runs, the slot goes to the next.
        if (admission.signal?.aborted) throw abortedError();
      }
      entry.inFn++;
      inFn = true;
      await this.grow(entry, admission?.signal);
      return await fn(entry.pool);
    } finally {
      if (inFn) entry.inFn--;
      entry.lastUsed = performance.now();
      if (admitted) this.leave(entry);
      entry.active--;
      if (entry.active === 0 && this.entries.get(connectorId) === entry) {
        this.armIdle(connectorId, entry);
        if (entry.server !== null) connectionBudget.poolIdle(entry.server);
      }
    }
  }

  /**
   * Waits for one of the connector's `slots`, at most `queueTimeoutMs`: a connector held by long calls answers
   * "busy" quickly instead of queueing without end (issue 7: one agent's runaway calls must not monopolise it).
   */
  private admit(entry: Entry<P>, slots: number, queueTimeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedError());
    if (entry.running < slots && entry.waiting.length === 0) {
      entry.running++;
      observeConnectorWait(this.type, 0);
      return Promise.resolve();
    }
    const queuedAt = performance.now();
    return new Promise<void>((resolve, reject) => {
      const dequeue = (): void => {
        const i = entry.waiting.indexOf(waiter);
        if (i >= 0) entry.waiting.splice(i, 1);
      };
      // A caller that leaves while queued gives its place up at once (issue 26): it never holds a slot.
      const onAbort = (): void => {
        clearTimeout(waiter.timer);
        dequeue();
        reject(abortedError());
      };
      const waiter: Waiter = {
        resolve: () => {
          waiter.unlisten();
          observeConnectorWait(this.type, (performance.now() - queuedAt) / 1000);
          resolve();
        },
        timer: setTimeout(() => {
          waiter.unlisten();
          dequeue();
          countConnectorBusy(this.type);
          reject(new ConnectorBusyError(entry.running, queueTimeoutMs));
        }, queueTimeoutMs),
        unlisten: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      entry.waiting.push(waiter);
    });
  }

  /** Hands the slot to the next waiter, if any (the slot count stays the same), else frees it. */
  private leave(entry: Entry<P>): void {
    const next = entry.waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.resolve();
    } else {
      entry.running--;
    }
  }

  private acquire(connectorId: string, config: C, credential: string | null, extra: O | undefined): Entry<P> {
    const fingerprint = fingerprintOf(config, credential, this.settings);
    const current = this.entries.get(connectorId);
    if (current?.fingerprint === fingerprint) return current;
    if (current) this.retire(connectorId, current);
    const entry: Entry<P> = {
      pool: this.factory.open(config, credential, this.settings, extra),
      fingerprint,
      active: 0,
      timer: null,
      running: 0,
      waiting: [],
      server: this.factory.server?.(config) ?? null,
      tokens: 0,
      inFn: 0,
      lastUsed: performance.now(),
      ended: false,
    };
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
    // The pool's tokens come back once its connections are closed: the budget never counts a closing one as free.
    return this.factory
      .end(entry.pool)
      .catch(() => undefined)
      .then(() => {
        entry.ended = true;
        if (entry.server !== null) connectionBudget.release(entry.server, entry.tokens);
        entry.tokens = 0;
      });
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
