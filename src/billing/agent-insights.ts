/**
 * The Overview's figures per agent (issue 41 item 3, decision 0390): calls, refusals, errors and latency percentiles
 * over the insights' window, and the agent's share of the monthly quota: its calls counted this billing period over
 * the plan's monthly tool calls (null on a plan without a quota). Here, not in audit/, because the share needs the plan.
 */
import { agentFigures, agentName, agentNames, countedCallsByAgent } from '../audit/agent-insights-statements.ts';
import { monthlyQuotaFor, periodStart } from '../limits/plans.ts';
import type { Queryable } from '../store/db.ts';
import { findOrgRow } from './repository.ts';

/** Agents listed at most (most calls first). */
const AGENTS_LISTED = 100;

const key = (agent: { type: string; id: string | null }) => `${agent.type}\u0000${agent.id ?? ''}`;

export async function agentInsights(db: Queryable, orgId: string, since: Date, now: Date) {
  const period = new Date(`${periodStart(now)}T00:00:00Z`);
  const [org, figures, counted] = await Promise.all([
    findOrgRow(db, orgId),
    agentFigures(db, orgId, since, AGENTS_LISTED),
    countedCallsByAgent(db, orgId, period),
  ]);
  const names = await agentNames(
    db,
    orgId,
    figures.map((f) => f.agent),
  );
  const quota = org ? monthlyQuotaFor(org.plan) : null;
  const periodCalls = new Map(counted.map((c) => [key(c.agent), c.calls]));
  return figures.map((f) => {
    const used = periodCalls.get(key(f.agent)) ?? 0;
    return {
      ...f,
      agent: { ...f.agent, name: agentName(names, f.agent) },
      period_tool_calls: used,
      quota_share: quota ? used / quota : null,
    };
  });
}
