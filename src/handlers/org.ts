/** The caller's org and its credentials (API keys, OAuth clients). */
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { recordAudit } from '../audit/repository.ts';
import * as credentials from '../auth/credentials.ts';
import { actorOf } from '../auth/principal.ts';
import { json, notFound, unprocessable } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import { findOrgById } from '../orgs/repository.ts';
import { orgView } from '../orgs/service.ts';
import { connectors } from '../store/schema.ts';
import type { CreateApiKeyRequest, CreateOAuthClientRequest } from '../../generated/client/types.gen.ts';

const CONNECTOR_SCOPE = /^mcp:call:(.+)$/;

/** Connector ids a credential is limited to must be the org's own (and not archived). */
async function assertOwnConnectors(ctx: RequestContext, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const rows = await ctx.deps.store.db
    .select({ id: connectors.id })
    .from(connectors)
    .where(and(eq(connectors.orgId, ctx.principal!.orgId), inArray(connectors.id, ids), isNull(connectors.archivedAt)));
  const found = new Set(rows.map((r) => r.id));
  const unknown = ids.filter((id) => !found.has(id));
  if (unknown.length) throw unprocessable('connector_not_found', `No such connector in this org: ${unknown.join(', ')}.`);
}

export const getOrg: Handler = async ({ principal, deps }) => {
  const org = await findOrgById(deps.store.db, principal!.orgId);
  if (!org) throw notFound('org_not_found', 'No such org.');
  return json(orgView(org, deps.config.customBurstPerSecond));
};

export const listApiKeys: Handler = async ({ principal, deps }) =>
  json({ api_keys: (await credentials.listApiKeys(deps.store.db, principal!.orgId)).map(credentials.apiKeyView) });

export const createApiKey: Handler = async (ctx: RequestContext<CreateApiKeyRequest>) => {
  const { principal, deps, body } = ctx;
  const connectorIds = body.connector_ids ?? null;
  await assertOwnConnectors(ctx, connectorIds ?? []);
  const created = await deps.store.db.transaction(async (tx) => {
    const made = await credentials.createApiKey(tx, principal!.orgId, { name: body.name, connectorIds });
    await recordAudit(tx, { orgId: principal!.orgId, action: 'api_key.created', actor: actorOf(principal), targetType: 'api_key', targetId: made.row.id });
    return made;
  });
  return json({ ...credentials.apiKeyView(created.row), key: created.key }, 201, { 'cache-control': 'no-store' });
};

export const revokeApiKey: Handler = async ({ principal, deps, params }) => {
  const row = await deps.store.db.transaction(async (tx) => {
    const revoked = await credentials.revokeApiKey(tx, principal!.orgId, params.keyId!);
    if (revoked) await recordAudit(tx, { orgId: principal!.orgId, action: 'api_key.revoked', actor: actorOf(principal), targetType: 'api_key', targetId: revoked.id });
    return revoked;
  });
  if (!row) throw notFound('api_key_not_found', 'No such active API key.');
  return json(credentials.apiKeyView(row));
};

export const listOAuthClients: Handler = async ({ principal, deps }) =>
  json({ oauth_clients: (await credentials.listOAuthClients(deps.store.db, principal!.orgId)).map(credentials.oauthClientView) });

export const createOAuthClient: Handler = async (ctx: RequestContext<CreateOAuthClientRequest>) => {
  const { principal, deps, body } = ctx;
  await assertOwnConnectors(ctx, body.scopes.map((s) => CONNECTOR_SCOPE.exec(s)?.[1]).filter((id): id is string => Boolean(id)));
  const created = await deps.store.db.transaction(async (tx) => {
    const made = await credentials.createOAuthClient(tx, principal!.orgId, { name: body.name, scopes: body.scopes });
    await recordAudit(tx, { orgId: principal!.orgId, action: 'oauth_client.created', actor: actorOf(principal), targetType: 'oauth_client', targetId: made.row.clientId });
    return made;
  });
  return json({ ...credentials.oauthClientView(created.row), client_secret: created.clientSecret }, 201, { 'cache-control': 'no-store' });
};

export const revokeOAuthClient: Handler = async ({ principal, deps, params }) => {
  const row = await deps.store.db.transaction(async (tx) => {
    const revoked = await credentials.revokeOAuthClient(tx, principal!.orgId, params.clientId!);
    if (revoked) await recordAudit(tx, { orgId: principal!.orgId, action: 'oauth_client.revoked', actor: actorOf(principal), targetType: 'oauth_client', targetId: revoked.clientId });
    return revoked;
  });
  if (!row) throw notFound('oauth_client_not_found', 'No such active OAuth client.');
  return json(credentials.oauthClientView(row));
};
