/**
 * Walks an org's audit chain from its base (genesis, or the last retention checkpoint), or incrementally from the
 * last verified checkpoint (decision 0348), to its head and names the
 * first row that breaks it: a changed row (hash), a deleted or reordered one (sequence gap or prev_hash), a row the
 * gateway did not write (no valid MAC, audit/mac.ts: in the chain, or refused by a sealer and kept outside it), a row
 * left outside the chain longer than the sealing delay, or a head that does not match the last row (rows deleted at
 * the end). Rows chained before rows carried a MAC (up to the chain's mac_from_seq) are covered by the chain alone.
 */
import type { Queryable } from '../store/db.ts';
import { rowHash } from './chain.ts';
import { auditKeyOf, rowAuthentic } from './mac.ts';
import { auditPageAsc, chainState, unsealedCounts } from './repository.ts';
import { checkpointStart, saveCheckpoint } from './verify-checkpoint-statements.ts';

/** Rows not sealed this long after their commit mean the sealer did not run (or a row was slipped in): broken. */
const SEAL_GRACE_MS = 5 * 60_000;

const PAGE_ROWS = 1000;

export interface ChainReport {
  ok: boolean;
  /** Rows checked. */
  checked: number;
  /** Incremental runs: the chain position the walk started after (the verified checkpoint, or the base). */
  fromSeq?: number;
  /** Rows committed recently and not sealed into the chain yet (not a failure). */
  pending?: number;
  /** Rows a sealer refused (no valid MAC) and kept outside the chain: a failure. */
  refused?: number;
  /** The first broken row (its seq and id, when it exists) and why. */
  broken?: { seq: number; id: string | null; reason: string };
}

export interface VerifyOptions {
  /**
   * Start after the last verified checkpoint (audit/verify-checkpoint-statements.ts) instead of the chain's base: rows verified
   * before are not walked again. Falls back to the base when there is no valid checkpoint.
   */
  incremental?: boolean;
}

export async function verifyChain(db: Queryable, orgId: string, now: Date = new Date(), options: VerifyOptions = {}): Promise<ChainReport> {
  const report = await walkChain(db, orgId, now, options);
  // An intact chain moves the checkpoint to the row the walk ended on, for the next incremental run.
  if (report.ok && report.last) await saveCheckpoint(db, orgId, report.last);
  const { last: _last, fromSeq, ...rest } = report;
  return options.incremental ? { ...rest, fromSeq } : rest;
}

type PageRow = Awaited<ReturnType<typeof auditPageAsc>>[number];

/** What is wrong with the next row of the walk (its position, its link, its hash, its MAC), or null when it holds. */
function rowBreak(row: PageRow, expectedSeq: number, prevHash: string, key: ReturnType<typeof auditKeyOf>, macFromSeq: number) {
  if (row.seq !== expectedSeq) return { seq: expectedSeq, id: null, reason: `row ${expectedSeq} is missing (next row is ${row.seq})` };
  if (row.prevHash !== prevHash)
    return { seq: row.seq, id: row.id, reason: 'prev_hash does not match the previous row (a row before it was changed, removed or reordered)' };
  if (rowHash({ ...row, seq: row.seq, prevHash: row.prevHash! }) !== row.hash)
    return { seq: row.seq, id: row.id, reason: 'the row was changed after it was written (its hash does not match its content)' };
  if (row.seq > macFromSeq && !rowAuthentic(key, row))
    return { seq: row.seq, id: row.id, reason: 'the row does not carry a valid MAC: the gateway did not write it as it is' };
  return null;
}

async function walkChain(db: Queryable, orgId: string, now: Date, options: VerifyOptions): Promise<ChainReport & { last?: { seq: number; hash: string } }> {
  const key = auditKeyOf(db);
  const state = await chainState(db, orgId);
  const start = options.incremental ? await checkpointStart(db, orgId, state) : { seq: state.baseSeq, hash: state.baseHash };
  const fromSeq = start.seq;
  let expectedSeq = start.seq + 1;
  let prevHash = start.hash;
  let checked = 0;
  for (;;) {
    const rows = await auditPageAsc(db, orgId, {}, expectedSeq - 1, PAGE_ROWS);
    for (const row of rows) {
      const broken = rowBreak(row, expectedSeq, prevHash, key, state.macFromSeq);
      if (broken) return { ok: false, checked, fromSeq, broken };
      prevHash = row.hash!; // rowBreak found it equal to the hash of the row
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < PAGE_ROWS) break;
  }
  if (expectedSeq - 1 !== state.headSeq || prevHash !== state.headHash) {
    return {
      ok: false,
      checked,
      fromSeq,
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
      fromSeq,
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
      fromSeq,
      broken: {
        seq: 0,
        id: null,
        reason: `${unsealed.overdue} row(s) are outside the chain and older than the sealing delay (inserted beside it, or the sealer has not run)`,
      },
    };
  }
  const last = { seq: expectedSeq - 1, hash: prevHash };
  return unsealed.pending ? { ok: true, checked, fromSeq, pending: unsealed.pending, last } : { ok: true, checked, fromSeq, last };
}
