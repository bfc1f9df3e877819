/**
 * Subscription, usage and limits of an org (finance role). Usage is read from the counter the monthly quota is
 * enforced on (limits/quota.ts), so the two never disagree; the per-connector breakdown counts the period's audit
 * rows of calls that were counted against the quota: `tool.called` (immediate calls) and `approval.executed` /
 * `approval.failed` (held calls run after approval), so it adds up to the total (docs/quota-and-audit-accounting.md).
 */
import { trialExpired } from './trial.ts';
import { burstLimitFor, connectorLimitFor, monthlyQuotaFor, periodEnd, periodStart, planPriceFor } from '../limits/plans.ts';
import { agentName, agentNames, countedCallsByAgent } from '../audit/agent-insights-statements.ts';
import { chargesFor } from './charges.ts';
import { toolCallsInPeriod } from '../limits/quota.ts';
import type { UsageMeter } from '../limits/usage.ts';
import { conflict, notFound } from '../errors.ts';
import { cancellable, type Queryable, type Store } from '../store/db.ts';
import { countedCallsByConnector, findOrgRow, liveConnectorCount, lockOrgPlan } from './repository.ts';
import type { Config } from '../config.ts';

export interface BillingDeps {
  store: Pick<Store, 'db' | 'kind'>;
  usage: Pick<UsageMeter, 'flush'>;
  config: Pick<Config, 'customBurstPerSecond'>;
}

async function orgRow(db: Queryable, orgId: string) {
  const org = await findOrgRow(db, orgId);
  if (!org) throw notFound('org_not_found', 'The org does not exist.');
  return org;
}

/** The plan's list price as the contract words it (decision 0392); null without one (a contract sets it). */
function priceView(plan: string) {
  const price = planPriceFor(plan);
  return price
    ? {
        currency: price.currency,
        monthly_base: price.monthlyBase,
        included_tool_calls: price.includedToolCalls,
        overage_block: price.overageBlock,
        overage_per_block: price.overagePerBlock,
      }
    : null;
}

export async function subscription(deps: BillingDeps, orgId: string, now: Date = new Date()) {
  const org = await orgRow(deps.store.db, orgId);
  return {
    plan: org.plan,
    status: trialExpired(org, now) ? 'expired' : org.subscriptionStatus,
    trial_expires_at: org.trialExpiresAt?.toISOString() ?? null,
    price: priceView(org.plan),
  };
}

/** Counted calls of the period per agent, with the agent's name (finance users cannot read the org directory). */
async function usageByAgent(db: Queryable, orgId: string, start: Date) {
  const counted = await countedCallsByAgent(db, orgId, start);
  const names = await agentNames(
    db,
    orgId,
    counted.map((c) => c.agent),
  );
  return counted.map((c) => ({ agent: { ...c.agent, name: agentName(names, c.agent) }, tool_calls: c.calls }));
}

/** Calls of unlimited plans are summed in memory for up to a second; this instance's are written first. */
async function countedCalls(deps: BillingDeps, orgId: string, now: Date): Promise<number> {
  await deps.usage.flush();
  return toolCallsInPeriod(deps.store.db, orgId, now);
}

/**
 * The month's usage, per connector and per agent, and what it is charged so far; `signal` (the HTTP caller going
 * away) cancels the breakdowns' reads.
 */
export async function usage(deps: BillingDeps, orgId: string, now: Date = new Date(), signal?: AbortSignal) {
  const start = periodStart(now);
  const sub = await subscription(deps, orgId, now);
  const toolCalls = await countedCalls(deps, orgId, now);
  const [perConnector, perAgent] = await cancellable(deps.store, signal, (db) =>
    Promise.all([countedCallsByConnector(db, orgId, start), usageByAgent(db, orgId, new Date(`${start}T00:00:00Z`))]),
  );
  return {
    period_start: `${start}T00:00:00.000Z`,
    period_end: periodEnd(now).toISOString(),
    tool_calls: toolCalls,
    by_connector: perConnector.map((r) => ({ connector_id: r.connectorId, connector_name: r.connectorName, tool_calls: r.calls })),
    by_agent: perAgent,
    charges: chargesFor(sub.plan, sub.status, toolCalls),
  };
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
  // FOR NO KEY UPDATE (repository.ts lockOrgPlan says why not FOR UPDATE).
  const plan = await lockOrgPlan(tx, orgId);
  if (plan === undefined) throw notFound('org_not_found', 'The org does not exist.');
  const max = connectorLimitFor(plan);
  if (max === null) return;
  const used = await liveConnectorCount(tx, orgId);
  if (used >= max) {
    throw conflict('connector_limit_reached', `The ${plan} plan allows ${max} connectors and the org has ${used}: archive one or upgrade the plan.`);
  }
}
