/**
 * SQL of the insights (GET /api/insights): calls, refusals and latency per tool and over time, read from the org's
 * roll-ups (audit_rollups, audit_rollup_latency: migration 23, decision 0347; their daily level, migration 30,
 * decision 0412), which a trigger on audit_events keeps as rows are sealed into the chain, so a poll reads a few rows
 * per day (a window that starts at a day) or per hour of the window instead of the log.
 * `tool.called` rows are calls (success, error, held), and their `details.duration_ms` the latency; `tool.call_refused`
 * rows and `tool.called` rows with outcome `refused` (a statement the guard or a policy refused; issue 41) are
 * refusals. The figures are those a scan of the window's sealed rows gives (test/audit-rollups.test.ts): the
 * latency roll-up keeps each duration's logarithmic bucket (`audit_latency_bucket`, 20 per decade) with its count, so
 * the percentiles are those of the bucketed durations, within 6% of the exact ones.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { ROLLUP_HOURS_KEPT_MS } from './rollup-fold-statements.ts';

export interface InsightFigures {
  calls: number;
  refusals: number;
  errors: number;
  held: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

interface FigureRow {
  tool_name: string | null;
  connector_id: string | null;
  /** GROUPING(tool, connector): 0 a tool's row; 2 a connector's (every tool of it); 3 the whole window. */
  level: number | string;
  calls: number | string;
  refusals: number | string;
  errors: number | string;
  held: number | string;
  p50: number | string | null;
  p95: number | string | null;
}

const ms = (v: number | string | null) => (v === null ? null : Math.round(Number(v) * 10) / 10);
const figures = (r: FigureRow): InsightFigures => ({
  calls: Number(r.calls),
  refusals: Number(r.refusals),
  errors: Number(r.errors),
  held: Number(r.held),
  p50_ms: ms(r.p50),
  p95_ms: ms(r.p95),
});

const DAY_MS = 86_400_000;

const COLUMNS = {
  audit_rollups: 'action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted',
  audit_rollup_latency: 'tool_name, connector_id, duration_ms, calls',
  audit_rollup_agent_latency: 'actor_type, actor_id, duration_ms, calls',
} as const;

/**
 * The org's roll-up rows of `table` from `since` on, as a subquery `r` whose time column is `at` (decision 0412).
 * A window that starts at a day (UTC midnight), when `daily` allows it (a series by hour needs the hours), reads the
 * daily level (each day's hours before audit_rollup_days.folded_before, folded ten minutes after each hour ends) and
 * the hours not folded yet; any other window reads the hours, which are complete for the last ROLLUP_HOURS_KEPT_MS
 * (older folded hours are pruned, decision 0414): such a window must start within them. Both give the same sums.
 * Fixed table and column names only.
 */
export function rollupRows(table: keyof typeof COLUMNS, orgId: string, since: Date, daily = true) {
  const columns = sql.raw(COLUMNS[table]);
  const at = since.toISOString();
  if (!daily || since.getTime() % DAY_MS !== 0) {
    // Folded hours older than ROLLUP_HOURS_KEPT_MS are pruned (decision 0414): such a window would miss them.
    // (The prune keeps every hour from the hour of now - ROLLUP_HOURS_KEPT_MS on; it ran at or before now.)
    if (since.getTime() < Math.floor((Date.now() - ROLLUP_HOURS_KEPT_MS) / 3_600_000) * 3_600_000) {
      throw new Error(`a roll-up window that does not start at a day must start within the hours kept (from ${at})`);
    }
    return sql`(SELECT hour AS at, ${columns} FROM ${sql.raw(table)} WHERE org_id = ${orgId} AND hour >= ${at}::timestamptz) r`;
  }
  return sql`(SELECT day AS at, ${columns} FROM ${sql.raw(`${table}_daily`)} WHERE org_id = ${orgId} AND day >= ${at}::timestamptz
    UNION ALL
    SELECT hour, ${columns} FROM ${sql.raw(table)}
      WHERE org_id = ${orgId} AND hour >= greatest(${at}::timestamptz, (SELECT folded_before FROM audit_rollup_days))) r`;
}

/** Roll-up rows of the two actions in the window (hours are whole: the window starts at an hour). */
const windowRollups = (orgId: string, since: Date, daily = true) =>
  sql`FROM ${rollupRows('audit_rollups', orgId, since, daily)} WHERE action IN ('tool.called', 'tool.call_refused')`;

const CALLS = sql`coalesce(sum(events) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused'), 0)`;
const REFUSALS = sql`coalesce(sum(events) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused'), 0)`;
const ERRORS = sql`coalesce(sum(events) FILTER (WHERE action = 'tool.called' AND outcome = 'error'), 0)`;
const HELD = sql`coalesce(sum(events) FILTER (WHERE action = 'tool.called' AND outcome = 'held'), 0)`;

/** percentile_cont over a sorted multiset of (value, count), as PostgreSQL computes it. */
export function percentileOf(sorted: readonly (readonly [number, number])[], total: number, fraction: number): number | null {
  if (total === 0) return null;
  const position = fraction * (total - 1);
  const lo = Math.floor(position);
  const hi = Math.ceil(position);
  let seen = 0;
  let low: number | null = null;
  for (const [value, count] of sorted) {
    seen += count;
    if (low === null && seen > lo) low = value;
    if (seen > hi) return low! + (value - low!) * (position - lo);
  }
  return low;
}

interface Latencies {
  values: [number, number][];
  total: number;
}

/** The window's latencies of calls that ran, by tool (tool and connector), by connector and in all. */
async function latencies(db: Queryable, orgId: string, since: Date) {
  const rows = rowsOf<{ tool_name: string; connector_id: string; duration_ms: number | string; calls: number | string }>(
    await db.execute(sql`SELECT tool_name, connector_id, duration_ms, sum(calls) AS calls FROM ${rollupRows('audit_rollup_latency', orgId, since)}
      GROUP BY tool_name, connector_id, duration_ms HAVING sum(calls) > 0 ORDER BY duration_ms`),
  );
  const groups = new Map<string, Latencies>();
  const add = (key: string, value: number, count: number) => {
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { values: [], total: 0 }));
    const last = group.values[group.values.length - 1];
    if (last && last[0] === value) last[1] += count;
    else group.values.push([value, count]);
    group.total += count;
  };
  for (const r of rows) {
    const value = Number(r.duration_ms);
    const count = Number(r.calls);
    add(`t\u0000${r.tool_name}\u0000${r.connector_id}`, value, count);
    add(`c\u0000${r.connector_id}`, value, count);
    add('all', value, count);
  }
  return (key: string) => {
    const group = groups.get(key);
    return group ? { p50: percentileOf(group.values, group.total, 0.5), p95: percentileOf(group.values, group.total, 0.95) } : { p50: null, p95: null };
  };
}

/**
 * The totals and the same figures per connector and per tool (at most `limit` tools, most calls first). A connector's
 * percentiles are over its own calls (not derived from its tools'). Refusals before a tool was resolved have no
 * connector: they count in the totals and in a row without one.
 */
export async function insightFigures(db: Queryable, orgId: string, since: Date, limit: number) {
  const [counts, latency] = await Promise.all([
    db.execute(sql`SELECT NULLIF(tool_name, '') AS tool_name, NULLIF(connector_id, '') AS connector_id,
        tool_name AS tool_key, connector_id AS connector_key, GROUPING(tool_name, connector_id) AS level,
        ${CALLS} AS calls, ${REFUSALS} AS refusals, ${ERRORS} AS errors, ${HELD} AS held
      ${windowRollups(orgId, since)}
      GROUP BY GROUPING SETS ((tool_name, connector_id), (connector_id), ())
      HAVING sum(events) > 0
      ORDER BY level DESC, calls DESC, refusals DESC, 1, 2`),
    latencies(db, orgId, since),
  ]);
  const rows = rowsOf<FigureRow & { tool_key: string | null; connector_key: string | null }>(counts).map((r) => {
    const level = Number(r.level);
    const key = level === 3 ? 'all' : level === 2 ? `c\u0000${r.connector_key}` : `t\u0000${r.tool_key}\u0000${r.connector_key}`;
    return { ...r, ...latency(key) };
  });
  const total = rows.find((r) => Number(r.level) === 3);
  return {
    totals: total ? figures(total) : figures({ calls: 0, refusals: 0, errors: 0, held: 0, p50: null, p95: null } as FigureRow),
    byConnector: rows.filter((r) => Number(r.level) === 2).map((r) => ({ connector_id: r.connector_id, ...figures(r) })),
    byTool: rows
      .filter((r) => Number(r.level) === 0)
      .slice(0, limit)
      .map((r) => ({ tool_name: r.tool_name ?? '', connector_id: r.connector_id, ...figures(r) })),
  };
}

/** Calls, refusals and errors per bucket (hour or day, UTC) of the window; buckets without rows are absent. */
export async function insightSeries(db: Queryable, orgId: string, since: Date, bucket: 'hour' | 'day') {
  const rows = rowsOf<{ start: string; calls: number | string; refusals: number | string; errors: number | string }>(
    await db.execute(sql`SELECT to_char(date_trunc(${bucket}, at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00.000"Z"') AS start,
        ${CALLS} AS calls, ${REFUSALS} AS refusals, ${ERRORS} AS errors
      ${windowRollups(orgId, since, bucket === 'day')}
      GROUP BY 1 HAVING sum(events) > 0 ORDER BY 1`),
  );
  return rows.map((r) => ({
    start: r.start,
    calls: Number(r.calls),
    refusals: Number(r.refusals),
    errors: Number(r.errors),
  }));
}
