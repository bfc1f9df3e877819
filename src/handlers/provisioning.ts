/** Provisioning status of the org's MCP server, and the manual trigger. */
import { actorOf } from '../auth/principal.ts';
import { json } from '../errors.ts';
import type { Handler } from './context.ts';
import { provisionOrg as provision, provisioningStatus, requireOwnOrg } from '../orgs/service.ts';

export const getProvisioningStatus: Handler = async ({ principal, deps, params }) => {
  const org = await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  return json(await provisioningStatus(deps, org));
};

export const provisionOrg: Handler = async ({ principal, deps, params }) => {
  await requireOwnOrg(deps, params.orgId!, principal!.orgId);
  const org = await provision(deps, params.orgId!, actorOf(principal));
  return json(await provisioningStatus(deps, org));
};
