/**
 * The values a saved tool's typed parameters accept, checked by the gateway before any connector type binds them, so
 * every type accepts and refuses the same values (issue 38 item 7c, docs/decisions/0308-typed-parameter-values.md):
 * a date is a real calendar day, a timestamp a real instant, an integer exact, a number finite.
 */
import type { SavedParam, ScalarType } from '../types.ts';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?(Z|([+-])(\d{2})(?::?(\d{2}))?)?$/;
/** The widest UTC offset in use (Kiribati, +14:00); the narrowest is -12:00, but -14:00 is taken too, as ISO 8601 allows. */
const MAX_OFFSET_MINUTES = 14 * 60;

const leapYear = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number): number => (m === 2 ? (leapYear(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);

/** Why y-m-d is no calendar day (years 1 to 9999, months 1 to 12, the month's days), or null. */
function dayProblem(y: number, m: number, d: number): string | null {
  if (y < 1) return 'the year must be from 0001 to 9999';
  if (m < 1 || m > 12) return 'the month must be from 01 to 12';
  const last = daysIn(y, m);
  if (d < 1 || d > last) return `the day must be from 01 to ${last} in ${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}`;
  return null;
}

/** Why `text` is no timestamp (a real day, hours 00-23, minutes and seconds 00-59, an offset within ±14:00), or null. */
function timestampProblem(text: string): string | null {
  const t = TIMESTAMP.exec(text);
  if (!t) return 'it must be ISO 8601, YYYY-MM-DDTHH:MM[:SS[.ffffff]] with an optional Z or ±HH:MM offset';
  const day = dayProblem(Number(t[1]), Number(t[2]), Number(t[3]));
  if (day) return day;
  if (Number(t[4]) > 23) return 'the hour must be from 00 to 23';
  if (Number(t[5]) > 59) return 'the minutes must be from 00 to 59';
  if (t[6] !== undefined && Number(t[6]) > 59) return 'the seconds must be from 00 to 59';
  if (t[9] !== undefined) {
    const minutes = Number(t[11] ?? '0');
    if (minutes > 59 || Number(t[10]) * 60 + minutes > MAX_OFFSET_MINUTES) return 'the UTC offset must be within ±14:00';
  }
  return null;
}

function boundsProblem(p: Pick<SavedParam, 'minimum' | 'maximum'>, n: number): string | null {
  if (p.minimum !== undefined && n < p.minimum) return `it must be at least ${p.minimum}`;
  if (p.maximum !== undefined && n > p.maximum) return `it must be at most ${p.maximum}`;
  return null;
}

/** Why one scalar value does not fit its type, or null. */
function scalarProblem(type: ScalarType, p: Pick<SavedParam, 'minimum' | 'maximum' | 'values'>, v: unknown): string | null {
  switch (type) {
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v)) return 'it must be an integer';
      // Beyond ±(2^53-1) a JSON number is no longer exact: the value bound would not be the value sent.
      if (!Number.isSafeInteger(v)) return `it must be an integer from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`;
      return boundsProblem(p, v);
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v)) return 'it must be a finite number';
      return boundsProblem(p, v);
    case 'boolean':
      return typeof v === 'boolean' ? null : 'it must be true or false';
    case 'date': {
      const d = typeof v === 'string' ? DATE.exec(v) : null;
      if (!d) return 'it must be a date, YYYY-MM-DD';
      return dayProblem(Number(d[1]), Number(d[2]), Number(d[3]));
    }
    case 'timestamp':
      return typeof v === 'string' ? timestampProblem(v) : 'it must be a timestamp, ISO 8601';
    case 'enum':
      return typeof v === 'string' && (p.values ?? []).includes(v) ? null : `it must be one of ${(p.values ?? []).map((x) => JSON.stringify(x)).join(', ')}`;
    case 'string':
      return typeof v === 'string' ? null : 'it must be a string';
  }
}

/** Why an argument does not fit its parameter (an array's every element its items' type), worded for the agent; or null. */
export function paramValueProblem(p: SavedParam, value: unknown): string | null {
  if (value === null || value === undefined) return null; // presence is the inputSchema's (required, defaults)
  if (p.type === 'array') {
    if (!Array.isArray(value)) return `The argument "${p.name}" must be an array.`;
    const items = p.items ?? { type: 'string' as const };
    for (const [i, item] of value.entries()) {
      const why = item === null ? null : scalarProblem(items.type, items, item);
      if (why) return `The argument "${p.name}" is refused: element ${i} (${shown(item)}) is not valid: ${why}.`;
    }
    return null;
  }
  const why = scalarProblem(p.type, p, value);
  return why ? `The argument "${p.name}" is refused: ${shown(value)} is not a valid ${p.type}: ${why}.` : null;
}

/** The first argument of a saved tool's call that does not fit its parameter, as the refusal's text; or null. */
export function savedArgumentsProblem(params: readonly SavedParam[], args: Record<string, unknown>): string | null {
  for (const p of params) {
    const why = paramValueProblem(p, args[p.name]);
    if (why) return why;
  }
  return null;
}

/** A value as the refusal quotes it: JSON, cut at 40 characters (an argument may be long). */
function shown(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

/**
 * A checked timestamp argument as UTC text, `YYYY-MM-DD HH:MM:SS[.ffffff]`, every fractional digit kept. No offset
 * means UTC, as on PostgreSQL (its sessions run in UTC): what a type without zones (MySQL DATETIME) binds.
 */
export function timestampArgumentToUtc(text: string): string {
  const t = TIMESTAMP.exec(text);
  if (!t) return text;
  const [, y, mo, d, h, mi, s = '00', frac = '', , sign, oh = '0', om = '0'] = t;
  const offsetMinutes = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  if (offsetMinutes === 0) return `${y}-${mo}-${d} ${h}:${mi}:${s}${frac}`;
  // Whole minutes shift through Date (exact for them); the seconds and their fraction are carried over as written.
  const at = new Date(0);
  at.setUTCFullYear(Number(y), Number(mo) - 1, Number(d)); // not Date.UTC: it maps the years 0-99 to 1900-1999
  at.setUTCHours(Number(h), Number(mi) - offsetMinutes, 0, 0);
  const base = at.toISOString().slice(0, 16).replace('T', ' ');
  return `${base}:${s}${frac}`;
}
