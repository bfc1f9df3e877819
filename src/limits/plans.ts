/** Plan limits from the spec: monthly tool calls and per-second burst. */
import type { Plan } from '../orgs/repository.ts';

export interface PlanLimits {
  /** Tool calls per calendar month (UTC); null is unlimited. */
  monthlyToolCalls: number | null;
  /** Calls per second; null means the org's custom value (or the configured default for custom plans). */
  burstPerSecond: number | null;
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  starter: { monthlyToolCalls: 20_000, burstPerSecond: 20 },
  growth: { monthlyToolCalls: 50_000, burstPerSecond: 50 },
  scale: { monthlyToolCalls: null, burstPerSecond: 100 },
  enterprise: { monthlyToolCalls: null, burstPerSecond: null },
  standalone: { monthlyToolCalls: null, burstPerSecond: null },
};

/** The burst limit in force: the org's own value, else the plan's, else the configured custom default. */
export function burstLimitFor(plan: string, orgBurst: number | null, customDefault: number): number {
  if (orgBurst !== null) return orgBurst;
  return PLAN_LIMITS[plan as Plan]?.burstPerSecond ?? customDefault;
}

export function monthlyQuotaFor(plan: string): number | null {
  return PLAN_LIMITS[plan as Plan]?.monthlyToolCalls ?? null;
}

/** First day of the UTC calendar month holding `at`: the billing period the count belongs to. */
export function periodStart(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}
