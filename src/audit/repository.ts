/**
 * Writes and reads audit events; every row is scoped to its org, and every row ends up in its org's hash chain
 * (audit/chain.ts). Two ways in:
 *  - `recordAudit`/`appendAudit` (management changes, approvals, in the caller's transaction): chained at once. The
 *    chain head (audit_chains) is locked for the rest of the writer's transaction, rows get the next sequence
 *    numbers and their hashes, and the head moves on, so writers on any number of instances append in turn and a
 *    chain never forks. Transactions that audit several orgs lock heads in org-id order.
 *  - `insertUnsealed` (the tool-call hot path, refusals): committed without a lock, then sealed into the chain by
 *    `sealPending` moments later (audit/recorder.ts runs it after each batch), so the hot path never queues on a
 *    chain head.
 */
import { and, asc, desc, eq, gt, gte, isNotNull, isNull, like, lt, sql, type SQL } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { rowsOf, type Queryable } from '../store/db.ts';
import { auditChains, auditEvents } from '../store/schema.ts';
import { genesisHash, rowHash } from './chain.ts';

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
  outcome?: 'success' | 'denied' | 'error';
  details?: Record<string, unknown>;
}

export type AuditRow = typeof auditEvents.$inferSelect;

/** Records one event in the caller's transaction (or its own, given the database). Signature kept for every caller. */
export async function recordAudit(db: Queryable, event: AuditInput): Promise<void> {
  await appendAudit(db, [event]);
}

/** Strings as jsonb takes them: no NUL, no lone surrogates (either would fail the insert, and the batch with it). */
function storable(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  if (Array.isArray(value)) return value.map(storable);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[storable(k) as string] = storable(v);
    return out;
  }
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
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
  const orgIds = [...new Set(events.map((e) => e.orgId))].sort();
  const heads = await lockHeads(db, orgIds);
  const rows: AuditRow[] = events.map((event) => {
    const head = heads.get(event.orgId)!;
    const fields = { ...eventColumns(event, now), seq: head.seq + 1, prevHash: head.hash };
    const hash = rowHash(fields);
    heads.set(event.orgId, { seq: fields.seq, hash });
    return { id: crypto.randomUUID(), ...fields, hash };
  });
  await db.insert(auditEvents).values(rows);
  const moved = sql.join(
    orgIds.map((id) => sql`(${id}::uuid, ${heads.get(id)!.seq}::bigint, ${heads.get(id)!.hash}::text)`),
    sql`, `,
  );
  await db.execute(sql`UPDATE audit_chains AS c SET head_seq = v.seq, head_hash = v.hash FROM (VALUES ${moved}) AS v(org_id, seq, hash) WHERE c.org_id = v.org_id`);
  return rows;
}

interface Head {
  seq: number;
  hash: string;
}

/** Creates missing chain heads and locks all of them (one upsert; rows are locked in the given, sorted, order). */
async function lockHeads(tx: Queryable, orgIds: string[]): Promise<Map<string, Head>> {
  const values = sql.join(
    orgIds.map((id) => sql`(${id}::uuid, 0, ${genesisHash(id)}, 0, ${genesisHash(id)})`),
    sql`, `,
  );
  const result = await tx.execute(sql`INSERT INTO audit_chains (org_id, head_seq, head_hash, base_seq, base_hash) VALUES ${values}
    ON CONFLICT (org_id) DO UPDATE SET head_seq = audit_chains.head_seq
    RETURNING org_id, head_seq, head_hash`);
  return new Map(rowsOf<{ org_id: string; head_seq: string | number; head_hash: string }>(result).map((r) => [r.org_id, { seq: Number(r.head_seq), hash: r.head_hash }]));
}

export interface AuditFilter {
  /** Exact action, or a prefix when it ends with a dot (`approval.`). */
  action?: string;
  /** Only events at or after this time. */
  since?: Date;
}

function filterConditions(orgId: string, filter: AuditFilter): SQL[] {
  // Rows show once sealed into the chain (milliseconds after their commit), so every listed row has its position.
  const conditions: SQL[] = [eq(auditEvents.orgId, orgId), isNotNull(auditEvents.seq)];
  if (filter.action !== undefined) {
    conditions.push(filter.action.endsWith('.') ? like(auditEvents.action, `${filter.action.replace(/[\\%_]/g, '\\$&')}%`) : eq(auditEvents.action, filter.action));
  }
  if (filter.since) conditions.push(gte(auditEvents.createdAt, filter.since));
  return conditions;
}

/** One page, newest first (by chain position); `beforeSeq` continues after the previous page's last row. */
export async function listAudit(db: Queryable, orgId: string, filter: AuditFilter, limit: number, beforeSeq: number | null): Promise<AuditRow[]> {
  const conditions = filterConditions(orgId, filter);
  if (beforeSeq !== null) conditions.push(lt(auditEvents.seq, beforeSeq));
  return db.select().from(auditEvents).where(and(...conditions)).orderBy(desc(auditEvents.seq)).limit(limit);
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

export async function chainState(db: Queryable, orgId: string) {
  const [row] = await db.select().from(auditChains).where(eq(auditChains.orgId, orgId));
  return row ?? { orgId, headSeq: 0, headHash: genesisHash(orgId), baseSeq: 0, baseHash: genesisHash(orgId) };
}

/** The row as stored before it is sealed into the chain: content only (no seq, prev_hash or hash yet). */
function unsealedRow(event: AuditInput, now: Date) {
  return { id: crypto.randomUUID(), ...eventColumns(event, now) };
}

/**
 * The hot path's write (tool calls, refusals): one multi-row INSERT, no lock, so batches of any number of instances
 * and orgs commit side by side. The rows join their org's chain shortly after, in `sealPending`.
 */
export async function insertUnsealed(db: Queryable, events: readonly AuditInput[], now: Date = new Date()): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => {
    const row = unsealedRow(e, now);
    return { id: row.id, org_id: row.orgId, action: row.action, actor_type: row.actorType, actor_id: row.actorId, target_type: row.targetType, target_id: row.targetId, outcome: row.outcome, details: row.details };
  });
  // The batch as one JSON parameter: one statement and one parameter whatever the batch size (a VALUES list with a
  // parameter per field costs CPU per row to build and to parse).
  await db.execute(sql`INSERT INTO audit_events (id, org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details)
    SELECT id, org_id, ${now.toISOString()}::timestamptz, action, actor_type, actor_id, target_type, target_id, outcome, details
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS v(id uuid, org_id uuid, action text, actor_type text, actor_id text, target_type text, target_id text, outcome text, details jsonb)`);
}

/**
 * Seals committed rows that are not in the chain yet (hot-path rows, and rows written before migration 5) into
 * their orgs' chains, oldest first: one transaction, the rows locked (SKIP LOCKED: concurrent sealers on other
 * instances take other rows), heads locked in org-id order, one UPDATE for all rows. Returns the rows sealed.
 */
export async function sealPending(db: Queryable, limit = 5000): Promise<number> {
  return db.transaction(async (tx) => {
    const pending = await tx
      .select()
      .from(auditEvents)
      .where(isNull(auditEvents.seq))
      .orderBy(asc(auditEvents.createdAt), asc(auditEvents.id))
      .limit(limit)
      .for('update', { skipLocked: true });
    if (pending.length === 0) return 0;
    const orgIds = [...new Set(pending.map((r) => r.orgId))].sort();
    const heads = await lockHeads(tx, orgIds);
    const links: { id: string; seq: number; prev_hash: string; hash: string }[] = [];
    for (const row of pending) {
      const head = heads.get(row.orgId)!;
      const fields = { ...row, seq: head.seq + 1, prevHash: head.hash };
      const hash = rowHash(fields);
      heads.set(row.orgId, { seq: fields.seq, hash });
      links.push({ id: row.id, seq: fields.seq, prev_hash: fields.prevHash, hash });
    }
    await tx.execute(
      sql`UPDATE audit_events AS e SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash
        FROM jsonb_to_recordset(${JSON.stringify(links)}::jsonb) AS v(id uuid, seq bigint, prev_hash text, hash text) WHERE e.id = v.id`,
    );
    const moved = sql.join(
      orgIds.map((id) => sql`(${id}::uuid, ${heads.get(id)!.seq}::bigint, ${heads.get(id)!.hash}::text)`),
      sql`, `,
    );
    await tx.execute(sql`UPDATE audit_chains AS c SET head_seq = v.seq, head_hash = v.hash FROM (VALUES ${moved}) AS v(org_id, seq, hash) WHERE c.org_id = v.org_id`);
    return pending.length;
  });
}

/** The org's rows not sealed yet, and of those the ones older than `before` (a sealer that should have run). */
export async function unsealedCounts(db: Queryable, orgId: string, before: Date): Promise<{ pending: number; overdue: number }> {
  const [row] = await db
    .select({ pending: sql<number>`count(*)::int`, overdue: sql<number>`count(*) FILTER (WHERE ${auditEvents.createdAt} < ${before.toISOString()}::timestamptz)::int` })
    .from(auditEvents)
    .where(and(eq(auditEvents.orgId, orgId), isNull(auditEvents.seq)));
  return { pending: Number(row?.pending ?? 0), overdue: Number(row?.overdue ?? 0) };
}

/**
 * Retention: deletes the org's oldest rows created before `before`, as one prefix of the chain (up to the first row
 * that is still young enough), moves the chain's base to the last deleted row and appends an `audit.pruned`
 * checkpoint row naming it, all in one transaction under the head lock. Verification starts from the base.
 */
export async function pruneAudit(db: Queryable, orgId: string, before: Date, now: Date = new Date()): Promise<number> {
  return db.transaction(async (tx) => {
    const head = (await lockHeads(tx, [orgId])).get(orgId)!;
    const state = await chainState(tx, orgId);
    const young = rowsOf<{ seq: string | number | null }>(
      await tx.execute(sql`SELECT min(seq) AS seq FROM audit_events WHERE org_id = ${orgId} AND seq > ${state.baseSeq} AND created_at >= ${before.toISOString()}::timestamptz`),
    )[0];
    const through = young?.seq != null ? Number(young.seq) - 1 : head.seq;
    if (through <= state.baseSeq) return 0;
    const [last] = await tx.select({ hash: auditEvents.hash }).from(auditEvents).where(and(eq(auditEvents.orgId, orgId), eq(auditEvents.seq, through)));
    if (!last?.hash) return 0;
    const deleted = await tx
      .delete(auditEvents)
      .where(and(eq(auditEvents.orgId, orgId), sql`${auditEvents.seq} <= ${through}`))
      .returning({ id: auditEvents.id });
    await tx.update(auditChains).set({ baseSeq: through, baseHash: last.hash }).where(eq(auditChains.orgId, orgId));
    await appendAudit(
      tx,
      [{ orgId, action: 'audit.pruned', actor: { type: 'system', id: null }, details: { through_seq: through, through_hash: last.hash, deleted: deleted.length, before: before.toISOString() } }],
      now,
    );
    return deleted.length;
  });
}

/** Orgs that have audit rows older than `before` (the sweeper's work list). */
export async function orgsWithRowsBefore(db: Queryable, before: Date): Promise<string[]> {
  const rows = await db.selectDistinct({ orgId: auditEvents.orgId }).from(auditEvents).where(lt(auditEvents.createdAt, before));
  return rows.map((r) => r.orgId);
}
