/** GET /api/billing/subscription, /usage and /limits (finance role; admin and org-level tokens pass). */
import * as billing from '../billing/service.ts';
import { json } from '../errors.ts';
import type { Handler } from './context.ts';

export const getSubscription: Handler = async ({ principal, deps }) => json(await billing.subscription(deps, principal!.orgId));
export const getUsage: Handler = async ({ principal, deps, request }) => json(await billing.usage(deps, principal!.orgId, new Date(), request.signal));
export const getLimits: Handler = async ({ principal, deps }) => json(await billing.limits(deps, principal!.orgId));
