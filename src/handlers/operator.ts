/** The operator API, guarded by TOOLGATE_OPERATOR_TOKEN: onboarding, and the administration of any org by its slug. */
import { json } from '../errors.ts';
import { revalidateConnector } from '../connectors/service.ts';
import * as credentials from '../orgs/credentials.ts';
import { changeOrg, listOrgs, orgBySlug, orgDetail } from '../orgs/operator.ts';
import { onboardOrg } from '../orgs/service.ts';
import type { OrgRow } from '../orgs/repository.ts';
import { auditExportResponse } from './audit.ts';
import type { Handler, RequestContext } from './context.ts';
import { mailMemberLink } from './member-mail.ts';
import { apiKeyView, onboardingView, operatorOrgView } from './views.ts';
import type { CreateOrgRequest, OperatorOrgDetail, UpdateOperatorOrgRequest } from '../../generated/client/types.gen.ts';

const OPERATOR = { type: 'operator', id: null } as const;
const NO_STORE = { 'cache-control': 'no-store' };

export const createOrg: Handler = async ({ deps, body }: RequestContext<CreateOrgRequest>) => {
  const created = await onboardOrg(
    deps,
    {
      slug: body.slug,
      name: body.name,
      plan: body.plan,
      trialDays: body.trial_days,
      burstLimitPerSecond: body.burst_limit_per_second,
      ...(body.admin_email ? { admin: { email: body.admin_email, publicUrl: deps.config.publicUrl } } : {}),
    },
    OPERATOR,
  );
  if (created.admin) mailMemberLink(deps, created.org.id, created.admin.member.id, created.admin.invitation);
  return json(onboardingView(created, deps.config), 201, NO_STORE);
};

export const listOperatorOrgs: Handler = async ({ deps, query }) => {
  const limit = typeof query.limit === 'number' ? query.limit : 50;
  const page = await listOrgs(deps, typeof query.cursor === 'string' ? query.cursor : null, limit);
  return json({ orgs: page.orgs.map((org) => operatorOrgView(org, deps.config.customBurstPerSecond)), next_cursor: page.next }, 200, NO_STORE);
};

async function detailResponse(deps: RequestContext['deps'], org: OrgRow): Promise<Response> {
  const detail = await orgDetail(deps, org);
  const body: OperatorOrgDetail = { org: operatorOrgView(detail.org, deps.config.customBurstPerSecond), limits: detail.limits as OperatorOrgDetail['limits'] };
  return json(body, 200, NO_STORE);
}

export const getOperatorOrg: Handler = async ({ deps, params }) => detailResponse(deps, await orgBySlug(deps, params.slug!));

export const updateOperatorOrg: Handler = async ({ deps, params, body }: RequestContext<UpdateOperatorOrgRequest>) =>
  detailResponse(deps, await changeOrg(deps, params.slug!, { plan: body.plan, suspended: body.suspended }));

export const listOperatorApiKeys: Handler = async ({ deps, params }) => {
  const org = await orgBySlug(deps, params.slug!);
  return json({ api_keys: (await credentials.listApiKeys(deps, org.id)).map(apiKeyView) }, 200, NO_STORE);
};

export const revokeOperatorApiKey: Handler = async ({ deps, params }) => {
  const org = await orgBySlug(deps, params.slug!);
  return json(apiKeyView(await credentials.revokeApiKey(deps, org.id, params.keyId!, OPERATOR)));
};

export const revalidateOperatorConnector: Handler = async ({ deps, params }) => {
  const org = await orgBySlug(deps, params.slug!);
  const row = await revalidateConnector(deps, org.id, params.connectorId!, OPERATOR);
  return json({ status: 'validating', id: row.id }, 202);
};

export const exportOperatorAudit: Handler = async ({ deps, params, query }) => auditExportResponse(deps, (await orgBySlug(deps, params.slug!)).id, query);
