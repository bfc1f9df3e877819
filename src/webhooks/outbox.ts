/**
 * The webhook outbox's side of the domain events: a subscriber that writes every emitted event (approval.requested,
 * approval.decided) into the outbox inside the emitter's transaction.
 *
 * `tool.called` is not emitted: the call's audit row is its outbox record, relayed into the outbox after sealing
 * (webhooks/relay.ts), so tools/call writes nothing for webhooks.
 */
import type { DomainEvent, EventSubscriber } from '../events/index.ts';
import type { Queryable } from '../store/db.ts';
import { insertOutbox } from './repository.ts';

/** The delivery body, serialised once; this exact text is signed and sent on every attempt. */
export function deliveryBody(event: DomainEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, org_id: event.orgId, created_at: event.createdAt.toISOString(), data: event.data });
}

function outboxEvents(events: readonly DomainEvent[]) {
  return events.map((e) => ({ id: e.id, orgId: e.orgId, type: e.type, body: deliveryBody(e), createdAt: e.createdAt }));
}

/** Writes the events into the outbox with the emitter's transaction. */
export const outboxSubscriber: EventSubscriber = (tx: Queryable, events: readonly DomainEvent[]) => insertOutbox(tx, outboxEvents(events));
