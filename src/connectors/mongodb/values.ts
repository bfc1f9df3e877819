/**
 * BSON values as JSON, following the rules every SQL driver applies (shared/jsonsafe.ts): 64-bit integers as
 * numbers while exact (the client reads them as bigint, useBigInt64), Decimal128 as a number while exact else its
 * decimal text, dates as ISO 8601 UTC, binary as base64 (a UUID as its text), ObjectId as its 24 hex digits.
 * Regular expressions, timestamps, JavaScript code and min/max keys become their text forms.
 */
import { decimalTextToJson, floatToJson, int64TextToJson, toBase64 } from '../shared/jsonsafe.ts';

type Bsonish = { _bsontype?: string; toString(): string; toHexString?: () => string; [k: string]: unknown };

export function bsonToJson(value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return floatToJson(value);
    case 'bigint':
      return int64TextToJson(value.toString());
    case 'object':
      break;
    default:
      return String(value);
  }
  if (depth > 200) return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return toBase64(value);
  if (Array.isArray(value)) return value.map((v) => bsonToJson(v, depth + 1));
  if (value instanceof RegExp) return String(value);
  const b = value as Bsonish;
  switch (b._bsontype) {
    case 'ObjectId':
      return b.toHexString!();
    case 'Decimal128':
      return decimalTextToJson(b.toString());
    case 'Long':
      return int64TextToJson(b.toString());
    case 'Int32':
    case 'Double':
      return floatToJson(Number((b as unknown as { valueOf(): number }).valueOf()));
    case 'Binary': {
      const bin = b as unknown as { sub_type: number; buffer: Uint8Array; toUUID?: () => { toHexString(dashes?: boolean): string } };
      if (bin.sub_type === 4 && bin.buffer.length === 16 && bin.toUUID) return bin.toUUID().toHexString(true);
      return toBase64(bin.buffer);
    }
    case 'BSONRegExp': {
      const r = b as unknown as { pattern: string; options: string };
      return `/${r.pattern}/${r.options}`;
    }
    case 'Timestamp': {
      const t = b as unknown as { t: number; i: number };
      return `Timestamp(${t.t}, ${t.i})`;
    }
    case 'Code':
      return String((b as unknown as { code: string }).code);
    case 'MinKey':
      return 'MinKey';
    case 'MaxKey':
      return 'MaxKey';
    case 'DBRef': {
      const r = b as unknown as { collection: string; oid: unknown; db?: string };
      return { $ref: r.collection, $id: bsonToJson(r.oid, depth + 1), ...(r.db ? { $db: r.db } : {}) };
    }
    case 'BSONSymbol':
      return String((b as unknown as { value: string }).value);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = bsonToJson(v, depth + 1);
  return out;
}
