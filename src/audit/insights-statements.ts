/**
 * SQL of the insights (GET /api/insights): calls, refusals and latency per tool and over time, computed in the store
 * from the org's sealed audit rows of a window. `tool.called` rows are calls (success, error, held), and their
 * `details.duration_ms` the latency; `tool.call_refused` rows and `tool.called` rows with outcome `refused` (a
 * statement the guard or a policy refused; issue 41) are refusals.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';

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

/** The window's rows of the two actions, sealed and genuine-looking (rows a sealer refused are left out). */
const windowRows = (orgId: string, since: Date) => sql`FROM audit_events
  WHERE org_id = ${orgId} AND action IN ('tool.called', 'tool.call_refused') AND created_at >= ${since.toISOString()}::timestamptz
    AND seq IS NOT NULL AND refused_at IS NULL`;

/**
 * The totals and the same figures per connector and per tool (at most `limit` tools, most calls first). A connector's
 * percentiles are over its own calls (not derived from its tools'). Refusals before a tool was resolved have no
 * connector: they count in the totals and in a row without one.
 */
export async function insightFigures(db: Queryable, orgId: string, since: Date, limit: number) {
  const ran = sql`action = 'tool.called' AND outcome NOT IN ('held', 'refused')`;
  const rows = rowsOf<FigureRow>(
    await db.execute(sql`SELECT target_id AS tool_name, details->>'connector_id' AS connector_id,
        GROUPING(target_id, details->>'connector_id') AS level,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused') AS calls,
        count(*) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused') AS refusals,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'error') AS errors,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'held') AS held,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY (details->>'duration_ms')::float8) FILTER (WHERE ${ran}) AS p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY (details->>'duration_ms')::float8) FILTER (WHERE ${ran}) AS p95
      ${windowRows(orgId, since)}
      GROUP BY GROUPING SETS ((target_id, details->>'connector_id'), (details->>'connector_id'), ())
      ORDER BY level DESC, calls DESC, refusals DESC, tool_name, connector_id`),
  );
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
    await db.execute(sql`SELECT to_char(date_trunc(${bucket}, created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00.000"Z"') AS start,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused') AS calls,
        count(*) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused') AS refusals,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'error') AS errors
      ${windowRows(orgId, since)}
      GROUP BY 1 ORDER BY 1`),
  );
  return rows.map((r) => ({
    start: r.start,
    calls: Number(r.calls),
    refusals: Number(r.refusals),
    errors: Number(r.errors),
  }));
}
