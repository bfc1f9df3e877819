/**
 * Walks an org's audit chain from its base (genesis, or the last retention checkpoint) to its head and names the
 * first row that breaks it: a changed row (hash), a deleted or reordered one (sequence gap or prev_hash), a row
 * left outside the chain longer than the sealing delay, or a head that does not match the last row (rows deleted at
 * the end).
 */
import type { Queryable } from '../store/db.ts';
import { rowHash } from './chain.ts';
import { auditPageAsc, chainState, unsealedCounts } from './repository.ts';

/** Rows not sealed this long after their commit mean the sealer did not run (or a row was slipped in): broken. */
export const SEAL_GRACE_MS = 5 * 60_000;

const PAGE_ROWS = 1000;

export interface ChainReport {
  ok: boolean;
  /** Rows checked. */
  checked: number;
  /** Rows committed recently and not sealed into the chain yet (not a failure). */
  pending?: number;
  /** The first broken row (its seq and id, when it exists) and why. */
  broken?: { seq: number; id: string | null; reason: string };
}

export async function verifyChain(db: Queryable, orgId: string, now: Date = new Date()): Promise<ChainReport> {
  const state = await chainState(db, orgId);
  let expectedSeq = state.baseSeq + 1;
  let prevHash = state.baseHash;
  let checked = 0;
  for (;;) {
    const rows = await auditPageAsc(db, orgId, {}, expectedSeq - 1, PAGE_ROWS);
    for (const row of rows) {
      if (row.seq !== expectedSeq) return { ok: false, checked, broken: { seq: expectedSeq, id: null, reason: `row ${expectedSeq} is missing (next row is ${row.seq})` } };
      if (row.prevHash !== prevHash) return { ok: false, checked, broken: { seq: row.seq, id: row.id, reason: 'prev_hash does not match the previous row (a row before it was changed, removed or reordered)' } };
      const hash = rowHash({ ...row, seq: row.seq, prevHash: row.prevHash! });
      if (hash !== row.hash) return { ok: false, checked, broken: { seq: row.seq, id: row.id, reason: 'the row was changed after it was written (its hash does not match its content)' } };
      prevHash = row.hash;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < PAGE_ROWS) break;
  }
  if (expectedSeq - 1 !== state.headSeq || prevHash !== state.headHash) {
    return { ok: false, checked, broken: { seq: expectedSeq, id: null, reason: `the chain head is row ${state.headSeq}, but the rows end at ${expectedSeq - 1} (rows at the end were removed)` } };
  }
  const unsealed = await unsealedCounts(db, orgId, new Date(now.getTime() - SEAL_GRACE_MS));
  if (unsealed.overdue > 0) {
    return { ok: false, checked, broken: { seq: 0, id: null, reason: `${unsealed.overdue} row(s) are outside the chain and older than the sealing delay (inserted beside it, or the sealer has not run)` } };
  }
  return unsealed.pending ? { ok: true, checked, pending: unsealed.pending } : { ok: true, checked };
}
