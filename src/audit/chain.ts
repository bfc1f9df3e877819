/**
 * The per-org hash chain of audit rows: what a row's hash covers, and the genesis value a chain starts from.
 * Each row stores the hash of its predecessor (prev_hash) and its own hash over prev_hash and every field it holds,
 * so editing, deleting or reordering a stored row breaks the chain at that row (`toolgate audit verify`).
 *
 * The hashed text is the canonical JSON of [prev_hash, org_id, seq, created_at, action, actor_type, actor_id,
 * target_type, target_id, outcome, details]. It is built in two parts: the row's content after seq (`rowTail`, known
 * when the row is written, so the hot path computes it once, audit/seal.ts) and the chain position in front of it
 * (`chainHash`, known only when the row is sealed). `rowHash` joins both: one definition for writer and verifier.
 */
import { sha256Hex as sha256 } from '../util/crypto.ts';

/** The fields of a stored audit row the hash covers (all of them, apart from the hash itself and the row id). */
export interface ChainedFields {
  orgId: string;
  seq: number;
  prevHash: string;
  createdAt: Date;
  action: string;
  actorType: string;
  actorId: string | null;
  targetType: string | null;
  targetId: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

/**
 * JSON with object keys sorted at every level (by UTF-16 code units, the default sort): jsonb reorders keys, so the
 * hash is taken over this form, which is the same whether computed before the insert or from the row read back.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

/** The prev_hash of an org's first row: bound to the org, so a chain cannot be transplanted into another org. */
export function genesisHash(orgId: string): string {
  return sha256(`toolgate-audit-genesis:${orgId}`);
}

/** A scalar as canonicalJson writes it (null for a missing value). */
const text = (value: string | number | null | undefined): string => JSON.stringify(value ?? null);

/** The canonical JSON of a row's content after its chain position, closing bracket included (starts with a comma). */
export function rowTail(row: Omit<ChainedFields, 'orgId' | 'seq' | 'prevHash'>, detailsJson: string = canonicalJson(row.details)): string {
  return `,${text(row.createdAt.toISOString())},${text(row.action)},${text(row.actorType)},${text(row.actorId)},${text(row.targetType)},${text(row.targetId)},${text(row.outcome)},${detailsJson}]`;
}

/** The hash of a row at `seq` after `prevHash`, given its `rowTail`. */
export function chainHash(prevHash: string, orgId: string, seq: number, tail: string): string {
  return sha256(`[${text(prevHash)},${text(orgId)},${text(seq)}${tail}`);
}

export function rowHash(row: ChainedFields): string {
  return chainHash(row.prevHash, row.orgId, row.seq, rowTail(row));
}
