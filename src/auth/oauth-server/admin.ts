/** What an org's admins see and do about sign-ins from MCP clients: grants per person, registered clients, settings. */
import { recordAudit, type Actor } from '../../audit/repository.ts';
import { notFound, unprocessable } from '../../errors.ts';
import type { Db } from '../../store/db.ts';
import { randomSecret } from '../../util/crypto.ts';
import { redirectUrisProblem } from './redirect-uris.ts';
import {
  insertRegisteredClient,
  listGrants,
  listRegisteredClients,
  registrationEnabled,
  revokeGrant,
  revokeRegisteredClient,
  setRegistrationEnabled,
  type GrantRow,
  type RegisteredClientRow,
} from './repository.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function grantView(g: GrantRow) {
  return {
    id: g.id,
    client_id: g.clientId,
    client_kind: g.clientKind,
    client_name: g.clientName,
    subject: g.subject,
    email: g.email,
    roles: g.roles,
    scopes: g.scopes,
    created_at: g.createdAt.toISOString(),
    last_used_at: iso(g.lastUsedAt),
    revoked_at: iso(g.revokedAt),
    revoked_reason: g.revokedReason,
  };
}

function clientView(c: RegisteredClientRow) {
  return {
    client_id: c.clientId,
    kind: c.kind,
    client_name: c.clientName,
    redirect_uris: c.redirectUris,
    created_at: c.createdAt.toISOString(),
    revoked_at: iso(c.revokedAt),
  };
}

export async function listSignIns(db: Db, orgId: string, subject?: string) {
  const rows = await listGrants(db, orgId);
  return { grants: rows.filter((g) => subject === undefined || g.subject === subject || g.email === subject).map(grantView) };
}

export async function revokeSignIn(db: Db, orgId: string, grantId: string, actor: Actor) {
  const row = await revokeGrant(db, grantId, 'revoked_by_admin', orgId);
  if (!row) throw notFound('grant_not_found', 'No active grant of this org has this id.');
  await recordAudit(db, { orgId, action: 'mcp_grant.revoked', actor, targetType: 'mcp_grant', targetId: grantId, details: { reason: 'revoked_by_admin' } });
  return grantView(row);
}

export async function listClients(db: Db, orgId: string) {
  return { registration_enabled: await registrationEnabled(db, orgId), clients: (await listRegisteredClients(db, orgId)).map(clientView) };
}

export async function preregisterClient(db: Db, orgId: string, input: { client_name: string; redirect_uris: string[] }, actor: Actor) {
  const problem = redirectUrisProblem(input.redirect_uris);
  if (problem) throw unprocessable('invalid_redirect_uri', `The ${problem}`);
  const clientId = `mcp_${randomSecret(18)}`;
  const row = await insertRegisteredClient(db, { orgId, clientId, kind: 'preregistered', clientName: input.client_name, redirectUris: input.redirect_uris });
  await recordAudit(db, { orgId, action: 'mcp_client.created', actor, targetType: 'mcp_client', targetId: clientId });
  return clientView(row);
}

export async function revokeClient(db: Db, orgId: string, clientId: string, actor: Actor) {
  const row = await revokeRegisteredClient(db, orgId, clientId);
  if (!row) throw notFound('client_not_found', 'No active registered client of this org has this id.');
  await recordAudit(db, { orgId, action: 'mcp_client.revoked', actor, targetType: 'mcp_client', targetId: clientId });
  return clientView(row);
}

export async function setRegistration(db: Db, orgId: string, enabled: boolean, actor: Actor) {
  await setRegistrationEnabled(db, orgId, enabled);
  await recordAudit(db, { orgId, action: 'mcp_sign_in.updated', actor, details: { registration_enabled: enabled } });
  return listClients(db, orgId);
}
