/**
 * The webhook outbox's side of the domain events: a subscriber that writes every event (by type, whoever emits it)
 * into the outbox inside the emitter's transaction, and the per-org answer to "is tool.called subscribed?".
 *
 * `tool.called` rides the audit trail's group commit: audit/recorder.ts writes the outbox rows (`ctes`) in the same
 * single statement as the calls' audit rows, so they commit together without a transaction; the tool runtime asks `ToolCalledSubscriptions.wants(org)` first, so a call of an org without such a
 * webhook builds no event.
 */
import type { DomainEvent, EventSubscriber } from '../events/index.ts';
import type { Queryable } from '../store/db.ts';
import { hasSubscription, insertOutbox, outboxCtes } from './repository.ts';

/** The delivery body, serialised once; this exact text is signed and sent on every attempt. */
export function deliveryBody(event: DomainEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, org_id: event.orgId, created_at: event.createdAt.toISOString(), data: event.data });
}

function outboxEvents(events: readonly DomainEvent[]) {
  return events.map((e) => ({ id: e.id, orgId: e.orgId, type: e.type, body: deliveryBody(e), createdAt: e.createdAt }));
}

/** Writes the events into the outbox with the emitter's transaction, or (`ctes`) inside the emitter's statement. */
export const outboxSubscriber: EventSubscriber = Object.assign((tx: Queryable, events: readonly DomainEvent[]) => insertOutbox(tx, outboxEvents(events)), {
  ctes: (events: readonly DomainEvent[], prefix: string) => outboxCtes(outboxEvents(events), prefix),
});

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
