/** Operator-only onboarding, guarded by TOOLGATE_OPERATOR_TOKEN. */
import { json } from '../errors.ts';
import { onboardOrg } from '../orgs/service.ts';
import type { Handler, RequestContext } from './context.ts';
import { onboardingView } from './views.ts';
import type { CreateOrgRequest } from '../../generated/client/types.gen.ts';

export const createOrg: Handler = async ({ deps, body }: RequestContext<CreateOrgRequest>) => {
  const created = await onboardOrg(
    deps,
    { slug: body.slug, name: body.name, plan: body.plan, trialDays: body.trial_days, burstLimitPerSecond: body.burst_limit_per_second },
    { type: 'operator', id: null },
  );
  return json(onboardingView(created, deps.config), 201, { 'cache-control': 'no-store' });
};
