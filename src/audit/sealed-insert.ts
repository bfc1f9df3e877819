/**
 * The hot path's audit write, sealed in the INSERT that commits it (issue 42, docs/decisions/0341-audit-sealed-at-insert.md):
 * the writer holds what it believes is each org's chain head, gives the batch's rows their positions, hashes and MACs
 * in memory, and one statement locks those heads (org-id order), moves every head still where the writer believed it
 * and inserts that org's rows sealed. An org whose head moved meanwhile (another instance, a management row, a
 * sealer) gets no row from that statement: its rows are handed back, and the writer reads the head again and retries.
 */
import type { Queryable } from '../store/db.ts';
import { chainHash } from './chain.ts';
import { auditKeyOf } from './mac.ts';
import { rowText } from './row-text.ts';
import type { AuditInput, Head } from './repository.ts';
import { runSealedInsert } from './sealed-insert-statements.ts';

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a row can be sealed at insert: its org id is in the form the store prints (the hash covers it as sent). */
export const sealableOrg = (orgId: string): boolean => CANONICAL_UUID.test(orgId);

/** What one sealed INSERT did: the orgs whose heads it moved (their rows are committed, sealed), and the rows left. */
export interface SealedWrite {
  /** The moved heads, by org id: where this writer now holds them. */
  moved: Map<string, Head>;
  /** Rows of orgs whose head was not where the writer believed (nothing of theirs was written). */
  left: AuditInput[];
}

/**
 * Writes `events` (every org in `heads`, sealable) sealed after the given heads, in one statement. Throws when the
 * statement fails: then nothing of it was written.
 */
export async function insertSealed(db: Queryable, events: readonly AuditInput[], heads: ReadonlyMap<string, Head>, now: Date): Promise<SealedWrite> {
  const key = auditKeyOf(db);
  const createdAt = now.toISOString();
  const at = new Map<string, Head>();
  // One JSON parameter for the rows and one for the heads: a fixed text whatever the batch (prepared, store/db.ts).
  let json = '[';
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const { id, tail, mac, members } = rowText(key, e, now, e.orgId);
    const head = at.get(e.orgId) ?? heads.get(e.orgId)!;
    const seq = head.seq + 1;
    const hash = chainHash(head.hash, e.orgId, seq, tail);
    at.set(e.orgId, { seq, hash });
    json += `${i ? ',' : ''}{"id":"${id}","mac":"${mac}","org_id":"${e.orgId}","seq":${seq},"prev_hash":"${head.hash}","hash":"${hash}",${members}}`;
  }
  json += ']';
  let moves = '[';
  for (const [orgId, to] of at) {
    const from = heads.get(orgId)!;
    moves += `${moves.length > 1 ? ',' : ''}{"org_id":"${orgId}","from_seq":${from.seq},"from_hash":"${from.hash}","to_seq":${to.seq},"to_hash":"${to.hash}"}`;
  }
  moves += ']';
  const rows = await runSealedInsert(db, json, moves, createdAt);
  const moved = new Map<string, Head>();
  for (const r of rows) moved.set(r.org_id, at.get(r.org_id)!);
  return { moved, left: moved.size === at.size ? [] : events.filter((e) => !moved.has(e.orgId)) };
}

/**
 * Whether a failed statement was refused by the server (so nothing of it was committed, and writing its rows another
 * way cannot write them twice): an error with a SQLSTATE, not of the connection-exception class or an administrator
 * shutdown. A lost connection leaves the outcome unknown: the caller then fails the calls as before.
 */
export function refusedByServer(err: unknown): boolean {
  // drizzle wraps the driver's error (its `cause`).
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P');
}
