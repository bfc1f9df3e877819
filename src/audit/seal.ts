/**
 * Seals committed hot-path rows (audit/repository.ts insertUnsealed) into their orgs' hash chains. Two ways:
 *  - `sealFromMemory`: the instance that inserted the rows seals them from what it sent (id, org, rowTail), so no
 *    row is read back or locked up front: lock the chain heads, hash in JS, one statement sets every row's
 *    seq/prev_hash/hash (only where seq IS NULL) and moves the heads. If fewer rows matched than were sent (another
 *    sealer got there first, or a row is gone), the transaction is rolled back (SealConflict): a chain never gets a
 *    gap or a position twice, and the writer seals what is left with `sealPending`, restricted to those ids.
 *  - `sealPending`: reads unsealed rows back (SKIP LOCKED) and seals them. For rows their writer did not seal (an
 *    instance that stopped between insert and seal: the orphan sweep, `startOrphanSealer`, and every start), for
 *    rows written before the chain existed, and after a conflict.
 * Both lock the chain heads before they touch rows (a row lock is only ever taken by a holder of its org's head),
 * so the two never deadlock; concurrent sealers of one org take turns on the head.
 *
 * Only rows the gateway wrote enter a chain (issue 26, item 5): `sealPending` checks each row's MAC (audit/mac.ts)
 * and refuses a row without a valid one (inserted or altered by someone without the gateway's key, or left unsealed
 * from before rows carried a MAC): it stays outside the chain, marked refused_at, and the refusal is reported by an
 * `audit.rows_refused` row in the org's chain (and to the caller, who logs it). `sealFromMemory` seals only rows this
 * instance wrote itself, hashing what it wrote: a row altered in the store meanwhile no longer matches its hash.
 */
import type { Db, Queryable } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { chainHash, rowHash } from './chain.ts';
import { auditKeyOf, rowAuthentic } from './mac.ts';
import { appendAudit, lockHeads, type SealableRow } from './repository.ts';
import { lockPendingRows, markRefused, type PendingCursor, pendingConditions, pendingOrgs, sealLinkedRows, writeSeals } from './seal-statements.ts';

export type { SealableRow } from './repository.ts';

/** Hashing yields to the event loop after this long, so a large seal never holds up other work for more. */
const HASH_SLICE_MS = 1;

export class SealConflict extends Error {}

/** Tells a hashing loop when HASH_SLICE_MS have passed since its last yield to the event loop, and yields. */
function slicer() {
  let since = performance.now();
  return {
    due: () => performance.now() - since >= HASH_SLICE_MS,
    yield: async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    },
  };
}

/**
 * Seals the given rows (committed, unsealed, in the order given) into their chains in one transaction: 2 statements
 * whatever the count. Throws SealConflict, with nothing changed, if any row was not there to seal.
 */
export async function sealFromMemory(db: Db, rows: readonly SealableRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  return db.transaction(async (tx) => {
    const heads = await lockHeads(tx, [...new Set(rows.map((r) => r.orgId))].sort());
    const slice = slicer();
    let links = '[';
    for (let i = 0; i < rows.length; i++) {
      if (slice.due()) await slice.yield();
      const row = rows[i]!;
      const head = heads.get(row.orgId)!;
      const seq = head.seq + 1;
      const hash = chainHash(head.hash, row.orgId, seq, row.tail);
      links += `${i ? ',' : ''}{"id":"${row.id}","seq":${seq},"prev_hash":"${head.hash}","hash":"${hash}"}`;
      heads.set(row.orgId, { seq, hash });
    }
    links += ']';
    const sealed = await sealLinkedRows(tx, links, heads);
    if (sealed !== rows.length) throw new SealConflict(`${rows.length - sealed} of ${rows.length} rows were sealed elsewhere or are gone`);
    return sealed;
  });
}

export interface PendingFilter {
  /** Only rows created before this time (the orphan sweep: rows their writer should long have sealed). */
  olderThan?: Date;
  /** Only these rows (a writer's rows after a conflict). */
  ids?: readonly string[];
  /** Told of the rows refused (no valid MAC), after their transaction committed. */
  onRefused?: (rows: RefusedRow[]) => void;
  /**
   * Only rows after this position; moved to the last row taken (a sweep's batches continue where the one before
   * stopped). Rows another sealer held are passed over and left to the next sweep.
   */
  after?: PendingCursor | null;
}

/** A row a sealer refused to chain: it does not carry a valid MAC, so the gateway did not write it as it is. */
export interface RefusedRow {
  id: string;
  orgId: string;
  action: string;
  createdAt: Date;
}

/** Ids of refused rows named in their `audit.rows_refused` report; the count covers the rest. */
const REPORTED_IDS = 20;

/**
 * Seals committed rows that are not in the chain yet, oldest first, reading them back: one transaction, the orgs'
 * heads locked first (in org-id order), then their rows (SKIP LOCKED), one UPDATE for all rows. Rows without a valid
 * MAC are refused instead (see the module header). Returns the rows taken out of the pending set (sealed or refused);
 * fewer than `limit` means none were left (apart from rows another sealer held).
 */
export async function sealPending(db: Queryable, limit = 5000, filter: PendingFilter = {}): Promise<number> {
  if (filter.ids && filter.ids.length === 0) return 0;
  const refused: RefusedRow[] = [];
  const taken = await sealPendingIn(db, limit, filter, refused);
  if (refused.length) filter.onRefused?.(refused);
  return taken;
}

async function sealPendingIn(db: Queryable, limit: number, filter: PendingFilter, refused: RefusedRow[]): Promise<number> {
  const key = auditKeyOf(db);
  const conditions = pendingConditions(filter);
  return db.transaction(async (tx) => {
    const candidates = await pendingOrgs(tx, conditions, limit);
    if (candidates.length === 0) return 0;
    const orgIds = [...new Set(candidates)].sort();
    const heads = await lockHeads(tx, orgIds);
    // Read after the heads are locked: a row sealed meanwhile by its writer no longer matches.
    const pending = await lockPendingRows(tx, conditions, orgIds, limit);
    if (pending.length === 0) return 0;
    if (filter.after !== undefined) {
      const last = pending[pending.length - 1]!;
      filter.after = { createdAt: last.createdAt, id: last.id };
    }
    const links: { id: string; seq: number; prev_hash: string; hash: string }[] = [];
    const refusedHere: RefusedRow[] = [];
    const slice = slicer();
    for (const row of pending) {
      if (slice.due()) await slice.yield();
      if (!rowAuthentic(key, row)) {
        refusedHere.push({ id: row.id, orgId: row.orgId, action: row.action, createdAt: row.createdAt });
        continue;
      }
      const head = heads.get(row.orgId)!;
      const fields = { ...row, seq: head.seq + 1, prevHash: head.hash };
      const hash = rowHash(fields);
      heads.set(row.orgId, { seq: fields.seq, hash });
      links.push({ id: row.id, seq: fields.seq, prev_hash: fields.prevHash, hash });
    }
    if (links.length) await writeSeals(tx, links, heads);
    if (refusedHere.length) await refuseRows(tx, refusedHere);
    refused.push(...refusedHere);
    return pending.length;
  });
}

/**
 * Marks rows refused (out of the sealers' index, so a flood of them is read once, not on every sweep) and reports
 * them in their orgs' chains: one `audit.rows_refused` row per org, chained after the rows sealed with them.
 */
async function refuseRows(tx: Queryable, rows: RefusedRow[]): Promise<void> {
  await markRefused(
    tx,
    rows.map((r) => r.id),
  );
  const byOrg = new Map<string, RefusedRow[]>();
  for (const row of rows) byOrg.set(row.orgId, [...(byOrg.get(row.orgId) ?? []), row]);
  await appendAudit(
    tx,
    [...byOrg].map(([orgId, refused]) => ({
      orgId,
      action: 'audit.rows_refused',
      actor: { type: 'system' as const, id: null },
      targetType: 'audit_event',
      outcome: 'error' as const,
      details: {
        count: refused.length,
        ids: refused.slice(0, REPORTED_IDS).map((r) => r.id),
        reason: 'the rows do not carry a valid MAC: they were not written by the gateway as they are, so they are kept outside the chain',
      },
    })),
  );
}

/**
 * Orphans: rows older than this are sealed by any instance's sweep. Far longer than a live writer takes to seal its
 * rows (~100 ms; a writer whose seal failed retries on its next batch), so a sweep rarely meets a writer's rows, and
 * far shorter than verify's SEAL_GRACE_MS (5 min), after which an unsealed row counts as tampering.
 */
export const ORPHAN_AGE_MS = 30_000;
/** How often each instance looks for orphans: one index probe on audit_events_unsealed when there are none. */
const ORPHAN_SWEEP_MS = 30_000;
const ORPHAN_ROWS = 5000;

/** Seals every row older than ORPHAN_AGE_MS that is still outside its chain; returns the rows sealed or refused. */
export async function sealOrphans(db: Queryable, now: Date = new Date(), onRefused?: (rows: RefusedRow[]) => void): Promise<number> {
  return sealBacklog(db, { olderThan: new Date(now.getTime() - ORPHAN_AGE_MS), onRefused });
}

/**
 * Seals every row still outside its chain (of those `filter` selects), ORPHAN_ROWS per transaction, each batch
 * continuing after the last row of the one before: linear in the backlog (decision 0349). Returns the rows sealed or
 * refused.
 */
export async function sealBacklog(db: Queryable, filter: Omit<PendingFilter, 'after'> = {}): Promise<number> {
  const sweep: PendingFilter = { ...filter, after: null };
  let total = 0;
  for (;;) {
    const sealed = await sealPending(db, ORPHAN_ROWS, sweep);
    total += sealed;
    if (sealed < ORPHAN_ROWS) return total;
  }
}

/** The log line of a refusal (the durable report is the org's `audit.rows_refused` row): ids, never contents. */
export function logRefused(log: Logger, rows: RefusedRow[]): void {
  log.error('audit rows without a valid MAC were refused and kept outside the chain (written or altered outside the gateway)', {
    rows: rows.length,
    orgs: [...new Set(rows.map((r) => r.orgId))].slice(0, REPORTED_IDS),
    ids: rows.slice(0, REPORTED_IDS).map((r) => r.id),
  });
}

/**
 * Seals what earlier instances left unsealed in the background (start-up does not wait for it: decision 0349), then
 * sweeps for orphans every ORPHAN_SWEEP_MS. The returned stop waits for a backlog seal under way.
 */
export function startOrphanSealer(deps: { db: Db; log: Logger }): () => Promise<void> {
  const started = performance.now();
  const backlog = sealBacklog(deps.db, { onRefused: (rows) => logRefused(deps.log, rows) }).then(
    (sealed) => {
      if (sealed > 0) deps.log.info('sealed the audit rows left unsealed before this start', { rows: sealed, ms: Math.round(performance.now() - started) });
    },
    (err: unknown) => deps.log.error('sealing the audit backlog at start failed; the orphan sweep retries', { error: describeError(err) }),
  );
  const run = async () => {
    try {
      const sealed = await sealOrphans(deps.db, new Date(), (rows) => logRefused(deps.log, rows));
      if (sealed > 0) deps.log.info('sealed audit rows their writer left unsealed', { rows: sealed });
    } catch (err) {
      deps.log.error('sealing orphaned audit rows failed', { error: describeError(err) });
    }
  };
  const timer = setInterval(run, ORPHAN_SWEEP_MS);
  timer.unref?.();
  return async () => {
    clearInterval(timer);
    await backlog;
  };
}
