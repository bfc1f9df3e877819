/** Tool settings of the caller's org (the orgId of the path must be the token's org). */
import { actorOf, roleSatisfies } from '../principal.ts';
import { forbidden, json } from '../errors.ts';
import { requireOwnOrg } from '../orgs/service.ts';
import { listToolSettings, updateToolSettings } from '../tools/settings.ts';
import type { Handler, RequestContext } from './context.ts';
import { toolSettingsView } from './views.ts';
import type { UpdateToolRequest } from '../../generated/client/types.gen.ts';

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
