/**
 * The webhook outbox's side of the domain events: a subscriber that writes every event (by type, whoever emits it)
 * into the outbox inside the emitter's transaction, and the `tool.called` recorder the tool runtime calls.
 *
 * Seam for the audit trail (issue 10): until its group commit exists, `ToolCalledRecorder` writes the tool.called
 * events in batches of their own (one writer, one transaction per batch, off the call's path). When the audit's group commit lands, it emits
 * `tool.called` in the transaction that writes the audit rows (`events.emit(tx, events)`), asking
 * `recorder.subscriptions.wants(org)` first so a call of an org without such a webhook builds no event; this recorder then goes.
 */
import { sql } from 'drizzle-orm';
import { DomainEvents, type DomainEvent, type EventSubscriber } from '../events/index.ts';
import type { Queryable, Store } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { hasSubscription, insertOutbox } from './repository.ts';

/** The delivery body, serialised once; this exact text is signed and sent on every attempt. */
export function deliveryBody(event: DomainEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, org_id: event.orgId, created_at: event.createdAt.toISOString(), data: event.data });
}

export const outboxSubscriber: EventSubscriber = (tx: Queryable, events: readonly DomainEvent[]) =>
  insertOutbox(
    tx,
    events.map((e) => ({ id: e.id, orgId: e.orgId, type: e.type, body: deliveryBody(e), createdAt: e.createdAt })),
  );

/** The org as the tool runtime knows it: the catalog version is read per request, and webhook changes bump it. */
export interface SubscriptionKey {
  id: string;
  catalogVersion: number;
}

/**
 * "Does this org have an enabled webhook for tool.called?", answered once per org and catalog version per instance.
 * Every webhook change bumps the org's catalog_version, which each MCP request already reads, so the answer is
 * fresh on every instance without a query per call.
 */
export class ToolCalledSubscriptions {
  private readonly known = new Map<string, { version: number; answer: boolean | Promise<boolean> }>();

  constructor(private readonly db: Queryable) {}

  /** A boolean once known (no promise on the hot path); a promise only for the first call of a version. */
  wants(org: SubscriptionKey): boolean | Promise<boolean> {
    const hit = this.known.get(org.id);
    if (hit && hit.version === org.catalogVersion) return hit.answer;
    const entry: { version: number; answer: boolean | Promise<boolean> } = { version: org.catalogVersion, answer: false };
    entry.answer = hasSubscription(this.db, org.id, 'tool.called').then(
      (yes) => {
        entry.answer = yes;
        return yes;
      },
      (err: unknown) => {
        if (this.known.get(org.id) === entry) this.known.delete(org.id);
        throw err;
      },
    );
    this.known.set(org.id, entry);
    return entry.answer;
  }
}

export interface ToolCalledRecorderDeps {
  store: Pick<Store, 'db'>;
  events: Pick<DomainEvents, 'emit'>;
  log: Logger;
}

/** Queued events above which a call waits for the write (back-pressure instead of an unbounded queue). */
const MAX_QUEUED = 10_000;
const MAX_BATCH = 1000;
const COALESCE_MS = 10;

/**
 * Group commit for tool.called: events queue in memory and one writer drains them, a batch per transaction (one
 * INSERT through the outbox subscriber), one transaction at a time, so under load a batch holds everything that
 * arrived during the previous write. The call does not wait for the write (measured: waiting halved tools/call
 * throughput, README "Performance"), except when the queue is over MAX_QUEUED. The cost: a crash loses the
 * events still queued (milliseconds' worth); the audit's group commit, awaited before the result leaves, removes it.
 * A failed write is logged, not turned into a failed call: the tool has already run.
 */
export class ToolCalledRecorder {
  private queue: DomainEvent[] = [];
  private draining: Promise<void> | null = null;
  readonly subscriptions: ToolCalledSubscriptions;

  constructor(private readonly deps: ToolCalledRecorderDeps) {
    this.subscriptions = new ToolCalledSubscriptions(deps.store.db);
  }

  /** Returns synchronously (no promise, no work) when the org has no tool.called webhook cached as such. */
  record(org: SubscriptionKey, data: () => Record<string, unknown>): void | Promise<void> {
    const wants = this.subscriptions.wants(org);
    if (wants === false) return;
    if (wants === true) return this.enqueue(DomainEvents.create('tool.called', org.id, data()));
    return wants.then(
      (yes) => (yes ? this.enqueue(DomainEvents.create('tool.called', org.id, data())) : undefined),
      () => undefined,
    );
  }

  /** Resolves when every queued event has been written (or its write failed and was logged). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(event: DomainEvent): void | Promise<void> {
    this.queue.push(event);
    if (!this.draining) this.draining = this.drain();
    if (this.queue.length > MAX_QUEUED) return this.draining;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      // Calls finishing in the next few milliseconds join this batch: fewer, larger transactions under load.
      await new Promise<void>((resolve) => setTimeout(resolve, COALESCE_MS));
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.deps.store.db.transaction(async (tx) => {
          // These events are already allowed to be lost in a crash (they are not awaited); not waiting for the WAL
          // flush keeps the writes from competing with the gateway's other commits for the disk.
          await tx.execute(sql`SET LOCAL synchronous_commit = off`);
          await this.deps.events.emit(tx, batch);
        });
      } catch (err) {
        this.deps.log.error('tool.called events not written', { count: batch.length, error: describeError(err) });
      }
    }
    this.draining = null;
  }
}
