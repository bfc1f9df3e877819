/**
 * Domain events: one module through which every event of the gateway is emitted, so the audit log and the webhook
 * outbox only subscribe. Subscribers run inside the emitter's transaction, so an event is durable exactly when the
 * change that caused it is (the transactional outbox rule): a subscriber that throws rolls the change back.
 * `tool.called` is the exception: its record is the tool call's own audit row (written on the hot path without any
 * subscriber), relayed into the webhook outbox after sealing by webhooks/relay.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../store/db.ts';

/** The event types of the spec's "Events" section (the ones webhooks can subscribe to). */
export const WEBHOOK_EVENT_TYPES = ['tool.called', 'tool.refused', 'approval.requested', 'approval.decided'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface DomainEvent<Data extends Record<string, unknown> = Record<string, unknown>> {
  /** `evt_<uuid>`: the id receivers see on every delivery attempt of this event. */
  id: string;
  type: WebhookEventType;
  orgId: string;
  createdAt: Date;
  data: Data;
}

/** A subscriber: writes what it keeps of the event with `tx`, the emitter's transaction (or the database). */
export type EventSubscriber = (tx: Queryable, events: readonly DomainEvent[]) => Promise<void>;

export class DomainEvents {
  private readonly subscribers: { subscriber: EventSubscriber; types: ReadonlySet<WebhookEventType> | null }[] = [];

  /** `types`: only these event types reach the subscriber (all when omitted). */
  subscribe(subscriber: EventSubscriber, types?: readonly WebhookEventType[]): void {
    this.subscribers.push({ subscriber, types: types ? new Set(types) : null });
  }

  /** Builds an event with a fresh id and the current time (the caller emits it, possibly batched with others). */
  static create<Data extends Record<string, unknown>>(type: WebhookEventType, orgId: string, data: Data, now = new Date()): DomainEvent<Data> {
    return { id: `evt_${randomUUID()}`, type, orgId, createdAt: now, data };
  }

  /** Hands the events to every subscriber with the caller's transaction; awaited, so a failure fails the caller. */
  async emit(tx: Queryable, events: readonly DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    for (const { subscriber, types } of this.subscribers) {
      const taken = types === null ? events : events.filter((e) => types.has(e.type));
      if (taken.length) await subscriber(tx, taken);
    }
  }
}
