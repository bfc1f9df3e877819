/**
 * The verified checkpoint of an org's audit chain (decision 0348): the last row an intact verification ended on
 * (audit_chains.verified_seq / verified_hash), with a MAC under the audit key, so an incremental verification starts
 * there instead of at the chain's base. Someone with write access to the store but not the key cannot move it past
 * rows they changed: a checkpoint whose MAC does not match, or whose row no longer holds the hash verified, is
 * ignored and the walk starts at the base, which names the break.
 */
import { timingSafeEqual } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import { auditKeyOf, type AuditMacKey } from './mac.ts';

export interface ChainPoint {
  seq: number;
  hash: string;
}

function checkpointMac(key: AuditMacKey, orgId: string, point: ChainPoint): string {
  return key(`["toolgate audit verified v1",${JSON.stringify(orgId.toLowerCase())},${point.seq},${JSON.stringify(point.hash)}]`);
}

const sameHex = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Where an incremental verification starts: the checkpoint when it is genuine and still holds, else the base. */
export async function checkpointStart(db: Queryable, orgId: string, state: { baseSeq: number; baseHash: string }): Promise<ChainPoint> {
  const base = { seq: state.baseSeq, hash: state.baseHash };
  const [saved] = rowsOf<{ verified_seq: string | number | null; verified_hash: string | null; verified_mac: string | null }>(
    await db.execute(sql`SELECT verified_seq, verified_hash, verified_mac FROM audit_chains WHERE org_id = ${orgId}`),
  );
  if (saved?.verified_seq == null || !saved.verified_hash || !saved.verified_mac) return base;
  const point = { seq: Number(saved.verified_seq), hash: saved.verified_hash };
  // Retention moved the base past it: the base is the later point.
  if (point.seq <= state.baseSeq) return base;
  if (!sameHex(checkpointMac(auditKeyOf(db), orgId, point), saved.verified_mac)) return base;
  const [row] = rowsOf<{ hash: string | null }>(await db.execute(sql`SELECT hash FROM audit_events WHERE org_id = ${orgId} AND seq = ${point.seq}`));
  return row?.hash === point.hash ? point : base;
}

/** Moves the checkpoint forward to `point` (never back). */
export async function saveCheckpoint(db: Queryable, orgId: string, point: ChainPoint): Promise<void> {
  if (point.seq <= 0) return;
  await db.execute(sql`UPDATE audit_chains SET verified_seq = ${point.seq}, verified_hash = ${point.hash},
      verified_mac = ${checkpointMac(auditKeyOf(db), orgId, point)}
    WHERE org_id = ${orgId} AND (verified_seq IS NULL OR verified_seq < ${point.seq})`);
}
