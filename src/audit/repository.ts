/**
 * Writes and reads audit events; every row is scoped to its org, and every row ends up in its org's hash chain
 * (audit/chain.ts). Two ways in:
 *  - `recordAudit`/`appendAudit` (management changes, approvals, in the caller's transaction): chained at once. The
 *    chain head (audit_chains) is locked for the rest of the writer's transaction, rows get the next sequence
 *    numbers and their hashes, and the head moves on, so writers on any number of instances append in turn and a
 *    chain never forks. Transactions that audit several orgs lock heads in org-id order.
 *  - `insertUnsealed` (the tool-call hot path, refusals): committed without a lock, then sealed into the chain
 *    moments later by audit/seal.ts (audit/recorder.ts runs it after each batch), so the hot path never queues on a
 *    chain head.
 */
import { and, asc, desc, eq, gt, gte, inArray, isNotNull, isNull, like, lt, sql, type SQL } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { executePrepared, rowsOf, type Queryable } from '../store/db.ts';
import { auditChains, auditEvents } from '../store/schema.ts';
import { genesisHash, rowHash, rowTail } from './chain.ts';
import { auditKeyOf, rowAuthentic, rowMac } from './mac.ts';
import { rowText } from './row-text.ts';
import { storable } from './storable.ts';

export interface Actor {
  type: 'api_key' | 'oauth_client' | 'user' | 'operator' | 'system' | 'anonymous';
  id: string | null;
}

export interface AuditInput {
  orgId: string;
  action: string;
  actor: Actor;
  targetType?: string;
  targetId?: string;
  /** `held`: a tools/call held for human approval (nothing ran yet). */
  outcome?: 'success' | 'held' | 'denied' | 'refused' | 'error';
  details?: Record<string, unknown>;
}

export type AuditRow = typeof auditEvents.$inferSelect;

/** Records one event in the caller's transaction (or its own, given the database). Signature kept for every caller. */
export async function recordAudit(db: Queryable, event: AuditInput): Promise<void> {
  await appendAudit(db, [event]);
}

/** The columns of an audit row that come from the event itself (sealed or not). */
function eventColumns(event: AuditInput, now: Date) {
  return {
    orgId: event.orgId,
    createdAt: now,
    action: event.action,
    actorType: event.actor.type,
    actorId: event.actor.id,
    targetType: event.targetType ?? null,
    targetId: event.targetId ?? null,
    outcome: event.outcome ?? 'success',
    details: storable(event.details ?? {}) as Record<string, unknown>,
  };
}

/** Appends events (any orgs, in order) to their orgs' chains in one transaction: 3 statements whatever the count. */
export async function appendAudit(db: Queryable, events: readonly AuditInput[], now: Date = new Date()): Promise<AuditRow[]> {
  if (events.length === 0) return [];
  if (!(db instanceof PgTransaction)) return db.transaction((tx) => appendAudit(tx, events, now));
  const key = auditKeyOf(db);
  const orgIds = [...new Set(events.map((e) => e.orgId))].sort();
  const heads = await lockHeads(db, orgIds);
  const rows: AuditRow[] = events.map((event) => {
    const head = heads.get(event.orgId)!;
    const fields = { ...eventColumns(event, now), seq: head.seq + 1, prevHash: head.hash };
    const hash = rowHash(fields);
    heads.set(event.orgId, { seq: fields.seq, hash });
    const id = crypto.randomUUID();
    return { id, ...fields, hash, mac: rowMac(key, id, event.orgId.toLowerCase(), rowTail(fields)), refusedAt: null };
  });
  await db.insert(auditEvents).values(rows);
  const moved = sql.join(
    orgIds.map((id) => sql`(${id}::uuid, ${heads.get(id)!.seq}::bigint, ${heads.get(id)!.hash}::text)`),
    sql`, `,
  );
  await db.execute(
    sql`UPDATE audit_chains AS c SET head_seq = v.seq, head_hash = v.hash FROM (VALUES ${moved}) AS v(org_id, seq, hash) WHERE c.org_id = v.org_id`,
  );
  return rows;
}

export interface Head {
  seq: number;
  hash: string;
}

/** Creates missing chain heads and locks all of them (one upsert; rows are locked in the given, sorted, order). */
export async function lockHeads(tx: Queryable, orgIds: string[]): Promise<Map<string, Head>> {
  const values = sql.join(
    orgIds.map((id) => sql`(${id}::uuid, 0, ${genesisHash(id)}, 0, ${genesisHash(id)})`),
    sql`, `,
  );
  const result = await tx.execute(sql`INSERT INTO audit_chains (org_id, head_seq, head_hash, base_seq, base_hash) VALUES ${values}
    ON CONFLICT (org_id) DO UPDATE SET head_seq = audit_chains.head_seq
    RETURNING org_id, head_seq, head_hash`);
  return new Map(
    rowsOf<{ org_id: string; head_seq: string | number; head_hash: string }>(result).map((r) => [r.org_id, { seq: Number(r.head_seq), hash: r.head_hash }]),
  );
}

export interface AuditFilter {
  /** Exact action, or a prefix when it ends with a dot (`approval.`). */
  action?: string;
  /** Only events at or after this time. */
  since?: Date;
  /** Only events before this time. */
  until?: Date;
  /** Only events about this target (target_id). */
  targetId?: string;
  /** Only events of one of these outcomes. */
  outcomes?: readonly string[];
  /** Only events of this actor. */
  actor?: { type: string; id: string };
  /** Only tools/call events (tool.called, tool.call_refused) of the tool of this name. */
  tool?: string;
  /** Only events whose details name this connector. */
  connectorId?: string;
  /** Only refused statements of this reason class / fingerprint id. */
  reasonClass?: string;
  fingerprintId?: string;
}

/**
 * One condition per filter, each matching the leading columns of one index of migration 22 (org_id, the filtered
 * column, created_at, seq), so the list's order comes from the index and a page reads only its own rows.
 */
function filterConditions(orgId: string, filter: AuditFilter): SQL[] {
  // Rows show once sealed into the chain (milliseconds after their commit), so every listed row has its position.
  const conditions: SQL[] = [eq(auditEvents.orgId, orgId), isNotNull(auditEvents.seq)];
  if (filter.action !== undefined) {
    conditions.push(
      filter.action.endsWith('.') ? like(auditEvents.action, `${filter.action.replace(/[\\%_]/g, '\\$&')}%`) : eq(auditEvents.action, filter.action),
    );
  }
  if (filter.since) conditions.push(gte(auditEvents.createdAt, filter.since));
  if (filter.until) conditions.push(lt(auditEvents.createdAt, filter.until));
  if (filter.targetId !== undefined) conditions.push(eq(auditEvents.targetId, filter.targetId));
  if (filter.outcomes?.length === 1) conditions.push(eq(auditEvents.outcome, filter.outcomes[0]!));
  else if (filter.outcomes) conditions.push(inArray(auditEvents.outcome, [...filter.outcomes]));
  if (filter.actor) conditions.push(eq(auditEvents.actorType, filter.actor.type), eq(auditEvents.actorId, filter.actor.id));
  if (filter.tool !== undefined) {
    conditions.push(
      eq(auditEvents.targetId, filter.tool),
      eq(auditEvents.targetType, 'tool'),
      inArray(auditEvents.action, ['tool.called', 'tool.call_refused']),
    );
  }
  if (filter.connectorId !== undefined) conditions.push(sql`(${auditEvents.details}->>'connector_id') = ${filter.connectorId}`);
  if (filter.reasonClass !== undefined) conditions.push(sql`(${auditEvents.details}->>'reason_class') = ${filter.reasonClass}`);
  if (filter.fingerprintId !== undefined) conditions.push(sql`(${auditEvents.details}->>'fingerprint_id') = ${filter.fingerprintId}`);
  return conditions;
}

/**
 * One page, newest first: by created_at, then chain position. `beforeSeq` (the previous page's last row, by its chain
 * position) continues after that row: rows before it in the same order, compared as (created_at, seq) so an index
 * of each filter serves the page. A cursor whose row is gone (pruned with everything older) ends the list.
 */
export async function listAudit(db: Queryable, orgId: string, filter: AuditFilter, limit: number, beforeSeq: number | null): Promise<AuditRow[]> {
  // Several outcomes: one ordered index range per outcome, merged (an IN list would read and sort every match).
  if (filter.outcomes && filter.outcomes.length > 1) {
    const pages = await Promise.all(filter.outcomes.map((outcome) => listAudit(db, orgId, { ...filter, outcomes: [outcome] }, limit, beforeSeq)));
    return pages
      .flat()
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.seq! - a.seq!)
      .slice(0, limit);
  }
  const conditions = filterConditions(orgId, filter);
  if (beforeSeq !== null) {
    const cursorTime = sql`(SELECT c.created_at FROM audit_events c WHERE c.org_id = ${orgId} AND c.seq = ${beforeSeq})`;
    conditions.push(sql`(${auditEvents.createdAt}, ${auditEvents.seq}) < (${cursorTime}, ${beforeSeq}::bigint)`);
  }
  return db
    .select()
    .from(auditEvents)
    .where(and(...conditions))
    .orderBy(desc(auditEvents.createdAt), desc(auditEvents.seq))
    .limit(limit);
}

/** One page in chain order after `afterSeq` (export, verification): keyset pagination, so memory stays bounded. */
export async function auditPageAsc(db: Queryable, orgId: string, filter: AuditFilter, afterSeq: number, limit: number): Promise<AuditRow[]> {
  return db
    .select()
    .from(auditEvents)
    .where(and(...filterConditions(orgId, filter), gt(auditEvents.seq, afterSeq)))
    .orderBy(asc(auditEvents.seq))
    .limit(limit);
}

/**
 * Where a walk in chain order of the rows created at or after `since` may start: the first chain position of the
 * first hour from `since` on (audit_hours, kept by the roll-up trigger, decision 0348), minus one. Rows are not
 * sealed in strict time order, but every sealed row of those hours is at or after it, so nothing is skipped; a range
 * with no rows starts at the head.
 */
export async function seqBefore(db: Queryable, orgId: string, since: Date): Promise<number> {
  const [row] = rowsOf<{ first: string | number | null }>(
    await db.execute(sql`SELECT coalesce(
        (SELECT min(first_seq) FROM audit_hours WHERE org_id = ${orgId} AND events > 0 AND hour >= audit_hour_of(${since.toISOString()}::timestamptz)),
        (SELECT head_seq + 1 FROM audit_chains WHERE org_id = ${orgId}), 1) AS first`),
  );
  return Math.max(0, Number(row?.first ?? 1) - 1);
}

/**
 * The rows of a page (one org's, sealed) that the gateway wrote: a row chained after the chain's mac_from_seq without
 * a valid MAC was put there from outside (the chain itself is unkeyed), so lists and exports leave it out; verify
 * names it.
 */
export async function genuineRows(db: Queryable, orgId: string, rows: AuditRow[]): Promise<AuditRow[]> {
  if (rows.length === 0) return rows;
  const key = auditKeyOf(db);
  const { macFromSeq } = await chainState(db, orgId);
  return rows.filter((row) => (row.seq !== null && row.seq <= macFromSeq) || rowAuthentic(key, row));
}

export async function chainState(db: Queryable, orgId: string) {
  const [row] = await db.select().from(auditChains).where(eq(auditChains.orgId, orgId));
  return row ?? { orgId, headSeq: 0, headHash: genesisHash(orgId), baseSeq: 0, baseHash: genesisHash(orgId), macFromSeq: 0 };
}

/** A committed, unsealed row as its writer knows it: enough to seal it into its chain without reading it back. */
export interface SealableRow {
  id: string;
  orgId: string;
  /** chain.ts rowTail of the row exactly as stored. */
  tail: string;
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The hot path's write (tool calls, refusals): one multi-row INSERT, no lock, so batches of any number of instances
 * and orgs commit side by side. Returns the rows for `sealFromMemory` (audit/seal.ts), which puts them into their
 * org's chain shortly after; a row whose org id is not in the form the store returns (lower-case uuid) is left out,
 * so only the orphan sweep, which reads rows back, seals it.
 */
export async function insertUnsealed(db: Queryable, events: readonly AuditInput[], now: Date = new Date()): Promise<SealableRow[]> {
  if (events.length === 0) return [];
  const key = auditKeyOf(db);
  const createdAt = now.toISOString();
  const sealable: SealableRow[] = [];
  // The batch as one JSON parameter, written by hand: one statement and one parameter whatever the batch size (a
  // VALUES list with a parameter per field costs CPU per row to build and to parse), and the details serialised once,
  // canonically, for the store and for the row's hash alike.
  let json = '[';
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    // The row's MAC (audit/mac.ts) over the org id as the store prints it, so the row read back authenticates.
    const { id, tail, mac, members } = rowText(key, e, now, e.orgId.toLowerCase());
    json += `${i ? ',' : ''}{"id":"${id}","mac":"${mac}","org_id":${JSON.stringify(e.orgId)},${members}}`;
    if (CANONICAL_UUID.test(e.orgId)) sealable.push({ id, orgId: e.orgId, tail });
  }
  json += ']';
  // Fixed text (two parameters, any batch size), so it runs prepared on a PostgreSQL store (store/db.ts).
  await executePrepared(
    db,
    'toolgate_audit_insert',
    sql`INSERT INTO audit_events (id, org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, mac)
    SELECT id, org_id, ${createdAt}::timestamptz, action, actor_type, actor_id, target_type, target_id, outcome, details, mac
    FROM jsonb_to_recordset(${json}::jsonb)
      AS v(id uuid, mac text, org_id uuid, action text, actor_type text, actor_id text, target_type text, target_id text, outcome text, details jsonb)`,
  );
  return sealable;
}

/**
 * The org's rows outside the chain: not sealed yet (`pending`), of those the ones older than `before` (a sealer that
 * should have run), and the ones a sealer refused (no valid MAC: not written by the gateway).
 */
export async function unsealedCounts(db: Queryable, orgId: string, before: Date): Promise<{ pending: number; overdue: number; refused: number }> {
  const [row] = await db
    .select({
      pending: sql<number>`count(*) FILTER (WHERE ${auditEvents.refusedAt} IS NULL)::int`,
      overdue: sql<number>`count(*) FILTER (WHERE ${auditEvents.refusedAt} IS NULL AND ${auditEvents.createdAt} < ${before.toISOString()}::timestamptz)::int`,
      refused: sql<number>`count(*) FILTER (WHERE ${auditEvents.refusedAt} IS NOT NULL)::int`,
    })
    .from(auditEvents)
    .where(and(eq(auditEvents.orgId, orgId), isNull(auditEvents.seq)));
  return { pending: Number(row?.pending ?? 0), overdue: Number(row?.overdue ?? 0), refused: Number(row?.refused ?? 0) };
}

/** Rows deleted per retention transaction: bounds how long one holds its locks and how much one writes. */
const PRUNE_BATCH_ROWS = 5000;

/**
 * Retention (decision 0350): deletes the org's oldest rows created before `before`, as one prefix of the chain (up to
 * the first row that is still young enough), in transactions of at most `batchRows` rows walked in chain order. Each
 * deletes its rows and moves the chain's base to the last of them, then commits: the base row of audit_chains is
 * locked only by that last statement (never for the whole deletion), and the rows base+1..head verify from the base
 * after every batch. A base moved meanwhile by another sweep ends this one. Then one `audit.pruned` checkpoint row
 * names the new base. Returns the rows deleted.
 */
export async function pruneAudit(db: Queryable, orgId: string, before: Date, now: Date = new Date(), batchRows = PRUNE_BATCH_ROWS): Promise<number> {
  let deleted = 0;
  let through: { seq: number; hash: string } | null = null;
  for (;;) {
    const batch = await db
      .transaction(async (tx) => pruneBatch(tx, orgId, before, batchRows))
      .catch((err: unknown) => {
        if (err instanceof PruneRaced) return null;
        throw err;
      });
    if (!batch) break;
    deleted += batch.deleted;
    through = batch.through;
    if (!batch.more) break;
  }
  if (!through) return 0;
  await appendAudit(
    db,
    [
      {
        orgId,
        action: 'audit.pruned',
        actor: { type: 'system', id: null },
        details: { through_seq: through.seq, through_hash: through.hash, deleted, before: before.toISOString() },
      },
    ],
    now,
  );
  return deleted;
}

/** One batch of pruneAudit; null when there is nothing (more) to delete or another sweep moved the base. */
async function pruneBatch(tx: Queryable, orgId: string, before: Date, batchRows: number) {
  const state = await chainState(tx, orgId);
  const rows = rowsOf<{ seq: string | number; hash: string; young: boolean }>(
    await tx.execute(sql`SELECT seq, hash, created_at >= ${before.toISOString()}::timestamptz AS young FROM audit_events
      WHERE org_id = ${orgId} AND seq > ${state.baseSeq} ORDER BY seq LIMIT ${batchRows}`),
  );
  const firstYoung = rows.findIndex((r) => r.young);
  const old = firstYoung === -1 ? rows : rows.slice(0, firstYoung);
  const last = old[old.length - 1];
  if (!last) return null;
  const through = { seq: Number(last.seq), hash: last.hash };
  const removed = rowsOf(
    await tx.execute(sql`DELETE FROM audit_events WHERE org_id = ${orgId} AND seq > ${state.baseSeq} AND seq <= ${through.seq} RETURNING 1`),
  ).length;
  const moved = rowsOf(
    await tx.execute(sql`UPDATE audit_chains SET base_seq = ${through.seq}, base_hash = ${through.hash}
      WHERE org_id = ${orgId} AND base_seq = ${state.baseSeq} RETURNING 1`),
  ).length;
  if (moved !== 1) throw new PruneRaced();
  return { deleted: removed, through, more: firstYoung === -1 && rows.length === batchRows };
}

class PruneRaced extends Error {}

/** Orgs that have sealed audit rows in hours before `before` (the sweeper's work list, from audit_hours: no scan). */
export async function orgsWithRowsBefore(db: Queryable, before: Date): Promise<string[]> {
  const rows = rowsOf<{ org_id: string }>(
    await db.execute(sql`SELECT DISTINCT org_id FROM audit_hours WHERE hour < ${before.toISOString()}::timestamptz AND events > 0`),
  );
  return rows.map((r) => r.org_id);
}
