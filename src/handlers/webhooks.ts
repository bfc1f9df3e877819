/** Outbound webhooks (admin): list, create, change, delete, delivery attempts, re-send. */
import { actorOf } from '../principal.ts';
import { json } from '../errors.ts';
import * as service from '../webhooks/service.ts';
import type { Handler, RequestContext } from './context.ts';
import { webhookAttemptView, webhookView } from './views.ts';
import type { WebhookInput, WebhookPatch } from '../../generated/client/types.gen.ts';

export const listWebhooks: Handler = async ({ principal, deps }) => json({ webhooks: (await service.listWebhooks(deps, principal!.orgId)).map(webhookView) });

export const createWebhook: Handler = async ({ principal, deps, body }: RequestContext<WebhookInput>) => {
  const { row, secret } = await service.createWebhook(deps, principal!.orgId, { url: body.url, events: body.events }, actorOf(principal));
  return json({ ...webhookView(row), secret }, 201, { 'cache-control': 'no-store' });
};

export const updateWebhook: Handler = async ({ principal, deps, params, body }: RequestContext<WebhookPatch>) =>
  json(webhookView(await service.updateWebhook(deps, principal!.orgId, params.webhookId!, body, actorOf(principal))));

export const deleteWebhook: Handler = async ({ principal, deps, params }) => {
  await service.deleteWebhook(deps, principal!.orgId, params.webhookId!, actorOf(principal));
  return json({ deleted: true });
};

export const listWebhookDeliveries: Handler = async ({ principal, deps, params, query }) => {
  const limit = (query.limit as number | undefined) ?? 50;
  const page = await service.listDeliveries(deps, principal!.orgId, params.webhookId!, limit, query.cursor as string | undefined);
  return json({ deliveries: page.rows.map(webhookAttemptView), next_cursor: page.nextCursor });
};

export const resendWebhookEvent: Handler = async ({ principal, deps, params }) => {
  await service.resendEvent(deps, principal!.orgId, params.webhookId!, params.eventId!, actorOf(principal));
  deps.webhookWorker?.kick();
  return json({ event_id: params.eventId!, status: 'pending' }, 202);
};
