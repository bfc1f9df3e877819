/**
 * The webhook outbox's side of the domain events: a subscriber that writes every event (by type, whoever emits it)
 * into the outbox inside the emitter's transaction, and the `tool.called` recorder the tool runtime calls.
 *
 * Seam for the audit trail (issue 10): until its group commit exists, `ToolCalledRecorder` batches the tool.called
 * events of one event-loop turn into one transaction of their own. When the audit's group commit lands, it emits
 * `tool.called` in the transaction that writes the audit rows (`events.emit(tx, events)`), asking
 * `wantsToolCalled(org)` first so a call of an org without such a webhook builds no event; this recorder then goes.
 */
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

/**
 * Batches tool.called events: calls finishing in the same event-loop turn share one transaction (one INSERT
 * statement through the outbox subscriber), and each call waits for that commit before its result leaves, so a
 * result the agent saw has its event durable. A failed write is logged, not turned into a failed call: the tool
 * has already run.
 */
export class ToolCalledRecorder {
  private pending: DomainEvent[] = [];
  private flushing: Promise<void> | null = null;
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

  private enqueue(event: DomainEvent): Promise<void> {
    this.pending.push(event);
    if (!this.flushing) {
      this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
    }
    return this.flushing;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.flushing = null;
    try {
      await this.deps.store.db.transaction((tx) => this.deps.events.emit(tx, batch));
    } catch (err) {
      this.deps.log.error('tool.called events not written', { count: batch.length, error: describeError(err) });
    }
  }
}
