/**
 * SQL of the refusal insights (issue 41 item 3, decision 0390): refusals by reason class and the most refused
 * fingerprints of a window (an org's, or one tool's), read from the hourly roll-up of refused statements
 * (audit_rollup_refusals, migration 25) and the `tool.call_refused` rows of audit_rollups, never from the log. A
 * fingerprint's text is read from its latest sealed row (one probe of the fingerprint index), so it is shown only
 * when the org keeps it (`audit_statements` fingerprint or full) and only while a row of it is kept.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { rollupRows } from './insights-statements.ts';

export interface ReasonFigure {
  /** The refused statements' class; null: refusals before a statement was run (`tool.call_refused` rows). */
  reason_class: string | null;
  refusals: number;
}

export interface FingerprintFigure {
  fingerprint_id: string;
  /** The statement with its literals removed; null when the org keeps no statement text. */
  fingerprint: string | null;
  reason_classes: string[];
  refusals: number;
}

/**
 * Refused statements per reason class, most first, then the `tool.call_refused` rows as one figure of class null
 * (absent when there are none). A refused statement without a class (none is written so: decision 0320) counts in
 * neither.
 */
export async function refusalsByReason(db: Queryable, orgId: string, since: Date): Promise<ReasonFigure[]> {
  const at = since.toISOString();
  const rows = rowsOf<{ reason_class: string | null; n: string | number }>(
    await db.execute(sql`SELECT * FROM (
        SELECT reason_class, sum(events) AS n FROM audit_rollup_refusals
        WHERE org_id = ${orgId} AND hour >= ${at}::timestamptz AND reason_class <> ''
        GROUP BY reason_class HAVING sum(events) > 0
        UNION ALL
        SELECT NULL, sum(events) FROM ${rollupRows('audit_rollups', orgId, since)} WHERE action = 'tool.call_refused'
        HAVING sum(events) > 0) r
      ORDER BY reason_class IS NULL, n DESC, reason_class`),
  );
  return rows.map((r) => ({ reason_class: r.reason_class, refusals: Number(r.n) }));
}

/** The most refused fingerprints of the window (of one tool when `tool` is given), most first, at most `limit`. */
export async function refusedFingerprints(db: Queryable, orgId: string, since: Date, limit: number, tool?: string): Promise<FingerprintFigure[]> {
  const ofTool = tool === undefined ? sql`` : sql`AND tool_name = ${tool}`;
  const rows = rowsOf<{ fingerprint_id: string; fingerprint: string | null; classes: string | null; n: string | number }>(
    await db.execute(sql`SELECT f.fingerprint_id, f.n, f.classes,
        (SELECT e.details->>'fingerprint' FROM audit_events e
          WHERE e.org_id = ${orgId} AND (e.details->>'fingerprint_id') = f.fingerprint_id AND e.seq IS NOT NULL
          ORDER BY e.created_at DESC, e.seq DESC LIMIT 1) AS fingerprint
      FROM (SELECT fingerprint_id, sum(events) AS n, string_agg(DISTINCT reason_class, ',' ORDER BY reason_class) FILTER (WHERE reason_class <> '') AS classes
        FROM audit_rollup_refusals
        WHERE org_id = ${orgId} AND hour >= ${since.toISOString()}::timestamptz AND fingerprint_id <> '' ${ofTool}
        GROUP BY fingerprint_id HAVING sum(events) > 0
        ORDER BY n DESC, fingerprint_id LIMIT ${limit}) f
      ORDER BY f.n DESC, f.fingerprint_id`),
  );
  return rows.map((r) => ({
    fingerprint_id: r.fingerprint_id,
    fingerprint: r.fingerprint,
    reason_classes: r.classes ? r.classes.split(',') : [],
    refusals: Number(r.n),
  }));
}
