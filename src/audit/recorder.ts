/**
 * The audit log's hot-path writer: tool-call rows and refusals, written by group commit.
 *
 * - Tool calls (`toolCall`): no result without its row. The caller awaits the row; the rows requested during one
 *   turn of the event loop (and while MAX_IN_FLIGHT batches are out) go to the store as ONE multi-row INSERT,
 *   committed before any of those calls is answered. If the batch fails, every call in it fails (the caller answers
 *   an error instead of the result). The rows are sealed in that INSERT (chain position, hash, MAC): this instance
 *   holds each org's chain head it writes for, and the statement moves the head only if it is still there
 *   (audit/sealed-insert.ts, decision 0341); an org whose head another writer moved is read again and retried.
 *   Rows that cannot be sealed that way (a head that keeps moving, a sealed INSERT the server refuses) are written
 *   unsealed and sealed right after from what this instance wrote (audit/seal.ts sealFromMemory: no row read back);
 *   rows it could not seal that way are read back and sealed at once (audit/seal.ts `sealPending`); rows of an
 *   instance that stopped are sealed at the next start or by the orphan sweep of any instance.
 *   The queue of waiting calls is bounded (TOOLGATE_AUDIT_QUEUE_MAX): while it is full (`accepting()` false) new
 *   calls are refused before they run, so a store that cannot keep up turns into errors, not unbounded memory.
 * - Refusals (`denial`): 401/403/429/quota answers are not held back for their row (a flood of them must not slow
 *   anybody), so they are queued without waiting, in a separate bounded queue. A batch writes at most
 *   DENIALS_PER_BATCH of them, in a statement of their own after the tool calls', so tool calls wait for a bounded
 *   amount of refusal work and a refusal that cannot be written never fails a call. When the queue is full, further
 *   refusals of that org are counted, not queued, and one `audit.denials_dropped` row with the count is written once
 *   there is room again: the log says how many refusals it does not itemise.
 *
 * Webhooks (issue 11): a tool-call row is itself the outbox record of its `tool.called` event; webhooks/relay.ts turns
 * sealed rows into webhook deliveries, so a batch writes nothing but audit rows whether or not the org has webhooks.
 * Other domain events that need an audit row (approval.requested) are turned into rows by `auditSubscriber`,
 * subscribed at start.
 */
import type { EventSubscriber } from '../events/index.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { ItemFailure, MicroBatcher, type BatchAnswer } from '../util/batch.ts';
import { appendAudit, insertUnsealed, type AuditInput, type Head, type SealableRow } from './repository.ts';
import { logRefused, SealConflict, sealFromMemory, sealPending } from './seal.ts';
import { insertSealed, refusedByServer, sealableOrg } from './sealed-insert.ts';
import { readHeads } from './sealed-insert-statements.ts';

/** Refusals per batch: bounds what a tool call's row waits for when it shares a batch with a denial flood. */
const DENIALS_PER_BATCH = 200;
/**
 * Batches out at once; new rows wait for the next batch meanwhile (that is the group commit). One: while a batch is
 * out, every row requested meanwhile joins the next one. Measured with bench/stages.ts (tools/call in process, 64
 * callers, PostgreSQL store, load 6-9, A/B pairs): 4 in flight made 8 rows per batch and 266-311 µs CPU per call,
 * 1 in flight 22-23 rows per batch and 198-269 µs (2: 12-13 rows, 228-310 µs). Fewer, larger INSERTs are less work
 * for the gateway and for PostgreSQL; a call waits at most for the batch ahead of it plus its own.
 */
const MAX_IN_FLIGHT = 1;
/** Rows sealed per sealing transaction. */
const SEAL_ROWS = 2000;
/** Sealing runs at most this often, so under load one sealing transaction takes many batches' rows. */
const SEAL_INTERVAL_MS = 100;
/**
 * Sealed INSERTs a batch tries before its rows of an org whose head keeps moving are written unsealed (and sealed
 * after, the fallback below): each retry reads the head again first.
 */
const SEALED_ATTEMPTS = 3;
/** Chain heads this instance holds in memory at most (one per org it wrote for); past it, it forgets them all. */
const HEADS_MAX = 10_000;

class AuditUnavailableError extends Error {}

export interface AuditRecorderDeps {
  db: Db;
  log: Logger;
  /** Waiting tool-call rows and waiting refusals, each queue on its own. */
  queueMax: number;
  now?: () => Date;
  /** Delay before a seal, so one seal takes many batches' rows (tests lengthen it to seal rows behind its back). */
  sealIntervalMs?: number;
  /** False: every row is written unsealed and sealed after (tests of that way); default true (sealed-insert.ts). */
  sealAtInsert?: boolean;
}

/** Rows sealed by this recorder, by way (metrics, tests). */
export interface SealStats {
  /** Sealed in the INSERT that committed them (sealed-insert.ts): no seal UPDATE. */
  atInsert: number;
  /** Sealed INSERTs that found an org's head moved by someone else (its rows then retried). */
  headMoved: number;
  /** Written unsealed, then sealed by an UPDATE from what this instance wrote. */
  fromMemory: number;
  /** Sealed by reading them back, after a seal from memory failed. */
  readBack: number;
  /** Seals from memory that met rows sealed elsewhere. */
  conflicts: number;
}

export class AuditRecorder {
  /** Tool-call rows: one batch (one INSERT) per turn, MAX_IN_FLIGHT out at once; refusals ride along. */
  private readonly calls: MicroBatcher<AuditInput, void>;
  private denials: AuditInput[] = [];
  private dropped = new Map<string, { count: number; since: Date }>();
  private sealing: Promise<void> | null = null;
  private sealAgain = false;
  private draining = false;
  /** Committed rows this instance has yet to seal, in commit order. */
  private unsealed: SealableRow[] = [];
  private readonly stats: SealStats = { atInsert: 0, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 0 };
  /** Where this instance believes each org's chain head is (from its last sealed INSERT or read). */
  private readonly heads = new Map<string, Head>();
  private wakeSeal: () => void = () => {};

  constructor(private readonly deps: AuditRecorderDeps) {
    this.calls = new MicroBatcher<AuditInput, void>({
      maxInFlight: MAX_IN_FLIGHT,
      moreWork: () => this.hasOtherWork(),
      send: (rows, answer) => this.write(rows, answer),
    });
  }

  /** Records a tool call and resolves once its row is committed. */
  toolCall(row: AuditInput): Promise<void> {
    return this.calls.add(row);
  }

  /**
   * Whether a new tool call may start: false while the rows waiting for their commit fill the queue. Checked before a
   * tool runs (a call that ran always gets its row queued), so the queue exceeds its bound by at most the calls
   * already executing.
   */
  accepting(): boolean {
    return this.calls.pending < this.deps.queueMax;
  }

  /** Rows waiting for their batch (metrics: toolgate_audit_queue_depth). */
  queueDepth(): { calls: number; denials: number } {
    return { calls: this.calls.pending, denials: this.denials.length };
  }

  sealStats(): SealStats {
    return { ...this.stats };
  }

  /** Records a refusal without waiting for it; never throws. */
  denial(row: AuditInput): void {
    if (this.denials.length >= this.deps.queueMax) {
      const seen = this.dropped.get(row.orgId);
      if (seen) seen.count += 1;
      else this.dropped.set(row.orgId, { count: 1, since: this.now() });
      return;
    }
    this.denials.push(row);
    this.calls.schedule();
  }

  /** Waits until everything queued so far is written and sealed into the chains (tests, shutdown). */
  async drain(): Promise<void> {
    this.draining = true;
    this.wakeSeal();
    try {
      while (this.calls.pending || this.calls.out || this.hasOtherWork() || this.sealing) {
        if (this.calls.pending || this.calls.out || this.hasOtherWork()) await this.calls.drain();
        else await this.sealing;
      }
    } finally {
      this.draining = false;
    }
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** Refusals (or a count of dropped ones) waiting: worth a batch even without a tool call. */
  private hasOtherWork(): boolean {
    return this.denials.length > 0 || this.dropped.size > 0;
  }

  /** The refusals a batch takes along, cut when the batch is: at most DENIALS_PER_BATCH, and the dropped counts. */
  private takeOthers(): AuditInput[] {
    const denials = this.denials.splice(0, DENIALS_PER_BATCH);
    // Dropped counts are written once the denial queue has room again.
    const dropped = this.denials.length < this.deps.queueMax / 2 ? this.takeDropped() : [];
    return [...denials, ...dropped];
  }

  private takeDropped(): AuditInput[] {
    const rows = [...this.dropped].map(([orgId, { count, since }]) => ({
      orgId,
      action: 'audit.denials_dropped',
      actor: { type: 'system' as const, id: null },
      outcome: 'error' as const,
      details: { count, since: since.toISOString(), reason: 'the queue of refusals to record was full' },
    }));
    this.dropped.clear();
    return rows;
  }

  /**
   * One batch: the tool calls' rows in one INSERT, their callers answered once it is committed (or all failed), then
   * the refusals taken along in a statement of their own; the next batch waits for both.
   */
  private async write(calls: AuditInput[], answer: (answer: BatchAnswer<void>) => void): Promise<undefined> {
    const others = this.takeOthers();
    if (calls.length) {
      try {
        await this.commit(calls);
        answer({ length: calls.length });
      } catch (err) {
        this.deps.log.error('audit batch failed', { rows: calls.length, error: describeError(err) });
        answer(calls.map(() => new ItemFailure(new AuditUnavailableError('audit write failed'))));
      }
    } else answer({ length: 0 });
    if (others.length) {
      await this.commit(others).catch((err: unknown) => {
        this.deps.log.error('recording refusals failed; they are lost', { rows: others.length, error: describeError(err) });
      });
    }
    if (this.unsealed.length) this.seal();
    return undefined;
  }

  /**
   * Commits rows, sealed in their INSERT where this instance holds their org's head (sealed-insert.ts): an org whose
   * head moved is read again and retried, SEALED_ATTEMPTS times at most. What is left (an org id not in canonical
   * form, a head that kept moving, a sealed INSERT the server refused) is written unsealed and sealed after. Throws
   * when the rows could not be committed.
   */
  private async commit(rows: AuditInput[]): Promise<void> {
    const { db } = this.deps;
    const now = this.now();
    let open = this.deps.sealAtInsert === false ? [] : rows.filter((r) => sealableOrg(r.orgId));
    const rest = open.length === rows.length ? [] : rows.filter((r) => !open.includes(r));
    for (let attempt = 0; open.length > 0 && attempt < SEALED_ATTEMPTS; attempt++) {
      const unknown = [...new Set(open.map((r) => r.orgId))].filter((id) => !this.heads.has(id));
      if (unknown.length) {
        if (this.heads.size + unknown.length > HEADS_MAX) this.heads.clear();
        for (const [id, head] of await readHeads(db, unknown)) this.heads.set(id, head);
      }
      let written: Awaited<ReturnType<typeof insertSealed>>;
      try {
        written = await insertSealed(db, open, this.heads, now);
      } catch (err) {
        // Refused by the server: nothing was written, so the rows can go in unsealed without being written twice.
        if (!refusedByServer(err)) throw err;
        this.deps.log.error('sealed audit insert refused; writing the rows unsealed', { rows: open.length, error: describeError(err) });
        for (const r of open) this.heads.delete(r.orgId);
        break;
      }
      for (const [id, head] of written.moved) this.heads.set(id, head);
      this.stats.atInsert += open.length - written.left.length;
      if (written.left.length) this.stats.headMoved += 1;
      for (const r of written.left) this.heads.delete(r.orgId);
      open = written.left;
    }
    const unsealed = open.length ? [...open, ...rest] : rest;
    if (unsealed.length) this.toSeal(await insertUnsealed(db, unsealed, now));
  }

  private toSeal(rows: SealableRow[]): void {
    for (const row of rows) this.unsealed.push(row);
  }

  /** Seals written rows into the chains; one sealing at a time per instance, repeated while rows keep coming. */
  private seal(): void {
    if (this.sealing) {
      this.sealAgain = true;
      return;
    }
    this.sealing = (async () => {
      do {
        if (!this.draining) await this.sealDelay();
        this.sealAgain = false;
        await this.sealWritten();
      } while (this.sealAgain);
    })().finally(() => {
      this.sealing = null;
    });
  }

  /** The wait before a seal; `drain` cuts it short. */
  private sealDelay(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.wakeSeal(), this.deps.sealIntervalMs ?? SEAL_INTERVAL_MS);
      this.wakeSeal = () => {
        clearTimeout(timer);
        this.wakeSeal = () => {};
        resolve();
      };
    });
  }

  /** Seals the rows written so far, SEAL_ROWS per transaction. */
  private async sealWritten(): Promise<void> {
    while (this.unsealed.length) {
      const chunk = this.unsealed.splice(0, SEAL_ROWS);
      try {
        this.stats.fromMemory += await sealFromMemory(this.deps.db, chunk);
      } catch (err) {
        await this.sealReadBack(chunk, err);
      }
    }
  }

  /**
   * A seal from memory failed: some rows were sealed elsewhere (or are gone), or the store failed. The chunk is
   * forgotten here and its rows still unsealed are read back and sealed; if that fails too, the orphan sweep of any
   * instance seals them (they are committed). Never retried from memory, so no row can fail every seal for ever.
   */
  private async sealReadBack(chunk: SealableRow[], err: unknown): Promise<void> {
    if (err instanceof SealConflict) {
      this.stats.conflicts += 1;
      this.deps.log.info('audit rows sealed elsewhere; sealing the rest from the store', { rows: chunk.length, reason: err.message });
    } else {
      this.deps.log.error('sealing audit rows failed; reading them back', { rows: chunk.length, error: describeError(err) });
    }
    try {
      this.stats.readBack += await sealPending(this.deps.db, chunk.length, {
        ids: chunk.map((r) => r.id),
        onRefused: (rows) => logRefused(this.deps.log, rows),
      });
    } catch (again) {
      this.deps.log.error('sealing audit rows failed; the orphan sweep will seal them', { rows: chunk.length, error: describeError(again) });
    }
  }
}

/** Domain events that are audit rows too, written in the emitter's transaction (approval.requested). */
export const auditSubscriber: EventSubscriber = async (tx, events) => {
  const rows: AuditInput[] = events.map((e) => ({
    orgId: e.orgId,
    action: 'approval.requested',
    actor: { type: 'system', id: null },
    targetType: 'approval',
    targetId: typeof e.data.approval_id === 'string' ? e.data.approval_id : undefined,
    details: { tool_name: e.data.tool_name, requested_by: e.data.requested_by, event_id: e.id },
  }));
  if (rows.length) await appendAudit(tx, rows);
};
