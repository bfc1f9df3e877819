/**
 * SQL of the per-agent figures (issue 41 item 3, decisions 0390, 0391): each agent's calls, refusals, errors and
 * latency percentiles over a window, its calls counted against the quota over a billing period, and its name. An
 * agent is the actor of its rows (`api_key`, `oauth_client`, `user` for a member's e-mail or an IdP subject), as
 * `GET /api/audit?actor=<type>:<id>` selects them. Everything is read from the roll-ups (audit_rollups,
 * audit_rollup_agent_latency; daily for a window that starts at a day, decision 0412) that the audit trigger keeps,
 * never from the log.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { percentileOf, rollupRows } from './insights-statements.ts';

export interface AgentRef {
  type: string;
  /** null for an actor without one (the gateway itself: approved calls it ran). */
  id: string | null;
}

export interface AgentFigures {
  agent: AgentRef;
  calls: number;
  refusals: number;
  errors: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

const agentOf = (type: string, id: string): AgentRef => ({ type, id: id === '' ? null : id });
const keyOf = (type: string, id: string) => `${type}\u0000${id}`;
const ms = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);

/** Each agent's latency percentiles over the window, from (bucket, count) rows, as percentile_cont would over them. */
async function agentLatencies(db: Queryable, orgId: string, since: Date) {
  const rows = rowsOf<{ actor_type: string; actor_id: string; duration_ms: number | string; calls: number | string }>(
    await db.execute(sql`SELECT actor_type, actor_id, duration_ms, sum(calls) AS calls FROM ${rollupRows('audit_rollup_agent_latency', orgId, since)}
      GROUP BY actor_type, actor_id, duration_ms HAVING sum(calls) > 0 ORDER BY actor_type, actor_id, duration_ms`),
  );
  const groups = new Map<string, { values: [number, number][]; total: number }>();
  for (const r of rows) {
    const key = keyOf(r.actor_type, r.actor_id);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { values: [], total: 0 }));
    group.values.push([Number(r.duration_ms), Number(r.calls)]);
    group.total += Number(r.calls);
  }
  return (type: string, id: string) => {
    const group = groups.get(keyOf(type, id));
    if (!group) return { p50_ms: null, p95_ms: null };
    return { p50_ms: ms(percentileOf(group.values, group.total, 0.5)), p95_ms: ms(percentileOf(group.values, group.total, 0.95)) };
  };
}

/**
 * The window's agents, most calls first (at most `limit`): calls are `tool.called` rows not refused, refusals
 * `tool.call_refused` rows and refused `tool.called` rows, as in the insights' totals.
 */
export async function agentFigures(db: Queryable, orgId: string, since: Date, limit: number): Promise<AgentFigures[]> {
  const [counts, latency] = await Promise.all([
    db.execute(sql`SELECT actor_type, actor_id,
        coalesce(sum(events) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused'), 0) AS calls,
        coalesce(sum(events) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused'), 0) AS refusals,
        coalesce(sum(events) FILTER (WHERE action = 'tool.called' AND outcome = 'error'), 0) AS errors
      FROM ${rollupRows('audit_rollups', orgId, since)}
      WHERE action IN ('tool.called', 'tool.call_refused')
      GROUP BY actor_type, actor_id HAVING sum(events) > 0
      ORDER BY calls DESC, refusals DESC, actor_type, actor_id LIMIT ${limit}`),
    agentLatencies(db, orgId, since),
  ]);
  return rowsOf<{ actor_type: string; actor_id: string; calls: string | number; refusals: string | number; errors: string | number }>(counts).map((r) => ({
    agent: agentOf(r.actor_type, r.actor_id),
    calls: Number(r.calls),
    refusals: Number(r.refusals),
    errors: Number(r.errors),
    ...latency(r.actor_type, r.actor_id),
  }));
}

/**
 * Calls counted against the quota since `start` (the billing period's first instant) per agent, most first: the
 * rows billing's usage by connector counts (`tool.called`, `approval.executed`, `approval.failed` marked counted). An
 * approved call's row is the gateway's (actor `system`), so approved calls count under it.
 */
export async function countedCallsByAgent(db: Queryable, orgId: string, start: Date): Promise<{ agent: AgentRef; calls: number }[]> {
  const rows = rowsOf<{ actor_type: string; actor_id: string; n: string | number }>(
    await db.execute(sql`SELECT actor_type, actor_id, sum(counted) AS n FROM ${rollupRows('audit_rollups', orgId, start)}
      WHERE action IN ('tool.called', 'approval.executed', 'approval.failed')
      GROUP BY actor_type, actor_id HAVING sum(counted) > 0 ORDER BY n DESC, actor_type, actor_id`),
  );
  return rows.map((r) => ({ agent: agentOf(r.actor_type, r.actor_id), calls: Number(r.n) }));
}

/**
 * The names of agents as the console shows them: an API key's or OAuth client's name (revoked ones too; null when it
 * is gone), a person's e-mail or IdP subject (their id). Keyed `<type>\0<id>`.
 */
export async function agentNames(db: Queryable, orgId: string, agents: readonly AgentRef[]): Promise<Map<string, string | null>> {
  const names = new Map<string, string | null>();
  const keys = agents.filter((a) => a.id !== null && (a.type === 'api_key' || a.type === 'oauth_client'));
  for (const a of agents) if (a.id !== null && a.type !== 'api_key' && a.type !== 'oauth_client') names.set(keyOf(a.type, a.id), a.id);
  if (keys.length === 0) return names;
  const values = sql.join(
    keys.map((a) => sql`(${a.type}, ${a.id})`),
    sql`, `,
  );
  const rows = rowsOf<{ actor_type: string; actor_id: string; name: string | null }>(
    await db.execute(sql`SELECT a.actor_type, a.actor_id, CASE a.actor_type
        WHEN 'api_key' THEN (SELECT k.name FROM api_keys k WHERE k.org_id = ${orgId} AND k.id::text = a.actor_id)
        ELSE (SELECT c.name FROM oauth_clients c WHERE c.org_id = ${orgId} AND c.client_id = a.actor_id) END AS name
      FROM (VALUES ${values}) AS a(actor_type, actor_id)`),
  );
  for (const r of rows) names.set(keyOf(r.actor_type, r.actor_id), r.name);
  return names;
}

/** The name of an agent in a map of `agentNames`. */
export const agentName = (names: Map<string, string | null>, agent: AgentRef): string | null =>
  agent.id === null ? null : (names.get(keyOf(agent.type, agent.id)) ?? null);
