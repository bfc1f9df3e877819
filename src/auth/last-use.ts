/**
 * When each API key and OAuth client was last used (docs/decisions/0282-credential-last-use.md), recorded coarsely so
 * that it costs the hot path nothing: a use is noted in memory (one map read per request), and a credential's use is
 * written at most once per GRANULARITY_MS per instance, in the background, batched with the other credentials' uses
 * (util/batch.ts), never awaited by the request and never failing it. Several instances write it: the statement only
 * moves the time forward (GREATEST), so the latest use wins whichever write lands last.
 */
import { MicroBatcher } from '../util/batch.ts';
import { describeError, type Logger } from '../util/log.ts';
import type { Db } from '../store/db.ts';
import { recordCredentialUses, type CredentialUse } from './repository.ts';

/** A credential's use is written at most once a minute per instance: last use reads "to the minute" at best. */
const LAST_USE_GRANULARITY_MS = 60_000;
/** Credentials remembered at most (only valid credentials are noted: this is the number of credentials in use). */
const MAX_REMEMBERED = 10_000;
/** Uses per statement at most. */
const MAX_BATCH = 500;

export interface LastUseOptions {
  db: Db;
  log: Pick<Logger, 'info'>;
  granularityMs?: number;
  now?: () => number;
}

export class LastUseRecorder {
  /** Per credential kind, then id: when its use was last handed to a write (epoch ms). No key built per request. */
  private readonly noted = new Map<CredentialUse['kind'], Map<string, number>>();
  private rememberedCount = 0;
  private readonly writes: MicroBatcher<CredentialUse, void>;
  private readonly granularityMs: number;
  private readonly now: () => number;
  private readonly log: Pick<Logger, 'info'>;
  private closed = false;

  constructor(options: LastUseOptions) {
    this.granularityMs = options.granularityMs ?? LAST_USE_GRANULARITY_MS;
    this.now = options.now ?? Date.now;
    this.log = options.log;
    const db = options.db;
    this.writes = new MicroBatcher<CredentialUse, void>({
      maxItems: MAX_BATCH,
      send: async (uses) => {
        await recordCredentialUses(db, uses);
        return new Array<void>(uses.length);
      },
    });
  }

  /** Notes a use of a valid credential now; returns at once (the write, if one is due, goes out after this turn). */
  used(kind: CredentialUse['kind'], id: string): void {
    if (this.closed) return;
    const at = this.now();
    let ofKind = this.noted.get(kind);
    if (ofKind === undefined) this.noted.set(kind, (ofKind = new Map()));
    const last = ofKind.get(id);
    if (last !== undefined && at - last < this.granularityMs) return;
    if (last !== undefined) ofKind.delete(id);
    else if (this.rememberedCount >= MAX_REMEMBERED) this.forgetOldest(ofKind);
    else this.rememberedCount++;
    ofKind.set(id, at);
    const noted = ofKind;
    this.writes.add({ kind, id, atMs: at }).catch((err: unknown) => {
      // Not written: the next use tries again (the store may be down; the call itself was not affected).
      if (noted.get(id) === at) noted.delete(id), this.rememberedCount--;
      this.log.info('credential last use not recorded', { error: describeError(err) });
    });
  }

  /** At the bound: the oldest noted credential of this kind is forgotten (or of another kind when this one has none). */
  private forgetOldest(preferred: Map<string, number>): void {
    for (const m of [preferred, ...this.noted.values()]) {
      const oldest = m.keys().next();
      if (!oldest.done) {
        m.delete(oldest.value);
        return;
      }
    }
  }

  /** Writes what is waiting (tests, shutdown). */
  drain(): Promise<void> {
    return this.writes.drain();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.writes.close();
  }
}
