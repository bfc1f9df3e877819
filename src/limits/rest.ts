/**
 * REST calls per credential: a one-second window per credential (shared across instances through the burst limiter,
 * per instance while Redis is down), sized by the org's plan (limits/plans.ts).
 */
import { AppError } from '../errors.ts';
import type { Principal } from '../principal.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import type { BurstLimiter } from './burst.ts';
import { restLimitFor } from './plans.ts';

export interface RestLimitDeps {
  limiter: BurstLimiter;
  /** The plan of an org (cached by the caller; undefined when the org is gone). */
  planOf(orgId: string): Promise<string | undefined>;
}

/** One window per credential: an OAuth client, an IdP user, of one org. */
const restCredentialKey = (principal: Principal) => `rest:${principal.orgId}:${principal.kind}:${principal.actorId}`;

/** Counts one REST call of `principal`; a call over its plan's limit is a 429 with Retry-After. */
export async function takeRestCall(deps: RestLimitDeps, principal: Principal): Promise<void> {
  const limit = restLimitFor((await deps.planOf(principal.orgId)) ?? '');
  const decision = await deps.limiter.take(restCredentialKey(principal), limit);
  if (decision.allowed) return;
  countLimitRefusal('rest');
  throw new AppError(
    429,
    'rate_limited',
    `This credential may make ${limit} REST calls per second on its plan; retry after ${decision.retryAfterSeconds} second(s).`,
    {
      'retry-after': String(decision.retryAfterSeconds),
    },
  );
}
