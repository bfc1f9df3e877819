/**
 * The audit log's hot-path writer: tool-call rows and refusals, written by group commit.
 *
 * - Tool calls (`toolCall`): no result without its row. The caller awaits the row; the rows requested during one
 *   turn of the event loop (and while the previous batch is in flight) go to the store as ONE transaction: chain
 *   heads locked, one multi-row INSERT, the `tool.called` domain events emitted with that transaction, commit. If
 *   the batch fails, every call in it fails (the caller answers an error instead of the result). The queue of waiting
 *   calls is bounded (TOOLGATE_AUDIT_QUEUE_MAX): while it is full (`accepting()` false) new calls are refused before
 *   they run, so a store that cannot keep up turns into errors, not into unbounded memory or latency.
 * - Refusals (`denial`): 401/403/429/quota answers are not held back for their row (a flood of them must not slow
 *   anybody), so they are queued without waiting, in a separate bounded queue. A batch writes at most
 *   DENIALS_PER_BATCH of them, in a transaction of their own after the tool calls', so tool calls wait for a
 *   bounded amount of refusal work and a refusal that cannot be written never fails a call. When the queue is
 *   full, further refusals of that org are counted, not queued, and one `audit.denials_dropped` row with the count
 *   is written once there is room again: the log says how many refusals it does not itemise.
 *
 * The seam for webhooks (issue 11): every tool-call row is paired with a `tool.called` DomainEvent, emitted through
 * `events.emit(tx, events)` inside the batch's transaction after the rows are inserted. A subscriber (the webhook
 * outbox) that writes its rows with that `tx` commits with the audit rows or not at all; if it throws, the batch
 * and its calls fail. Other domain events that need an audit row (approval.requested) are turned into rows by
 * `auditSubscriber`, subscribed at start.
 */
import { DomainEvents, type DomainEvent, type EventSubscriber } from '../events/index.ts';
import type { Db } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { appendAudit, type AuditInput } from './repository.ts';

/** Refusals per batch: bounds what a tool call's row waits for when it shares a batch with a denial flood. */
export const DENIALS_PER_BATCH = 200;

export class AuditUnavailableError extends Error {}

interface PendingCall {
  row: AuditInput;
  event: DomainEvent | null;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface AuditRecorderDeps {
  db: Db;
  events: Pick<DomainEvents, 'emit'>;
  log: Logger;
  /** Waiting tool-call rows and waiting refusals, each queue on its own. */
  queueMax: number;
  now?: () => Date;
}

export class AuditRecorder {
  private calls: PendingCall[] = [];
  private denials: AuditInput[] = [];
  private dropped = new Map<string, { count: number; since: Date }>();
  private flushing: Promise<void> | null = null;
  private scheduled = false;

  constructor(private readonly deps: AuditRecorderDeps) {}

  /** Records a tool call and resolves once its row (and its `tool.called` event, if any) is committed. */
  toolCall(row: AuditInput, event: DomainEvent | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.calls.push({ row, event, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Whether a new tool call may start: false while the rows waiting for their commit fill the queue. Checked before a
   * tool runs (a call that ran always gets its row queued), so the queue exceeds its bound by at most the calls
   * already executing.
   */
  accepting(): boolean {
    return this.calls.length < this.deps.queueMax;
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
    this.schedule();
  }

  /** Waits until everything queued so far is written (tests, shutdown). */
  async drain(): Promise<void> {
    while (this.calls.length || this.denials.length || this.dropped.size || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** One flush at a time; rows that arrive meanwhile wait for the next batch (that is the group commit). */
  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    const calls = this.calls;
    this.calls = [];
    const denials = this.denials.splice(0, DENIALS_PER_BATCH);
    // Dropped counts are written once the denial queue has room again.
    const dropped = this.denials.length < this.deps.queueMax / 2 ? this.takeDropped() : [];
    if (!calls.length && !denials.length && !dropped.length) return Promise.resolve();
    this.flushing = this.write(calls, [...denials, ...dropped]).finally(() => {
      this.flushing = null;
      if (this.calls.length || this.denials.length || this.dropped.size) this.schedule();
    });
    return this.flushing;
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
   * Tool calls first, in their own transaction; then the refusals in another, so a refusal row that cannot be
   * written (its org vanished) never fails a tool call, and tool calls never wait behind more than one bounded
   * batch of refusals.
   */
  private async write(calls: PendingCall[], others: AuditInput[]): Promise<void> {
    if (calls.length) {
      try {
        await this.deps.db.transaction(async (tx) => {
          await appendAudit(tx, calls.map((c) => c.row), this.now());
          await this.deps.events.emit(tx, calls.flatMap((c) => (c.event ? [c.event] : [])));
        });
        for (const call of calls) call.resolve();
      } catch (err) {
        this.deps.log.error('audit batch failed', { rows: calls.length, error: describeError(err) });
        for (const call of calls) call.reject(new AuditUnavailableError('audit write failed'));
      }
    }
    if (others.length) {
      await appendAudit(this.deps.db, others, this.now()).catch((err: unknown) => {
        this.deps.log.error('recording refusals failed; they are lost', { rows: others.length, error: describeError(err) });
      });
    }
  }
}

/** Domain events that are audit rows too, written in the emitter's transaction (approval.requested). */
export const auditSubscriber: EventSubscriber = async (tx, events) => {
  const rows: AuditInput[] = events
    .filter((e) => e.type === 'approval.requested')
    .map((e) => ({
      orgId: e.orgId,
      action: 'approval.requested',
      actor: { type: 'system', id: null },
      targetType: 'approval',
      targetId: typeof e.data.approval_id === 'string' ? e.data.approval_id : undefined,
      details: { tool_name: e.data.tool_name, requested_by: e.data.requested_by, event_id: e.id },
    }));
  if (rows.length) await appendAudit(tx, rows);
};
