/** The caller's org and its credentials (API keys, OAuth clients). */
import { actorOf } from '../principal.ts';
import { json } from '../errors.ts';
import * as credentials from '../orgs/credentials.ts';
import { getOrg as findOrg, updateOrg as changeOrg } from '../orgs/service.ts';
import { orgDirectory } from '../orgs/repository.ts';
import type { Handler, RequestContext } from './context.ts';
import { apiKeyView, createdApiKeyView, createdOAuthClientView, oauthClientView, orgView } from './views.ts';
import type { CreateApiKeyRequest, CreateOAuthClientRequest, OrgPatch, UpdateCredentialRequest } from '../../generated/client/types.gen.ts';

export const getOrg: Handler = async ({ principal, deps }) => json(orgView(await findOrg(deps, principal!.orgId), deps.config.customBurstPerSecond));

export const updateOrg: Handler = async ({ principal, deps, body }: RequestContext<OrgPatch>) =>
  json(orgView(await changeOrg(deps, principal!.orgId, { auditStatements: body.audit_statements }, actorOf(principal)), deps.config.customBurstPerSecond));

/** Names by id, for the console (audit actors and targets, requesters, usage by connector). */
export const getOrgDirectory: Handler = async ({ principal, deps }) => {
  const [org, names] = await Promise.all([findOrg(deps, principal!.orgId), orgDirectory(deps.store.db, principal!.orgId)]);
  return json({ org: orgView(org, deps.config.customBurstPerSecond), ...names });
};

export const listApiKeys: Handler = async ({ principal, deps }) => json({ api_keys: (await credentials.listApiKeys(deps, principal!.orgId)).map(apiKeyView) });

export const createApiKey: Handler = async ({ principal, deps, body }: RequestContext<CreateApiKeyRequest>) => {
  const created = await credentials.createApiKey(
    deps,
    principal!.orgId,
    { name: body.name, connectorIds: body.connector_ids ?? null, attributes: body.attributes ?? {} },
    actorOf(principal),
  );
  return json(createdApiKeyView(created), 201, { 'cache-control': 'no-store' });
};

export const revokeApiKey: Handler = async ({ principal, deps, params }) =>
  json(apiKeyView(await credentials.revokeApiKey(deps, principal!.orgId, params.keyId!, actorOf(principal))));

export const updateApiKey: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateCredentialRequest>) =>
  json(apiKeyView(await credentials.updateApiKeyAttributes(deps, principal!.orgId, params.keyId!, body.attributes, actorOf(principal))));

export const listOAuthClients: Handler = async ({ principal, deps }) =>
  json({ oauth_clients: (await credentials.listOAuthClients(deps, principal!.orgId)).map(oauthClientView) });

export const createOAuthClient: Handler = async ({ principal, deps, body }: RequestContext<CreateOAuthClientRequest>) => {
  const created = await credentials.createOAuthClient(
    deps,
    principal!.orgId,
    { name: body.name, scopes: body.scopes, attributes: body.attributes ?? {} },
    actorOf(principal),
  );
  return json(createdOAuthClientView(created), 201, { 'cache-control': 'no-store' });
};

export const revokeOAuthClient: Handler = async ({ principal, deps, params }) =>
  json(oauthClientView(await credentials.revokeOAuthClient(deps, principal!.orgId, params.clientId!, actorOf(principal))));

export const updateOAuthClient: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateCredentialRequest>) =>
  json(oauthClientView(await credentials.updateOAuthClientAttributes(deps, principal!.orgId, params.clientId!, body.attributes, actorOf(principal))));
