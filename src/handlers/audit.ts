/**
 * GET /api/audit (one page, newest first, with a cursor), GET /api/audit/export-json (streamed, admin), GET /api/insights
 * and GET /api/insights/fingerprints.
 */
import { json } from '../errors.ts';
import { auditExportStream } from '../audit/export.ts';
import { genuineRows, listAudit, type AuditFilter } from '../audit/repository.ts';
import { auditEventView } from '../audit/views.ts';
import { insightFigures, insightSeries } from '../audit/insights-statements.ts';
import { refusalsByReason, refusedFingerprints } from '../audit/refusal-insights-statements.ts';
import { agentInsights } from '../billing/agent-insights.ts';
import { cancellable } from '../store/db.ts';
import type { Handler, RequestContext } from './context.ts';

const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

/** The query's filters (validated against the contract before the handler runs). */
function filterOf(query: Record<string, unknown>, now: Date): AuditFilter {
  const actor = str(query.actor);
  const colon = actor?.indexOf(':') ?? -1;
  const from = str(query.from);
  const until = str(query.until);
  const days = typeof query.days === 'number' ? new Date(now.getTime() - query.days * 86_400_000) : undefined;
  // `days` and `from` together: the later of the two bounds.
  const since = from && days ? new Date(Math.max(Date.parse(from), days.getTime())) : from ? new Date(from) : days;
  const filter: AuditFilter = {
    action: str(query.action),
    since,
    until: until ? new Date(until) : undefined,
    targetId: str(query.target_id),
    outcomes: query.outcome === undefined ? undefined : [...new Set(String(query.outcome).split(','))],
    actor: actor && colon > 0 ? { type: actor.slice(0, colon), id: actor.slice(colon + 1) } : undefined,
    tool: str(query.tool),
    connectorId: str(query.connector_id),
    reasonClass: str(query.reason_class),
    fingerprintId: str(query.fingerprint_id),
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined)) as AuditFilter;
}

export const listAuditEvents: Handler = async ({ principal, deps, query, request }) => {
  const limit = typeof query.limit === 'number' ? query.limit : 50;
  const beforeSeq = typeof query.cursor === 'string' ? Number(query.cursor) : null;
  // One row more than the page tells whether another page follows, without a count.
  const rows = await cancellable(deps.store, request.signal, (db) => listAudit(db, principal!.orgId, filterOf(query, new Date()), limit + 1, beforeSeq));
  const page = rows.slice(0, limit);
  const next = rows.length > limit ? String(page[page.length - 1]!.seq) : null;
  // Rows that do not authenticate are not listed as genuine (the cursor still moves past them).
  const genuine = await genuineRows(deps.store.db, principal!.orgId, page);
  return json({ events: genuine.map((r) => auditEventView(r)), next_cursor: next }, 200, { 'cache-control': 'no-store' });
};

export const exportAuditEvents: Handler = ({ principal, deps, query }) => auditExportResponse(deps, principal!.orgId, query);

/** The org's export, streamed (the org admins' export and the operator's). */
export function auditExportResponse(deps: RequestContext['deps'], orgId: string, query: Record<string, unknown>): Response {
  const now = new Date();
  const stream = auditExportStream(deps.store.db, orgId, filterOf(query, now), query.redact === true, now);
  return new Response(stream, {
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-disposition': `attachment; filename="audit-${now.toISOString().slice(0, 10)}.json"`,
      'cache-control': 'no-store',
    },
  });
}

const HOUR = 3_600_000;
/** Tools listed in the insights at most. */
const INSIGHT_TOOLS = 100;
/** Fingerprints listed at most (the Overview's top ones, and a tool's). */
const FINGERPRINTS_DEFAULT = 10;

/**
 * The insights' window for `days`: it starts at a bucket's start (an hour for 1 day, else a day), so the first bucket
 * is whole and the series has 24 or `days` buckets; every figure of the window, and every link to its rows, starts there.
 */
function insightWindow(query: Record<string, unknown>) {
  const days = typeof query.days === 'number' ? query.days : 1;
  const bucket = days === 1 ? 'hour' : 'day';
  const step = bucket === 'hour' ? HOUR : 24 * HOUR;
  const end = Math.floor(Date.now() / step) * step + step;
  return { days, bucket, step, end, since: new Date(end - (bucket === 'hour' ? 24 : days) * step) } as const;
}

/** GET /api/insights: the window's figures per tool, connector, agent and reason, and every bucket of its series. */
export const getInsights: Handler = async ({ principal, deps, query, request }) => {
  const { days, bucket, step, end, since } = insightWindow(query);
  const orgId = principal!.orgId;
  // A caller that leaves (the console's poll moved on) cancels the reads.
  const [figures, series, agents, reasons] = await cancellable(deps.store, request.signal, (db) =>
    Promise.all([
      insightFigures(db, orgId, since, INSIGHT_TOOLS),
      insightSeries(db, orgId, since, bucket),
      agentInsights(db, orgId, since, new Date()),
      refusalsByReason(db, orgId, since),
    ]),
  );
  const byStart = new Map(series.map((s) => [s.start, s]));
  const buckets = [];
  for (let t = since.getTime(); t < end; t += step) {
    const start = new Date(t).toISOString();
    buckets.push(byStart.get(start) ?? { start, calls: 0, refusals: 0, errors: 0 });
  }
  const body = {
    days,
    since: since.toISOString(),
    bucket,
    totals: figures.totals,
    by_connector: figures.byConnector,
    by_tool: figures.byTool,
    by_agent: agents,
    refusals_by_reason: reasons,
    series: buckets,
  };
  return json(body, 200, { 'cache-control': 'no-store' });
};

/** GET /api/insights/fingerprints: the window's most refused fingerprints, of the org or of one tool. */
export const listRefusedFingerprints: Handler = async ({ principal, deps, query, request }) => {
  const { days, since } = insightWindow(query);
  const limit = typeof query.limit === 'number' ? query.limit : FINGERPRINTS_DEFAULT;
  const tool = str(query.tool);
  const fingerprints = await cancellable(deps.store, request.signal, (db) => refusedFingerprints(db, principal!.orgId, since, limit, tool));
  return json({ days, since: since.toISOString(), tool: tool ?? null, fingerprints }, 200, { 'cache-control': 'no-store' });
};
