/**
 * Webhook management for admins: create (the secret appears once, sealed at rest), list, change, delete, the
 * recent delivery attempts and a re-send. URLs pass the outbound guard at save (and again at every send).
 */
import { randomUUID } from 'node:crypto';
import { recordAudit, type Actor } from '../audit/repository.ts';
import { AppError, conflict, notFound, unprocessable } from '../errors.ts';
import { WEBHOOK_EVENT_TYPES } from '../events/index.ts';
import { assertOutboundUrl, OutboundRefusedError, type OutboundPolicy } from '../net/outbound.ts';
import type { Queryable, Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import { RELAYED_TYPES, resetRelayCursor } from './relay-statements.ts';
import * as repo from './repository.ts';
import { newWebhookSecret } from './signing.ts';

export interface WebhookServiceDeps {
  store: Pick<Store, 'db'>;
  box: SecretBox;
  outbound: OutboundPolicy;
}

const MAX_WEBHOOKS_PER_ORG = 20;

async function checkUrl(deps: Pick<WebhookServiceDeps, 'outbound'>, url: string): Promise<void> {
  try {
    await assertOutboundUrl(url, deps.outbound, { requireHttps: true });
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw unprocessable('webhook_url_refused', `The webhook URL is not allowed: ${err.message}`);
    throw err;
  }
}

/** Known types, each once (the contract's enum already refuses others; this keeps one place for the list). */
function checkEvents(events: readonly string[]): string[] {
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0) throw unprocessable('unknown_event_type', `Unknown event type: ${unknown[0]!.slice(0, 100)}.`);
  return [...new Set(events)];
}

async function changed(tx: Queryable, orgId: string, action: string, actor: Actor, id: string, details: Record<string, unknown> = {}): Promise<void> {
  await recordAudit(tx, { orgId, action, actor, targetType: 'webhook', targetId: id, details });
}

export async function createWebhook(
  deps: WebhookServiceDeps,
  orgId: string,
  input: { url: string; events: string[] },
  actor: Actor,
): Promise<{ row: repo.WebhookRow; secret: string }> {
  const events = checkEvents(input.events);
  await checkUrl(deps, input.url);
  const id = randomUUID();
  const secret = newWebhookSecret();
  const row = await deps.store.db.transaction(async (tx) => {
    if ((await repo.listWebhooks(tx, orgId)).length >= MAX_WEBHOOKS_PER_ORG) {
      throw conflict('webhook_limit_reached', `An org can have at most ${MAX_WEBHOOKS_PER_ORG} webhooks.`);
    }
    const saved = await repo.insertWebhook(tx, { id, orgId, url: input.url, events, secretSealed: deps.box.encrypt(secret, `webhook_secret:${id}`) });
    // tool.called starts with the calls sealed after this point: no backfill of earlier calls (webhooks/relay.ts).
    await resetRelayCursor(tx, orgId, id);
    await changed(tx, orgId, 'webhook.created', actor, id, { events });
    return saved;
  });
  return { row, secret };
}

export function listWebhooks(deps: Pick<WebhookServiceDeps, 'store'>, orgId: string): Promise<repo.WebhookRow[]> {
  return repo.listWebhooks(deps.store.db, orgId);
}

async function mustFind(db: Queryable, orgId: string, id: string): Promise<repo.WebhookRow> {
  const row = await repo.findWebhook(db, orgId, id);
  if (!row) throw notFound('webhook_not_found', 'No webhook with this id exists in this org.');
  return row;
}

export async function updateWebhook(
  deps: WebhookServiceDeps,
  orgId: string,
  id: string,
  patch: { url?: string; events?: string[]; enabled?: boolean },
  actor: Actor,
): Promise<repo.WebhookRow> {
  const events = patch.events === undefined ? undefined : checkEvents(patch.events);
  if (patch.url !== undefined) await checkUrl(deps, patch.url);
  return deps.store.db.transaction(async (tx) => {
    const before = await mustFind(tx, orgId, id);
    const values: Parameters<typeof repo.updateWebhook>[3] = {};
    if (patch.url !== undefined) values.url = patch.url;
    if (events !== undefined) values.events = events;
    // Turning an endpoint on again (after a 410 or by hand) clears the gateway's reason for turning it off.
    if (patch.enabled !== undefined) Object.assign(values, { enabled: patch.enabled, disabledReason: null });
    const row = (await repo.updateWebhook(tx, orgId, id, values))!;
    // An endpoint that starts taking tool.called (enabled again, or the type added) starts at the chain head: calls
    // made while it was off or unsubscribed are not delivered.
    const takes = (w: repo.WebhookRow) => w.enabled && w.events.some((e) => RELAYED_TYPES.includes(e));
    if (takes(row) && !takes(before)) await resetRelayCursor(tx, orgId, id);
    await changed(tx, orgId, 'webhook.updated', actor, id, { fields: Object.keys(patch) });
    return row;
  });
}

export async function deleteWebhook(deps: Pick<WebhookServiceDeps, 'store'>, orgId: string, id: string, actor: Actor): Promise<void> {
  await deps.store.db.transaction(async (tx) => {
    if (!(await repo.deleteWebhook(tx, orgId, id))) throw notFound('webhook_not_found', 'No webhook with this id exists in this org.');
    await changed(tx, orgId, 'webhook.deleted', actor, id);
  });
}

/**
 * A page of a webhook's delivery attempts, newest first, and the cursor of the next page (null on the last one).
 * The cursor is the last attempt's id; one that is not an attempt of this webhook is refused (400 invalid_cursor).
 */
export async function listDeliveries(
  deps: Pick<WebhookServiceDeps, 'store'>,
  orgId: string,
  id: string,
  limit: number,
  cursor?: string,
): Promise<{ rows: repo.AttemptRow[]; nextCursor: string | null }> {
  await mustFind(deps.store.db, orgId, id);
  if (cursor && !(await repo.attemptExists(deps.store.db, id, cursor))) {
    throw new AppError(400, 'invalid_cursor', 'The cursor is not a delivery attempt of this webhook; start again without it.');
  }
  const rows = await repo.listAttempts(deps.store.db, orgId, id, limit + 1, cursor);
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { rows: page, nextCursor: more ? page[page.length - 1]!.id : null };
}

/** Queues an event again for this endpoint (same event id and body; signed afresh when sent). */
export async function resendEvent(deps: Pick<WebhookServiceDeps, 'store'>, orgId: string, id: string, eventId: string, actor: Actor): Promise<void> {
  const webhook = await mustFind(deps.store.db, orgId, id);
  if (!webhook.enabled) throw conflict('webhook_disabled', 'The webhook is disabled; enable it before re-sending.');
  const outcome = await repo.requeueDelivery(deps.store.db, orgId, id, eventId);
  if (outcome === 'not_found') throw notFound('event_not_found', 'This webhook has no delivery of that event.');
  if (outcome === 'in_flight') throw conflict('delivery_in_flight', 'An attempt to deliver this event is running; try again when it ends.');
  await recordAudit(deps.store.db, { orgId, action: 'webhook.resent', actor, targetType: 'webhook', targetId: id, details: { event_id: eventId } });
}
