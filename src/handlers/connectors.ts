/** Connectors of the caller's org. */
import { actorOf } from '../principal.ts';
import * as service from '../connectors/service.ts';
import { json } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import { connectorView } from './views.ts';
import type { CreateConnectorRequest, TestConnectorRequest, UpdateConnectorRequest } from '../../generated/client/types.gen.ts';

export const listConnectors: Handler = async ({ principal, deps, query }) =>
  json({ connectors: (await service.listConnectors(deps, principal!.orgId, query.status as string | undefined)).map(connectorView) });

export const createConnector: Handler = async ({ principal, deps, body }: RequestContext<CreateConnectorRequest>) =>
  json(connectorView(await service.createConnector(deps, principal!.orgId, body, actorOf(principal))), 201);

export const getConnector: Handler = async ({ principal, deps, params }) =>
  json(connectorView(await service.getConnector(deps, principal!.orgId, params.connectorId!)));

export const updateConnector: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateConnectorRequest>) =>
  json(connectorView(await service.updateConnector(deps, principal!.orgId, params.connectorId!, body, actorOf(principal))));

export const archiveConnector: Handler = async ({ principal, deps, params }) => {
  await service.archiveConnector(deps, principal!.orgId, params.connectorId!, actorOf(principal));
  return json({ archived: true, id: params.connectorId });
};

export const revalidateConnector: Handler = async ({ principal, deps, params }) => {
  const row = await service.revalidateConnector(deps, principal!.orgId, params.connectorId!, actorOf(principal));
  return json({ status: 'validating', id: row.id }, 202);
};

/** POST /api/connectors/test: the settings tried, nothing saved (a failed connection is ok false, with its reason). */
export const testConnector: Handler = async ({ principal, deps, body }: RequestContext<TestConnectorRequest>) =>
  json(
    await service.testConnection(deps, principal!.orgId, {
      type: body.type,
      config: body.config as unknown as Record<string, unknown>,
      ...(body.credential !== undefined ? { credential: body.credential } : {}),
      ...(body.connector_id ? { connectorId: body.connector_id } : {}),
    }),
    200,
    { 'cache-control': 'no-store' },
  );
