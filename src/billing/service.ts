/**
 * Subscription, usage and limits of an org (finance role). Usage is read from the counter the monthly quota is
 * enforced on (limits/quota.ts), so the two never disagree; the per-connector breakdown counts the period's audit
 * rows of calls that were counted against the quota: `tool.called` (immediate calls) and `approval.executed` /
 * `approval.failed` (held calls run after approval), so it adds up to the total (docs/quota-and-audit-accounting.md).
 */
import { and, count, eq, isNull, sql } from 'drizzle-orm';
import { trialExpired } from './trial.ts';
import { burstLimitFor, connectorLimitFor, monthlyQuotaFor, periodEnd, periodStart } from '../limits/plans.ts';
import { toolCallsInPeriod } from '../limits/quota.ts';
import type { UsageMeter } from '../limits/usage.ts';
import { conflict, notFound } from '../errors.ts';
import { rowsOf, type Queryable, type Store } from '../store/db.ts';
import { connectors, orgs } from '../store/schema.ts';
import type { Config } from '../config.ts';

export interface BillingDeps {
  store: Pick<Store, 'db'>;
  usage: Pick<UsageMeter, 'flush'>;
  config: Pick<Config, 'customBurstPerSecond'>;
}

async function orgRow(db: Queryable, orgId: string) {
  const [org] = await db.select().from(orgs).where(eq(orgs.id, orgId));
  if (!org) throw notFound('org_not_found', 'The org does not exist.');
  return org;
}

export async function subscription(deps: BillingDeps, orgId: string, now: Date = new Date()) {
  const org = await orgRow(deps.store.db, orgId);
  return {
    plan: org.plan,
    status: trialExpired(org, now) ? 'expired' : org.subscriptionStatus,
    trial_expires_at: org.trialExpiresAt?.toISOString() ?? null,
  };
}

/** Calls of unlimited plans are summed in memory for up to a second; this instance's are written first. */
async function countedCalls(deps: BillingDeps, orgId: string, now: Date): Promise<number> {
  await deps.usage.flush();
  return toolCallsInPeriod(deps.store.db, orgId, now);
}

export async function usage(deps: BillingDeps, orgId: string, now: Date = new Date()) {
  const start = periodStart(now);
  const toolCalls = await countedCalls(deps, orgId, now);
  const perConnector = rowsOf<{ connector_id: string | null; n: number | string }>(
    await deps.store.db.execute(sql`SELECT details->>'connector_id' AS connector_id, count(*) AS n FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'approval.executed', 'approval.failed') AND details->>'counted' = 'true'
        AND refused_at IS NULL AND created_at >= ${`${start}T00:00:00Z`}::timestamptz
      GROUP BY 1 ORDER BY 2 DESC, 1`),
  );
  return {
    period_start: `${start}T00:00:00.000Z`,
    period_end: periodEnd(now).toISOString(),
    tool_calls: toolCalls,
    by_connector: perConnector.map((r) => ({ connector_id: r.connector_id, tool_calls: Number(r.n) })),
  };
}

async function liveConnectorCount(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), isNull(connectors.archivedAt)));
  return Number(row?.n ?? 0);
}

export async function limits(deps: BillingDeps, orgId: string, now: Date = new Date()) {
  const org = await orgRow(deps.store.db, orgId);
  return {
    plan: org.plan,
    connectors_max: connectorLimitFor(org.plan),
    connectors_used: await liveConnectorCount(deps.store.db, orgId),
    monthly_tool_calls: monthlyQuotaFor(org.plan),
    tool_calls_used: await countedCalls(deps, orgId, now),
    burst_limit_per_second: burstLimitFor(org.plan, org.burstLimitPerSecond, deps.config.customBurstPerSecond),
  };
}

/**
 * Inside a connector's creation transaction: locks the org row (concurrent creations in one org queue here, so the
 * limit cannot be overshot by a race) and refuses when the plan's connector limit is reached.
 */
export async function assertConnectorAllowed(tx: Queryable, orgId: string): Promise<void> {
  // FOR NO KEY UPDATE, not FOR UPDATE: it serialises concurrent creations the same way, but does not conflict with the
  // KEY SHARE lock of a foreign-key check. FOR UPDATE did: a transaction holding the org's audit chain head and
  // inserting its audit row (FK to orgs) waited here, while this one waited for that head (a deadlock, 500s).
  const locked = rowsOf<{ plan: string }>(await tx.execute(sql`SELECT plan FROM orgs WHERE id = ${orgId} FOR NO KEY UPDATE`))[0];
  if (!locked) throw notFound('org_not_found', 'The org does not exist.');
  const max = connectorLimitFor(locked.plan);
  if (max === null) return;
  const used = await liveConnectorCount(tx, orgId);
  if (used >= max) {
    throw conflict('connector_limit_reached', `The ${locked.plan} plan allows ${max} connectors and the org has ${used}: archive one or upgrade the plan.`);
  }
}
