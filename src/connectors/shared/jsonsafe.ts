/** JSON-safe encoding of database values, shared by every SQL driver so that tools answer alike whatever the database. */

/*
 * The rules (one rule per type family, whatever the value's magnitude, so a column never has two JSON types):
 *
 * - 64-bit integers (postgres int8, MySQL BIGINT; so count(*) too): JSON numbers while exact, i.e. within
 *   ±(2^53-1) (Number.MAX_SAFE_INTEGER, the range every JSON parser that reads numbers as doubles keeps exactly);
 *   beyond it the decimal STRING. (Issue 17 replaced "strings always": agents compared "40" with 40 and summed
 *   strings. The price is that such a column is "number, or a string beyond 2^53", as MySQL BIT already was, and
 *   the tools' output schema and description say so.)
 * - Exact decimals (postgres numeric, MySQL DECIMAL; so sum/avg of integers too): JSON numbers when the value has
 *   at most 15 significant digits (DBL_DIG: such a decimal survives the round trip through a double, so the JSON
 *   number reads back as the same decimal value) and a double's range; otherwise the exact decimal STRING. The
 *   scale's trailing zeros are not kept ("1999.00" is 1999). NaN and ±Infinity (postgres numeric) are strings.
 * - Smaller integers (int2/int4/oid, TINYINT..INT, YEAR) and floats: JSON numbers. Non-finite floats, which JSON
 *   cannot carry, become the strings "NaN", "Infinity", "-Infinity".
 * - MySQL BIT(n): a number (a decimal string above 2^53), not bytes: BIT columns hold flags and small integers.
 * - timestamp WITH time zone (postgres timestamptz, MySQL TIMESTAMP): ISO 8601 in UTC with "Z", full precision
 *   (microseconds are kept; a JS Date would drop them): "2024-05-01T12:30:00.123456Z".
 * - timestamp WITHOUT time zone (postgres timestamp, MySQL DATETIME): ISO 8601 without a zone:
 *   "2024-05-01T12:30:00.123456". Inventing a zone for a zoneless value would be a lie.
 * - date: "YYYY-MM-DD". time, interval, uuid, inet, money, enums, geometric and every other type: the database's
 *   own text form. Values ISO 8601 cannot carry (infinity, BC dates, MySQL zero dates) keep their text form too.
 * - Binary (postgres bytea, MySQL BLOB/BINARY/VARBINARY/GEOMETRY): standard base64 strings.
 * - json/jsonb (and MySQL/MariaDB JSON): the parsed JSON value (note: JSON numbers beyond 2^53 inside a JSON
 *   document are parsed as JS numbers, as any JSON client would).
 * - Arrays (postgres): JSON arrays of the element encoding. Booleans: booleans. NULL: null.
 *
 * Drivers apply the rules while parsing (postgres.js type parsers, mysql2 options and per-column fix-ups);
 * `toJsonSafe` is the generic fallback for values that still are not JSON (Buffer, bigint, Date, NaN).
 */

/** Base64 of raw bytes. */
export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** A float as JSON: non-finite values become their names, since JSON has no NaN or Infinity. */
export function floatToJson(n: number): number | string {
  return Number.isFinite(n) ? n : String(n);
}

/** 64-bit integer text → a JSON number when it is a safe integer (exact in any JSON parser), else the text. */
export function int64TextToJson(text: string): number | string {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

/** At most this many significant digits make a decimal that a double carries exactly through JSON (DBL_DIG). */
const EXACT_DECIMAL_DIGITS = 15;
const DECIMAL_TEXT = /^[+-]?(\d*)(?:\.(\d*))?$/;
/** A decimal of at most 15 characters with a digit before any point: at most 15 digits, never subnormal. */
const SHORT_DECIMAL = /^[+-]?\d+(?:\.\d*)?$/;

/** Exact decimal text → a JSON number when the double reads back as the same decimal value, else the text. */
export function decimalTextToJson(text: string): number | string {
  // The common case (prices, amounts) without the digit counting below: exact by length alone.
  if (text.length <= EXACT_DECIMAL_DIGITS && SHORT_DECIMAL.test(text)) return Number(text) || 0;
  const m = DECIMAL_TEXT.exec(text);
  if (!m || (m[1] === '' && !m[2])) return text; // NaN, Infinity, exponents or anything unexpected: as sent
  const digits = (m[1]! + (m[2] ?? '')).replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length === 0) return 0;
  if (digits.length > EXACT_DECIMAL_DIGITS) return text;
  const n = Number(text);
  // Out of a double's normal range (numeric allows 10^131072), or subnormal: not exact, keep the text.
  return Number.isFinite(n) && Math.abs(n) >= 2.2250738585072014e-308 ? n : text;
}

/** Parses postgres float text ("NaN", "Infinity", "-Infinity", or a number). */
export function parseFloatText(text: string): number | string {
  return floatToJson(Number(text));
}

// "YYYY-MM-DD HH:MM:SS[.ffffff]" with an optional numeric UTC offset ("+00", "-03:30", "+05:30:15").
const TIMESTAMP_TEXT = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?)?$/;

/** Zoneless SQL timestamp text → ISO 8601 without zone; other text (infinity, BC, zero dates) is kept. */
export function timestampTextToIso(text: string): string {
  const m = TIMESTAMP_TEXT.exec(text);
  if (!m || m[8] !== undefined) return text;
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ?? ''}`;
}

/**
 * Timestamp-with-zone text → ISO 8601 UTC ("...Z"), keeping the fractional digits exactly.
 * Text without an offset is taken as UTC (MySQL TIMESTAMP read with session time_zone '+00:00').
 */
export function timestamptzTextToIso(text: string): string {
  const m = TIMESTAMP_TEXT.exec(text);
  if (!m) return text;
  const [, y, mo, d, h, mi, s, frac = '', sign, oh = '0', om = '0', os = '0'] = m;
  const offsetSeconds = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 3600 + Number(om) * 60 + Number(os));
  if (offsetSeconds === 0) return `${y}-${mo}-${d}T${h}:${mi}:${s}${frac}Z`;
  // Shift whole seconds through Date (exact for them) and re-attach the untouched fraction.
  const utcMs = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offsetSeconds * 1000;
  const shifted = new Date(utcMs);
  if (Number(y) < 100 || shifted.getUTCFullYear() > 9999) return text;
  return `${shifted.toISOString().slice(0, 19)}${frac}Z`;
}

/** Postgres bytea hex text ("\x00ff") → base64. */
export function byteaHexToBase64(text: string): string {
  return text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex').toString('base64') : Buffer.from(text, 'latin1').toString('base64');
}

/** Converts any remaining non-JSON value (Buffer, bigint, Date, non-finite number) following the rules above. */
export function toJsonSafe(value: unknown): unknown {
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
  if (value instanceof Uint8Array) return toBase64(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map(toJsonSafe);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = toJsonSafe(v);
  return out;
}
