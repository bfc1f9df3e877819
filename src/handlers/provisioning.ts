/** Provisioning status of the org's MCP server, and the manual trigger. */
import { actorOf } from '../principal.ts';
import { json } from '../errors.ts';
import { catalogSize, provisionOrg as provision, requireOwnOrg } from '../orgs/service.ts';
import type { Handler } from './context.ts';
import { provisioningView } from './views.ts';

export const getProvisioningStatus: Handler = async ({ principal, deps, params }) => {
  const org = await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  return json(provisioningView(org, await catalogSize(deps, org), deps.config.publicUrl));
};

export const provisionOrg: Handler = async ({ principal, deps, params }) => {
  await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  const org = await provision(deps, params.orgId!, actorOf(principal));
  return json(provisioningView(org, await catalogSize(deps, org), deps.config.publicUrl));
};
