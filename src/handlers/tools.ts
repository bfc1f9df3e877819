/** Tool settings of the caller's org (the orgId of the path must be the token's org), and saved-statement tools. */
import { actorOf, roleSatisfies } from '../principal.ts';
import { forbidden, json } from '../errors.ts';
import { requireOwnOrg } from '../orgs/service.ts';
import { listToolSettings, updateToolSettings } from '../tools/settings.ts';
import type { Handler, RequestContext } from './context.ts';
import { toolSettingsView } from './views.ts';
import type { BulkToolUpdateRequest, SavedToolRequest, UpdateToolRequest } from '../../generated/client/types.gen.ts';
import * as bulk from '../tools/bulk.ts';
import * as saved from '../tools/saved.ts';

export const listTools: Handler = async ({ principal, deps, params, query }) => {
  const org = await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  return json({ tools: (await listToolSettings(deps, org.id, query.connector_id as string | undefined)).map(toolSettingsView) });
};

export const updateToolMetadata: Handler = async ({ principal, deps, params, body }: RequestContext<UpdateToolRequest>) => {
  const org = await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  // A policy keeps data from callers: changing it is an admin's decision (docs/decisions/0271-tool-policy-admin-only.md).
  if (body.policy !== undefined && !principal!.orgLevel && !roleSatisfies(principal!.roles, 'admin')) {
    throw forbidden('insufficient_role', 'Changing a tool policy needs the admin role.');
  }
  return json(toolSettingsView(await updateToolSettings(deps, org.id, params.toolId!, body, actorOf(principal))));
};

/** PATCH /api/mcp/{orgId}/tools: enable or disable many tools at once (decision 0304). */
export const updateToolsBulk: Handler = async ({ principal, deps, params, body }: RequestContext<BulkToolUpdateRequest>) => {
  const org = await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  const { updated, tools } = await bulk.updateToolsBulk(deps, org.id, body, actorOf(principal));
  return json({ updated, tools: tools.map(toolSettingsView) });
};

export const listSavedTools: Handler = async ({ principal, deps, params }) =>
  json({ saved_tools: await saved.listSavedTools(deps, principal!.orgId, params.connectorId!) });

export const createSavedTool: Handler = async ({ principal, deps, params, body }: RequestContext<SavedToolRequest>) =>
  json(await saved.createSavedTool(deps, principal!.orgId, params.connectorId!, body, actorOf(principal)), 201);

export const getSavedTool: Handler = async ({ principal, deps, params }) =>
  json(await saved.getSavedTool(deps, principal!.orgId, params.connectorId!, params.toolId!));

export const updateSavedTool: Handler = async ({ principal, deps, params, body }: RequestContext<SavedToolRequest>) =>
  json(await saved.updateSavedTool(deps, principal!.orgId, params.connectorId!, params.toolId!, body, actorOf(principal)));

export const deleteSavedTool: Handler = async ({ principal, deps, params }) => {
  await saved.deleteSavedTool(deps, principal!.orgId, params.connectorId!, params.toolId!, actorOf(principal));
  return json({ deleted: true, id: params.toolId });
};

export const listSavedToolVersions: Handler = async ({ principal, deps, params }) =>
  json({ versions: await saved.listSavedToolVersions(deps, principal!.orgId, params.connectorId!, params.toolId!) });
