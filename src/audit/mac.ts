/**
 * Authenticates audit rows: an HMAC-SHA256 over each row's content, keyed with a key derived from the gateway's
 * secret, written with the row. Only rows that carry a valid MAC enter an org's chain (audit/seal.ts), so a row
 * that someone with write access to the store inserts or alters, without the key, is refused and reported, never
 * adopted (issue 26, item 5). The key is bound to the store's database handle once (`bindAuditKey`), so the writers
 * that take a transaction (recordAudit in every domain module) need no extra argument.
 */
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual } from 'node:crypto';
import { handleIdentity, type Queryable } from '../store/db.ts';
import { rowTail, type ChainedFields } from './chain.ts';

/** What a row's MAC covers, and the MAC it carries (an audit_events row as the store returns it). */
type MaccedRow = Omit<ChainedFields, 'seq' | 'prevHash'> & { id: string; mac: string | null };

/** Bumped when the message layout changes; part of the MAC'd text, so a MAC of one layout never passes as another. */
const VERSION = 'v1';

/** The audit MAC key, as the HMAC-SHA256 (hex) of a message under it: the key is imported once, here. */
export type AuditMacKey = (message: string) => string;

/**
 * HKDF-SHA256 of the gateway's secret key under this purpose label (never the encryption or approval digest key).
 * Bun's native keyed hasher where it runs (about 1.0 µs per row against 1.2 µs for node:crypto with a KeyObject, on
 * the hot path's row size), node:crypto elsewhere (Deno).
 */
export function deriveAuditMacKey(secretKey: Uint8Array): AuditMacKey {
  const raw = new Uint8Array(hkdfSync('sha256', secretKey, new Uint8Array(0), 'toolgate audit row mac v1', 32));
  if (typeof Bun !== 'undefined' && typeof Bun.CryptoHasher === 'function')
    return (message) => new Bun.CryptoHasher('sha256', raw).update(message).digest('hex');
  const key = createSecretKey(raw);
  return (message) => createHmac('sha256', key).update(message).digest('hex');
}

/**
 * Keys by the identity a database handle shares with every transaction opened on it (store/db.ts handleIdentity), so
 * a key bound to the store reaches `appendAudit(tx, ...)` too.
 */
const keys = new WeakMap<object, AuditMacKey>();

/** Binds the audit MAC key to a store's database handle (gateway start, CLI). */
export function bindAuditKey(db: Queryable, key: AuditMacKey): void {
  keys.set(handleIdentity(db), key);
}

/** The bound key; throws when none is, so no writer ever stores a row without its MAC. */
export function auditKeyOf(db: Queryable): AuditMacKey {
  const key = keys.get(handleIdentity(db));
  if (!key) throw new Error('no audit MAC key is bound to this store (bindAuditKey)');
  return key;
}

/**
 * The MAC of a row, given its chain.ts `rowTail` (created_at, action, actor type and id, target type and id, outcome,
 * canonical details): the same canonical JSON the chain hash covers, with the row id and org in front instead of the
 * chain position (unknown when the row is written). The id is covered, so a genuine row cannot be copied in again.
 */
export function rowMac(key: AuditMacKey, id: string, orgId: string, tail: string): string {
  return key(`[${JSON.stringify(VERSION)},${JSON.stringify(id)},${JSON.stringify(orgId)}${tail}`);
}

/** Whether a stored row carries a valid MAC over exactly what it holds. */
export function rowAuthentic(key: AuditMacKey, row: MaccedRow): boolean {
  if (typeof row.mac !== 'string' || row.mac.length !== 64) return false;
  const expected = Buffer.from(rowMac(key, row.id, row.orgId, rowTail(row)), 'hex');
  const given = Buffer.from(row.mac, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
