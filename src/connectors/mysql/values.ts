/** Per-column fix-ups that finish the JSON-safe encoding (shared/jsonsafe.ts) of mysql2 rows. */
import type { FieldPacket } from 'mysql2/promise';
import { decimalTextToJson, int64TextToJson, timestampTextToIso, timestamptzTextToIso, toBase64 } from '../shared/jsonsafe.ts';
import type { Row } from '../shared/result.ts';

// MySQL protocol column types (include/field_types.h).
const T_DECIMAL = 0;
const T_LONGLONG = 8;
const T_NEWDECIMAL = 246;
const T_TIMESTAMP = 7;
const T_DATETIME = 12;
const T_BIT = 16;
const BINARY_CHARSET = 63;

type Fix = (v: unknown) => unknown;

const bitToJson: Fix = (v) => {
  if (!(v instanceof Uint8Array)) return v;
  let n = 0n;
  for (const byte of v) n = (n << 8n) | BigInt(byte);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
};
// supportBigNumbers + bigNumberStrings give BIGINT and DECIMAL as exact strings; numbers while exact (jsonsafe.ts).
const int64ToJson: Fix = (v) => (typeof v === 'string' ? int64TextToJson(v) : v);
const decimalToJson: Fix = (v) => (typeof v === 'string' ? decimalTextToJson(v) : v);
const bytesToBase64: Fix = (v) => (v instanceof Uint8Array ? toBase64(v) : v);
// dateStrings gives "YYYY-MM-DD HH:MM:SS[.ffffff]"; TIMESTAMP is read in the session's UTC time zone.
const datetimeToIso: Fix = (v) => (typeof v === 'string' ? timestampTextToIso(v) : v);
const timestampToIso: Fix = (v) => (typeof v === 'string' ? timestamptzTextToIso(v) : v);

function fixFor(f: FieldPacket): Fix | null {
  const type = f.columnType ?? f.type;
  if (type === T_BIT) return bitToJson;
  if (type === T_LONGLONG) return int64ToJson;
  if (type === T_DECIMAL || type === T_NEWDECIMAL) return decimalToJson;
  if (type === T_DATETIME) return datetimeToIso;
  if (type === T_TIMESTAMP) return timestampToIso;
  // Binary strings/BLOBs/GEOMETRY arrive as Buffers; DECIMAL, BIGINT and dates also carry charset 63 but are
  // strings already (the check on the value keeps them as they are).
  if ((f.characterSet ?? f.charsetNr) === BINARY_CHARSET) return bytesToBase64;
  return null;
}

/**
 * The names a result's columns get in a row object. A join's `SELECT *` has columns of the same name (`id` of both
 * tables): the first keeps it, a later one is named by its table as written (`o.id`), else numbered (`id_2`), so no
 * value is lost to a key written twice (docs/decisions/0297).
 */
function columnKeys(fields: readonly FieldPacket[]): string[] {
  const taken = new Set<string>();
  return fields.map((f) => {
    let key = f.name;
    if (taken.has(key)) {
      key = f.table && !taken.has(`${f.table}.${f.name}`) ? `${f.table}.${f.name}` : key;
      for (let n = 2; taken.has(key); n++) key = `${f.name}_${n}`;
    }
    taken.add(key);
    return key;
  });
}

/** A row (as the driver's array of values) as an object with the fix-ups of these fields, computed once per result. */
export function rowFixer(fields: FieldPacket[] | undefined): (values: unknown[]) => Row {
  const list = fields ?? [];
  const keys = columnKeys(list);
  const fixes = list.map((f) => fixFor(f));
  return (values) => {
    const row: Row = {};
    for (let i = 0; i < keys.length; i++) {
      const fix = fixes[i];
      row[keys[i]!] = fix ? fix(values[i]) : values[i];
    }
    return row;
  };
}
