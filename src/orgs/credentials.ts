/** The org's credentials (API keys, OAuth clients): listed, issued and revoked, each change audited with it. */
import { recordAudit, type Actor } from '../audit/repository.ts';
import * as credentials from '../auth/credentials.ts';
import * as keys from '../auth/repository.ts';
import { liveConnectorIds } from '../connectors/repository.ts';
import { notFound, unprocessable } from '../errors.ts';
import type { Store } from '../store/db.ts';

export interface CredentialServiceDeps {
  store: Pick<Store, 'db'>;
}

/** A connector scope of an OAuth client names the connector it is limited to. */
const CONNECTOR_SCOPE = /^mcp:call:(.+)$/;

/** Connector ids a credential is limited to must be the org's own (and not archived). */
async function assertOwnConnectors(deps: CredentialServiceDeps, orgId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const found = new Set(await liveConnectorIds(deps.store.db, orgId, ids));
  const unknown = ids.filter((id) => !found.has(id));
  if (unknown.length) throw unprocessable('connector_not_found', `No such connector in this org: ${unknown.join(', ')}.`);
}

export function listApiKeys(deps: CredentialServiceDeps, orgId: string) {
  return keys.listApiKeys(deps.store.db, orgId);
}

export async function createApiKey(
  deps: CredentialServiceDeps,
  orgId: string,
  input: { name: string; connectorIds: string[] | null; attributes?: Record<string, string> },
  actor: Actor,
) {
  await assertOwnConnectors(deps, orgId, input.connectorIds ?? []);
  return deps.store.db.transaction(async (tx) => {
    const made = await credentials.createApiKey(tx, orgId, input);
    await recordAudit(tx, { orgId, action: 'api_key.created', actor, targetType: 'api_key', targetId: made.row.id });
    return made;
  });
}

export async function revokeApiKey(deps: CredentialServiceDeps, orgId: string, keyId: string, actor: Actor) {
  const row = await deps.store.db.transaction(async (tx) => {
    const revoked = await keys.revokeApiKey(tx, orgId, keyId);
    if (revoked) await recordAudit(tx, { orgId, action: 'api_key.revoked', actor, targetType: 'api_key', targetId: revoked.id });
    return revoked;
  });
  if (!row) throw notFound('api_key_not_found', 'No such active API key.');
  return row;
}

/** Replaces an active key's attributes (row filters bind them), audited with the names before and after (never values). */
export async function updateApiKeyAttributes(deps: CredentialServiceDeps, orgId: string, keyId: string, attributes: Record<string, string>, actor: Actor) {
  const row = await deps.store.db.transaction(async (tx) => {
    const updated = await keys.setApiKeyAttributes(tx, orgId, keyId, attributes);
    if (updated)
      await recordAudit(tx, {
        orgId,
        action: 'api_key.updated',
        actor,
        targetType: 'api_key',
        targetId: updated.id,
        details: { attributes: Object.keys(attributes).sort() },
      });
    return updated;
  });
  if (!row) throw notFound('api_key_not_found', 'No such active API key.');
  return row;
}

export function listOAuthClients(deps: CredentialServiceDeps, orgId: string) {
  return keys.listOAuthClients(deps.store.db, orgId);
}

export async function createOAuthClient(
  deps: CredentialServiceDeps,
  orgId: string,
  input: { name: string; scopes: string[]; attributes?: Record<string, string> },
  actor: Actor,
) {
  await assertOwnConnectors(
    deps,
    orgId,
    input.scopes.map((s) => CONNECTOR_SCOPE.exec(s)?.[1]).filter((id): id is string => Boolean(id)),
  );
  return deps.store.db.transaction(async (tx) => {
    const made = await credentials.createOAuthClient(tx, orgId, input);
    await recordAudit(tx, { orgId, action: 'oauth_client.created', actor, targetType: 'oauth_client', targetId: made.row.clientId });
    return made;
  });
}

export async function revokeOAuthClient(deps: CredentialServiceDeps, orgId: string, clientId: string, actor: Actor) {
  const row = await deps.store.db.transaction(async (tx) => {
    const revoked = await keys.revokeOAuthClient(tx, orgId, clientId);
    if (revoked) await recordAudit(tx, { orgId, action: 'oauth_client.revoked', actor, targetType: 'oauth_client', targetId: revoked.clientId });
    return revoked;
  });
  if (!row) throw notFound('oauth_client_not_found', 'No such active OAuth client.');
  return row;
}

/** Replaces an active client's attributes; its tokens carry them from their next request (read on every request). */
export async function updateOAuthClientAttributes(
  deps: CredentialServiceDeps,
  orgId: string,
  clientId: string,
  attributes: Record<string, string>,
  actor: Actor,
) {
  const row = await deps.store.db.transaction(async (tx) => {
    const updated = await keys.setOAuthClientAttributes(tx, orgId, clientId, attributes);
    if (updated) {
      const details = { attributes: Object.keys(attributes).sort() };
      await recordAudit(tx, { orgId, action: 'oauth_client.updated', actor, targetType: 'oauth_client', targetId: updated.clientId, details });
    }
    return updated;
  });
  if (!row) throw notFound('oauth_client_not_found', 'No such active OAuth client.');
  return row;
}
