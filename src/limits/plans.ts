/**
 * The plans and their limits from the spec (monthly tool calls, per-second burst): the one table of plans. The store's
 * CHECK constraint and openapi.yaml's Plan enum are checked against it by test/store-schema.test.ts.
 */

export interface PlanLimits {
  /** Tool calls per calendar month (UTC); null is unlimited. */
  monthlyToolCalls: number | null;
  /** Calls per second; null means the org's custom value (or the configured default for custom plans). */
  burstPerSecond: number | null;
  /**
   * REST calls per second per credential (one OAuth client, one IdP user): not in the spec, chosen so that the console
   * (a page load fans out to at most ~8 calls) and scripts that walk lists never meet it (docs/rate-limits.md).
   */
  restPerSecond: number;
}

export const PLAN_LIMITS = {
  starter: { monthlyToolCalls: 20_000, burstPerSecond: 20, restPerSecond: 20 },
  growth: { monthlyToolCalls: 50_000, burstPerSecond: 50, restPerSecond: 40 },
  scale: { monthlyToolCalls: null, burstPerSecond: 100, restPerSecond: 100 },
  enterprise: { monthlyToolCalls: null, burstPerSecond: null, restPerSecond: 200 },
  standalone: { monthlyToolCalls: null, burstPerSecond: null, restPerSecond: 200 },
} as const satisfies Record<string, PlanLimits>;

export type Plan = keyof typeof PLAN_LIMITS;
export const PLANS = Object.keys(PLAN_LIMITS) as Plan[];

export function isPlan(value: string): value is Plan {
  return Object.hasOwn(PLAN_LIMITS, value);
}

/** The burst limit in force: the org's own value, else the plan's, else the configured custom default. */
export function burstLimitFor(plan: string, orgBurst: number | null, customDefault: number): number {
  if (orgBurst !== null) return orgBurst;
  return isPlan(plan) ? (PLAN_LIMITS[plan].burstPerSecond ?? customDefault) : customDefault;
}

/** REST calls per second per credential of a plan (an unknown plan gets the smallest). */
export function restLimitFor(plan: string): number {
  return isPlan(plan) ? PLAN_LIMITS[plan].restPerSecond : PLAN_LIMITS.starter.restPerSecond;
}

export function monthlyQuotaFor(plan: string): number | null {
  return isPlan(plan) ? PLAN_LIMITS[plan].monthlyToolCalls : null;
}

/** First day of the UTC calendar month holding `at`: the billing period the count belongs to. */
export function periodStart(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/**
 * Live (non-archived) connectors each plan allows; null is unlimited. Enforced when a connector is created
 * (409 connector_limit_reached); docs/decisions/0096-connector-limits-per-plan.md gives the reasons for the figures.
 */
export const CONNECTOR_LIMITS: Record<Plan, number | null> = {
  starter: 3,
  growth: 10,
  scale: 50,
  enterprise: null,
  standalone: null,
};

export function connectorLimitFor(plan: string): number | null {
  return isPlan(plan) ? CONNECTOR_LIMITS[plan] : null;
}

/** First instant of the month after the one holding `at`: the end (exclusive) of its billing period. */
export function periodEnd(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}

/**
 * What a plan costs (decision 0392): a monthly base in the currency's minor unit (cents), the tool calls it includes,
 * and a price per started block of calls beyond them. Starter and Growth stop at their quota (a call beyond it is
 * refused), so they have no overage; Scale has no quota and charges its calls beyond the included ones. Enterprise
 * and Standalone have no list price (a contract sets it): null. The spec gives no prices: these are the gateway's list.
 */
export interface PlanPrice {
  currency: 'USD';
  monthlyBase: number;
  includedToolCalls: number;
  overageBlock: number;
  overagePerBlock: number;
}

export const PLAN_PRICES: Record<Plan, PlanPrice | null> = {
  starter: { currency: 'USD', monthlyBase: 4_900, includedToolCalls: 20_000, overageBlock: 1_000, overagePerBlock: 0 },
  growth: { currency: 'USD', monthlyBase: 14_900, includedToolCalls: 50_000, overageBlock: 1_000, overagePerBlock: 0 },
  scale: { currency: 'USD', monthlyBase: 49_900, includedToolCalls: 500_000, overageBlock: 1_000, overagePerBlock: 50 },
  enterprise: null,
  standalone: null,
};

export function planPriceFor(plan: string): PlanPrice | null {
  return isPlan(plan) ? PLAN_PRICES[plan] : null;
}
