/**
 * What an audit row's details look like once stored: jsonb takes no NUL and no lone surrogates (either would fail
 * the insert, and the batch with it), keeps no undefined, function or non-finite number. `storable` returns that
 * value; `storableJson` writes it straight as canonical JSON (audit/chain.ts), in one pass, for the hot path: the
 * same text is sent to the store and hashed into the chain, and reading it back from jsonb gives it again
 * (test/audit-seal.test.ts proves both on random and hand-picked values).
 */

const UNSTORABLE_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const MAYBE_UNSTORABLE = /[\u0000\uD800-\uDFFF]/;

function storableText(text: string): string {
  return MAYBE_UNSTORABLE.test(text) ? text.replace(UNSTORABLE_TEXT, '\uFFFD') : text;
}

/** Values JSON leaves out of objects (and writes as null in arrays). */
const omitted = (value: unknown) => value === undefined || typeof value === 'function' || typeof value === 'symbol';

/**
 * The value as jsonb stores it: strings cleaned, non-finite numbers null, undefined/function/symbol members left
 * out. Objects become plain objects of their own enumerable keys (a Date becomes {}); the key `__proto__` is dropped.
 */
export function storable(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (Array.isArray(value)) return value.map(storable);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const key = storableText(k);
      if (!omitted(v) && key !== '__proto__') out[key] = storable(v);
    }
    return out;
  }
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}

/** canonicalJson(storable(value)), without building the intermediate value. */
export function storableJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(storableText(value));
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(value); // throws, as the insert would
    case 'object':
      if (value === null) return 'null';
      return Array.isArray(value) ? arrayJson(value) : objectJson(value as Record<string, unknown>);
    default:
      return 'null';
  }
}

function arrayJson(items: readonly unknown[]): string {
  let out = '[';
  for (let i = 0; i < items.length; i++) out += (i ? ',' : '') + storableJson(items[i]);
  return `${out}]`;
}

function objectJson(record: Record<string, unknown>): string {
  const keys = Object.keys(record);
  if (keys.some((k) => k === '__proto__' || MAYBE_UNSTORABLE.test(k))) return cleanedObjectJson(record, keys);
  let out = '{';
  for (const key of keys.sort()) {
    const v = record[key];
    if (!omitted(v)) out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${storableJson(v)}`;
  }
  return `${out}}`;
}

/** Keys that need cleaning: cleaned first (two may clean to the same key: the later wins, as in `storable`). */
function cleanedObjectJson(record: Record<string, unknown>, keys: string[]): string {
  const members = new Map<string, unknown>();
  for (const k of keys) {
    const v = record[k];
    const key = storableText(k);
    if (!omitted(v) && key !== '__proto__') members.set(key, v);
  }
  let out = '{';
  for (const key of [...members.keys()].sort()) out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${storableJson(members.get(key))}`;
  return `${out}}`;
}
