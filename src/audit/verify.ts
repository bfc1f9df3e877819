/**
 * Walks an org's audit chain from its base (genesis, or the last retention checkpoint) to its head and names the
 * first row that breaks it: a changed row (hash), a deleted or reordered one (sequence gap or prev_hash), a row the
 * gateway did not write (no valid MAC, audit/mac.ts: in the chain, or refused by a sealer and kept outside it), a row
 * left outside the chain longer than the sealing delay, or a head that does not match the last row (rows deleted at
 * the end). Rows chained before rows carried a MAC (up to the chain's mac_from_seq) are covered by the chain alone.
 */
import type { Queryable } from '../store/db.ts';
import { rowHash } from './chain.ts';
import { auditKeyOf, rowAuthentic } from './mac.ts';
import { auditPageAsc, chainState, unsealedCounts } from './repository.ts';

/** Rows not sealed this long after their commit mean the sealer did not run (or a row was slipped in): broken. */
const SEAL_GRACE_MS = 5 * 60_000;

const PAGE_ROWS = 1000;

export interface ChainReport {
  ok: boolean;
  /** Rows checked. */
  checked: number;
  /** Rows committed recently and not sealed into the chain yet (not a failure). */
  pending?: number;
  /** Rows a sealer refused (no valid MAC) and kept outside the chain: a failure. */
  refused?: number;
  /** The first broken row (its seq and id, when it exists) and why. */
  broken?: { seq: number; id: string | null; reason: string };
}

export async function verifyChain(db: Queryable, orgId: string, now: Date = new Date()): Promise<ChainReport> {
  const key = auditKeyOf(db);
  const state = await chainState(db, orgId);
  let expectedSeq = state.baseSeq + 1;
  let prevHash = state.baseHash;
  let checked = 0;
  for (;;) {
    const rows = await auditPageAsc(db, orgId, {}, expectedSeq - 1, PAGE_ROWS);
    for (const row of rows) {
      if (row.seq !== expectedSeq)
        return { ok: false, checked, broken: { seq: expectedSeq, id: null, reason: `row ${expectedSeq} is missing (next row is ${row.seq})` } };
      if (row.prevHash !== prevHash)
        return {
          ok: false,
          checked,
          broken: { seq: row.seq, id: row.id, reason: 'prev_hash does not match the previous row (a row before it was changed, removed or reordered)' },
        };
      const hash = rowHash({ ...row, seq: row.seq, prevHash: row.prevHash! });
      if (hash !== row.hash)
        return {
          ok: false,
          checked,
          broken: { seq: row.seq, id: row.id, reason: 'the row was changed after it was written (its hash does not match its content)' },
        };
      if (row.seq > state.macFromSeq && !rowAuthentic(key, row)) {
        return {
          ok: false,
          checked,
          broken: { seq: row.seq, id: row.id, reason: 'the row does not carry a valid MAC: the gateway did not write it as it is' },
        };
      }
      prevHash = row.hash;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < PAGE_ROWS) break;
  }
  if (expectedSeq - 1 !== state.headSeq || prevHash !== state.headHash) {
    return {
      ok: false,
      checked,
      broken: {
        seq: expectedSeq,
        id: null,
        reason: `the chain head is row ${state.headSeq}, but the rows end at ${expectedSeq - 1} (rows at the end were removed)`,
      },
    };
  }
  const unsealed = await unsealedCounts(db, orgId, new Date(now.getTime() - SEAL_GRACE_MS));
  if (unsealed.refused > 0) {
    return {
      ok: false,
      checked,
      refused: unsealed.refused,
      broken: {
        seq: 0,
        id: null,
        reason: `${unsealed.refused} row(s) without a valid MAC were written beside the chain (not by the gateway) and refused by the sealer`,
      },
    };
  }
  if (unsealed.overdue > 0) {
    return {
      ok: false,
      checked,
      broken: {
        seq: 0,
        id: null,
        reason: `${unsealed.overdue} row(s) are outside the chain and older than the sealing delay (inserted beside it, or the sealer has not run)`,
      },
    };
  }
  return unsealed.pending ? { ok: true, checked, pending: unsealed.pending } : { ok: true, checked };
}
