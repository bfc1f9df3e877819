/**
 * The gateway-wide connection budget of connector pools (issue 42 item 4, decision 0323): at most `total` connections
 * across every pool, at most `perServer` to one server (host:port), fewer where a server's cap was lowered (the store's
 * server keeps its reserve). A pool holds one token per connection it may have open; tokens come back when the pool
 * closes. A call that needs a token waits FIFO at most `waitMs`; meanwhile the least recently used idle pool is closed.
 * A server's cap may drop while its pools hold more (the store's server shared by more instances, decision 0409): its
 * idle pools close at once, least recently used first, and no token is granted on it until it fits.
 */

interface BudgetSettings {
  total: number;
  perServer: number;
  waitMs: number;
}

/** Thrown when no connection was freed within the wait: the tool error says "connection budget exhausted… retry". */
export class ConnectionBudgetError extends Error {
  readonly code = 'CONNECTION_BUDGET';
  constructor(
    readonly server: string,
    readonly waitedMs: number,
  ) {
    super('CONNECTION_BUDGET');
  }
}

/** The tool-error text of a ConnectionBudgetError (every driver). */
export const budgetText = (e: ConnectionBudgetError): string =>
  `The gateway's connection budget is exhausted: no connection to ${e.server} was freed within ${e.waitedMs} ms. Retry shortly.`;

/** An idle pool the budget may close: when it was last used, and how to close it (its tokens come back after). */
export interface Evictable {
  server: string;
  lastUsed: number;
  /** The tokens the pool holds (they come back when evict's promise settles). */
  tokens: number;
  evict(): Promise<void>;
}

/** A registry's least recently used idle pool holding tokens, on `server` when given. */
export type EvictableSource = (server?: string) => Evictable | null;

interface Waiter {
  server: string;
  grant: () => void;
}

/** The canonical server key: lower case, the loopback names as one. */
export function serverKey(host: string, port: number): string {
  const h = host.toLowerCase();
  return `${h === 'localhost' || h === '::1' || h === '[::1]' ? '127.0.0.1' : h}:${port}`;
}

export class ConnectionBudget {
  settings: BudgetSettings = { total: 200, perServer: 100, waitMs: 5000 };
  private held = 0;
  private readonly byServer = new Map<string, number>();
  /** Per server, the cap each setter gave it (one gateway per process in production; tests run several). */
  private readonly caps = new Map<string, Map<string, number>>();
  private readonly waiting: Waiter[] = [];
  private readonly sources: EvictableSource[] = [];
  /** Tokens of pools this budget closed to fit a lowered cap, per server, until they come back. */
  private readonly closing = new Map<string, number>();

  /** A registry offers its least recently used idle pool. */
  addSource(source: EvictableSource): void {
    this.sources.push(source);
  }

  /**
   * Sets one server's cap as `setter` sees it (the store's server: its max_connections minus the store's reserve,
   * shared by the live instances of the store). Lowered below what its pools hold, their idle pools close at once;
   * raised, waiters get tokens. Several setters (gateways of one process, in tests): the largest cap holds, so a
   * gateway left behind by a test cannot close the pools of the others.
   */
  capServer(server: string, cap: number, setter = 'gateway'): void {
    const bySetter = this.caps.get(server) ?? new Map<string, number>();
    bySetter.set(setter, Math.max(0, cap));
    this.caps.set(server, bySetter);
    this.trim(server);
    this.serveWaiters();
  }

  /** Withdraws `setter`'s cap of `server` (its gateway stopped). */
  dropCap(server: string, setter = 'gateway'): void {
    const bySetter = this.caps.get(server);
    bySetter?.delete(setter);
    if (bySetter?.size === 0) this.caps.delete(server);
    this.serveWaiters();
  }

  /** The cap of `server`: the per-server setting, or lower (tests, metrics). */
  capOf(server: string): number {
    const bySetter = this.caps.get(server);
    return Math.min(this.settings.perServer, bySetter ? Math.max(...bySetter.values()) : Number.POSITIVE_INFINITY);
  }

  private fits(server: string): boolean {
    return this.held < this.settings.total && (this.byServer.get(server) ?? 0) < this.capOf(server);
  }

  private take(server: string): void {
    this.held++;
    this.byServer.set(server, (this.byServer.get(server) ?? 0) + 1);
  }

  /** Connections held now (tests, metrics). */
  usage(server?: string): number {
    return server === undefined ? this.held : (this.byServer.get(server) ?? 0);
  }

  /**
   * One token for `server` only if one is free now and no call waits for that server: for a connection a pool may go
   * without (the PostgreSQL cancel session, decision 0411). False takes nothing.
   */
  tryAcquire(server: string): boolean {
    if (!this.fits(server) || this.waiting.some((w) => w.server === server)) return false;
    this.take(server);
    return true;
  }

  /** One token for `server`: at once when it fits and nobody waits before, else FIFO within waitMs. */
  acquire(server: string, signal?: AbortSignal): Promise<void> {
    if (this.fits(server) && !this.waiting.some((w) => w.server === server)) {
      this.take(server);
      return Promise.resolve();
    }
    const waitMs = this.settings.waitMs;
    return new Promise<void>((resolve, reject) => {
      const leave = (): void => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
      };
      const timer = setTimeout(() => {
        leave();
        reject(new ConnectionBudgetError(server, waitMs));
      }, waitMs);
      const onAbort = (): void => {
        clearTimeout(timer);
        leave();
        reject(Object.assign(new Error('ABORTED'), { code: 'ABORTED' }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const waiter: Waiter = {
        server,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.waiting.push(waiter);
      this.evictFor(server);
    });
  }

  /** The least recently used idle pool over every registry (on `server` when given). */
  private leastRecentlyUsed(server?: string): Evictable | null {
    let best: Evictable | null = null;
    for (const source of this.sources) {
      const candidate = source(server);
      if (candidate && (!best || candidate.lastUsed < best.lastUsed)) best = candidate;
    }
    return best;
  }

  /** Closes the least recently used idle pool that frees what `server` waits for (its server's, else any). */
  private evictFor(server: string): void {
    const serverFull = (this.byServer.get(server) ?? 0) >= this.capOf(server);
    void this.leastRecentlyUsed(serverFull ? server : undefined)?.evict();
  }

  /**
   * Closes idle pools of `server`, least recently used first, until what it holds (less what is closing) fits its cap.
   * Each pool offered holds at least one token, so every turn lowers the excess: the loop ends.
   */
  private trim(server: string): void {
    for (;;) {
      const excess = (this.byServer.get(server) ?? 0) - (this.closing.get(server) ?? 0) - this.capOf(server);
      const pool = excess > 0 ? this.leastRecentlyUsed(server) : null;
      if (!pool) return;
      const tokens = pool.tokens;
      this.closing.set(server, (this.closing.get(server) ?? 0) + tokens);
      void pool.evict().finally(() => this.closing.set(server, Math.max(0, (this.closing.get(server) ?? 0) - tokens)));
    }
  }

  /** A pool went idle: it closes when its server is over a lowered cap; while calls wait, the least recently used idle pool closes for them. */
  poolIdle(server: string): void {
    if (this.caps.has(server)) this.trim(server);
    if (this.waiting.length > 0) this.evictFor(this.waiting[0]!.server);
  }

  /** Gives `count` tokens of `server` back and hands them to the waiters in order. */
  release(server: string, count: number): void {
    if (count <= 0) return;
    this.held -= count;
    this.byServer.set(server, Math.max(0, (this.byServer.get(server) ?? 0) - count));
    this.serveWaiters();
  }

  /** Grants tokens to the waiters that fit, in arrival order; while some still wait, an idle pool closes for the first. */
  private serveWaiters(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const w = this.waiting[i]!;
      if (this.fits(w.server)) {
        this.waiting.splice(i, 1);
        this.take(w.server);
        w.grant();
      } else i++;
    }
    if (this.waiting.length > 0) this.evictFor(this.waiting[0]!.server);
  }
}

/** The one budget of the process (every connector type's pools draw from it). */
export const connectionBudget = new ConnectionBudget();
