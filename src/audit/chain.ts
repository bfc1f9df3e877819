/**
 * The per-org hash chain of audit rows: what a row's hash covers, and the genesis value a chain starts from.
 * Each row stores the hash of its predecessor (prev_hash) and its own hash over prev_hash and every field it holds,
 * so editing, deleting or reordering a stored row breaks the chain at that row (`toolgate audit verify`).
 */
import { createHash } from 'node:crypto';

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
 * JSON with object keys sorted at every level: jsonb reorders keys, so the hash is taken over this form, which is
 * the same whether computed before the insert or from the row read back.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The prev_hash of an org's first row: bound to the org, so a chain cannot be transplanted into another org. */
export function genesisHash(orgId: string): string {
  return sha256(`toolgate-audit-genesis:${orgId}`);
}

export function rowHash(row: ChainedFields): string {
  return sha256(
    canonicalJson([
      row.prevHash,
      row.orgId,
      row.seq,
      row.createdAt.toISOString(),
      row.action,
      row.actorType,
      row.actorId,
      row.targetType,
      row.targetId,
      row.outcome,
      row.details,
    ]),
  );
}
