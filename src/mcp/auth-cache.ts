/**
 * This instance's cache of the MCP endpoint's credential lookup (mcp/lookup.ts): slug + API-key hash -> org and key,
 * and slug -> org for bearer tokens. Positive results only, each entry tagged with the auth epoch (auth/epoch.ts) it
 * was filled under, used only while a read of the epoch made after the request arrived returns that same epoch:
 * a change acknowledged to its writer (the epoch is set before the writer answers) is seen by the next request on
 * every instance. Entries also expire after a short TTL (bounding staleness if a new epoch is ever lost), and their
 * number is capped.
 *
 * Why an entry is never staler than its epoch: a miss is tagged with the epoch of the last read that COMPLETED
 * before its store lookup started. If that lookup missed a change, the change committed after the read, so its
 * writer set a new epoch after the read too; every request arriving after the writer answered reads that new epoch
 * (or a later one: tokens never repeat) and does not match. A miss therefore neither waits for nor sends a read of
 * its own: it costs what the store lookup cost before the cache.
 */
import type { AuthChanges, AuthEpoch } from '../auth/epoch.ts';
import { countAuthCache } from '../observability/metrics.ts';
import { MicroBatcher } from '../util/batch.ts';

/** Entries at most: only valid credentials fill it, so this is the number of keys in use, not of keys sprayed. */
const AUTH_CACHE_MAX_ENTRIES = 10_000;

interface Entry {
  value: object;
  epoch: string;
  expiresAt: number;
}

export interface AuthCacheOptions {
  /** Null: no epoch can be shared (a PostgreSQL store without Redis): no cache, and nothing to signal. */
  epoch: AuthEpoch | null;
  /** 0: no cache (writers still signal their changes, for the other instances). */
  ttlMs: number;
  maxEntries?: number;
  now?: () => number;
}

export class McpAuthCache implements AuthChanges {
  private entries = new Map<string, Entry>();
  /** The epoch the last completed read returned (null: unknown); entries of any other epoch are dropped. */
  private epochNow: string | null = null;
  /**
   * Epoch reads: every request arriving until the next read is sent joins it. At most one read is out at a time: the
   * next one is sent after this loop turn when none is out, else as soon as the one out comes back (under load that
   * is one Redis round trip per round trip, not one per loop turn; each costs a socket write).
   */
  private readonly reads: MicroBatcher<void, string | null> | null;
  private readonly epoch: AuthEpoch | null;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  readonly stats = { hits: 0, misses: 0 };

  constructor(options: AuthCacheOptions) {
    this.epoch = options.epoch;
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries ?? AUTH_CACHE_MAX_ENTRIES;
    this.now = options.now ?? Date.now;
    const epoch = this.epoch;
    this.reads =
      epoch === null
        ? null
        : new MicroBatcher<void, string | null>({
            resendAtOnce: true,
            send: async (items) => {
              const value = await Promise.resolve(epoch.read()).catch(() => null);
              return new Array<string | null>(items.length).fill(this.observe(value));
            },
          });
  }

  get enabled(): boolean {
    return this.epoch !== null && this.ttlMs > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cached value of `key` when it is still current, else `load()` (the store lookup; undefined: none). */
  lookup<T extends object>(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    if (!this.enabled) return load();
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.expiresAt > this.now()) return this.checked(key, entry, load);
    if (entry !== undefined) this.entries.delete(key);
    // A miss reads no epoch of its own (hits keep it current; a tag that is out of date only makes the entry miss
    // once more), except to learn one when none is known, so that caching can start.
    if (this.epochNow === null) void this.readEpoch();
    return this.miss(key, load, this.epochNow);
  }

  /** A cached entry, used only when a read of the epoch made after the request arrived returns its epoch. */
  private async checked<T extends object>(key: string, entry: Entry, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const read = this.readEpoch();
    const epoch = read instanceof Promise ? await read : read;
    if (epoch !== null && epoch === entry.epoch && this.entries.get(key) === entry) {
      this.stats.hits++;
      countAuthCache('hit');
      return entry.value as T;
    }
    // This read completed before the lookup below starts: the refill may carry its epoch.
    return this.miss(key, load, epoch);
  }

  /** The store lookup, its result cached under `tag` (the epoch of a read that completed before it started). */
  private miss<T extends object>(key: string, load: () => Promise<T | undefined>, tag: string | null): Promise<T | undefined> {
    this.stats.misses++;
    countAuthCache('miss');
    if (tag === null) return load();
    return load().then((value) => {
      if (value !== undefined) this.fill(key, value, tag);
      return value;
    });
  }

  /** Called by writers after a committed change: drops this instance's entries at once and sets a new epoch. */
  async changed(): Promise<void> {
    this.entries.clear();
    this.epochNow = null;
    if (this.epoch) await this.epoch.bump();
  }

  async close(): Promise<void> {
    this.entries.clear();
    await this.epoch?.close();
  }

  private readEpoch(): string | null | Promise<string | null> {
    const epoch = this.epoch!;
    if (epoch.scope === 'local') return this.observe(epoch.read() as string | null);
    // After the I/O of this loop turn, like the store batcher: one read for the requests of the turn.
    return this.reads!.add();
  }

  private observe(epoch: string | null): string | null {
    if (epoch !== this.epochNow) {
      this.entries.clear();
      this.epochNow = epoch;
    }
    return epoch;
  }

  private fill(key: string, value: object, epoch: string): void {
    // Filled under an epoch that is no longer the current one (a change came in meanwhile): it could never match.
    if (epoch !== this.epochNow) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value: Object.freeze(value), epoch, expiresAt: this.now() + this.ttlMs });
  }
}
