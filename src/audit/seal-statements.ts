/**
 * The statements of the audit sealers (seal.ts), typed: set-based updates over audit_events and audit_chains, one
 * statement whatever the number of rows, and the reads of the rows still outside their chain.
 */
import { and, asc, inArray, isNull, lt, sql, type SQL } from 'drizzle-orm';
import { arrayParam, rowsOf, type Queryable } from '../store/db.ts';
import { auditEvents } from '../store/schema.ts';
import type { AuditRow } from './repository.ts';

/** Chain heads by org id: the last position and hash. */
type Heads = Map<string, { seq: number; hash: string }>;

/** The heads update of a seal, as a VALUES list (one row per org). */
function movedHeads(heads: Heads) {
  return sql.join(
    [...heads].map(([id, head]) => sql`(${id}::uuid, ${head.seq}::bigint, ${head.hash}::text)`),
    sql`, `,
  );
}

/**
 * Sets seq/prev_hash/hash of the rows in `links` (a JSON array of {id, seq, prev_hash, hash}) that are still unsealed
 * and moves the heads, in one statement; returns how many rows it sealed.
 */
export async function sealLinkedRows(tx: Queryable, links: string, heads: Heads): Promise<number> {
  const result = await tx.execute(sql`WITH sealed AS (
        UPDATE audit_events AS e SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
        FROM jsonb_to_recordset(${links}::jsonb) AS v(id uuid, seq bigint, prev_hash text, hash text)
        WHERE e.id = v.id AND e.seq IS NULL RETURNING 1
      ), moved AS (
        UPDATE audit_chains AS c SET head_seq = v.seq, head_hash = v.hash FROM (VALUES ${movedHeads(heads)}) AS v(org_id, seq, hash) WHERE c.org_id = v.org_id
      )
      SELECT count(*)::int AS sealed FROM sealed`);
  return Number(rowsOf<{ sealed: number }>(result)[0]?.sealed ?? 0);
}

/** A position in the pending rows' order (created_at, id): a sweep continues after it. */
export interface PendingCursor {
  createdAt: Date;
  id: string;
}

/** Which unsealed, unrefused rows a pending seal takes: older than a time, or only some ids, after a cursor. */
export function pendingConditions(filter: { olderThan?: Date; ids?: readonly string[]; after?: PendingCursor | null }): SQL[] {
  const conditions = [isNull(auditEvents.seq), isNull(auditEvents.refusedAt)];
  if (filter.olderThan) conditions.push(lt(auditEvents.createdAt, filter.olderThan));
  if (filter.ids) conditions.push(inArray(auditEvents.id, [...filter.ids]));
  if (filter.after) {
    // The plain bound lets the index scan start at the cursor: the entries before it (rows sealed by the batches
    // before, dead until vacuumed) are not walked again, so a backlog is sealed at a cost linear in its size.
    const at = filter.after.createdAt.toISOString();
    conditions.push(
      sql`${auditEvents.createdAt} >= ${at}::timestamptz`,
      sql`(${auditEvents.createdAt}, ${auditEvents.id}) > (${at}::timestamptz, ${filter.after.id}::uuid)`,
    );
  }
  return conditions;
}

/** The orgs of the oldest `limit` pending rows (one per row, in row order), read without locks. */
export async function pendingOrgs(tx: Queryable, conditions: SQL[], limit: number): Promise<string[]> {
  const rows = await tx
    .select({ orgId: auditEvents.orgId })
    .from(auditEvents)
    .where(and(...conditions))
    .orderBy(asc(auditEvents.createdAt), asc(auditEvents.id))
    .limit(limit);
  return rows.map((r) => r.orgId);
}

/** The oldest `limit` pending rows of these orgs, locked (SKIP LOCKED: rows another sealer holds are left out). */
export async function lockPendingRows(tx: Queryable, conditions: SQL[], orgIds: string[], limit: number): Promise<AuditRow[]> {
  return tx
    .select()
    .from(auditEvents)
    .where(and(...conditions, inArray(auditEvents.orgId, orgIds)))
    .orderBy(asc(auditEvents.createdAt), asc(auditEvents.id))
    .limit(limit)
    .for('update', { skipLocked: true });
}

/** Writes the chain positions of rows read back and moves the heads (two statements). */
export async function writeSeals(tx: Queryable, links: { id: string; seq: number; prev_hash: string; hash: string }[], heads: Heads): Promise<void> {
  await tx.execute(
    sql`UPDATE audit_events AS e SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
          FROM jsonb_to_recordset(${JSON.stringify(links)}::jsonb) AS v(id uuid, seq bigint, prev_hash text, hash text) WHERE e.id = v.id`,
  );
  await tx.execute(
    sql`UPDATE audit_chains AS c SET head_seq = v.seq, head_hash = v.hash FROM (VALUES ${movedHeads(heads)}) AS v(org_id, seq, hash) WHERE c.org_id = v.org_id`,
  );
}

/** Marks rows refused (out of the sealers' index). */
export async function markRefused(tx: Queryable, ids: string[]): Promise<void> {
  await tx.execute(sql`UPDATE audit_events SET refused_at = now() WHERE id = ANY(${arrayParam('uuid', ids)}::uuid[])`);
}
