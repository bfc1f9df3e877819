/** The statements of the verified checkpoint (verify-checkpoint.ts): its columns of audit_chains, and a row's hash. */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';

export interface SavedCheckpoint {
  verified_seq: string | number | null;
  verified_hash: string | null;
  verified_mac: string | null;
}

export async function readCheckpoint(db: Queryable, orgId: string): Promise<SavedCheckpoint | undefined> {
  const [saved] = rowsOf<SavedCheckpoint>(await db.execute(sql`SELECT verified_seq, verified_hash, verified_mac FROM audit_chains WHERE org_id = ${orgId}`));
  return saved;
}

/** The hash of the org's row at chain position `seq`, or null when there is none. */
export async function hashAt(db: Queryable, orgId: string, seq: number): Promise<string | null> {
  const [row] = rowsOf<{ hash: string | null }>(await db.execute(sql`SELECT hash FROM audit_events WHERE org_id = ${orgId} AND seq = ${seq}`));
  return row?.hash ?? null;
}

/** Moves the checkpoint forward to `seq` (never back), with its hash and MAC. */
export async function writeCheckpoint(db: Queryable, orgId: string, seq: number, hash: string, mac: string): Promise<void> {
  await db.execute(sql`UPDATE audit_chains SET verified_seq = ${seq}, verified_hash = ${hash}, verified_mac = ${mac}
    WHERE org_id = ${orgId} AND (verified_seq IS NULL OR verified_seq < ${seq})`);
}
