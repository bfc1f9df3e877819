/**
 * Saved-statement tools (issue 30, docs/tool-policies.md): a fixed statement with named, typed `:name` placeholders.
 * This module owns the template: finding the placeholders (never inside a string literal, a quoted name or a
 * comment; what a comment or a quote is comes from the type's `SqlSyntax`), the tool's inputSchema generated from the
 * parameters, and the positional binding. Each type's folder binds a template with its own markers and values
 * (`<type>/saved.ts`: `$n` for PostgreSQL, `?` for MySQL, `@p1` / `:1` for SQL Server / Oracle), kept apart as driver
 * parameters. A value is never put into the text, so whatever a string argument holds is data
 * (docs/decisions/0260-saved-statement-tools.md).
 */
import type { SavedParam, SavedStatement, SavedTemplate, ScalarType } from '../types.ts';
import type { SqlSyntax } from './sqltext.ts';

const NAME_CHAR = /[A-Za-z0-9_]/;
const PLACEHOLDER = /:([A-Za-z_][A-Za-z0-9_]*)/g;

/** Index just past the quoted or commented run that starts at i, or -1 when it does not end. */
function skipRun(sql: string, i: number, syntax: SqlSyntax): number {
  const c = sql[i]!;
  const next = sql[i + 1];
  if ((c === '-' && next === '-') || (c === '#' && syntax.hashComments)) {
    const nl = sql.indexOf('\n', i);
    return nl < 0 ? sql.length : nl + 1;
  }
  if (c === '/' && next === '*') {
    const end = sql.indexOf('*/', i + 2);
    return end < 0 ? -1 : end + 2;
  }
  if (c === '[' && syntax.bracketNames) return closeAt(sql, i, ']');
  if (syntax.qQuotes && c === "'" && /[qQ]/.test(sql[i - 1] ?? '') && !NAME_CHAR.test(sql[i - 2] ?? '')) {
    // Oracle's alternative quoting: q'[...]', q'{...}', q'<...>', q'(...)' or q'X...X'.
    const open = sql[i + 1] ?? '';
    const close = ({ '[': ']', '{': '}', '<': '>', '(': ')' } as Record<string, string>)[open] ?? open;
    const end = sql.indexOf(`${close}'`, i + 2);
    return end < 0 ? -1 : end + 2;
  }
  if (c === '$' && syntax.dollarQuotes) {
    const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 65))![0];
    const close = sql.indexOf(tag, i + tag.length);
    return close < 0 ? -1 : close + tag.length;
  }
  const backslash = syntax.backslash === 'quotes' ? c !== '`' : syntax.backslash === 'e-strings' && c === "'" && /[eE]/.test(sql[i - 1] ?? '');
  let j = i + 1;
  while (j < sql.length) {
    if (backslash && sql[j] === '\\') j += 2;
    else if (sql[j] === c) {
      if (sql[j + 1] !== c) return j + 1;
      j += 2;
    } else j++;
  }
  return -1;
}

/** Index just past a run closed by `close` (doubled to escape it), or -1. */
function closeAt(sql: string, i: number, close: string): number {
  let j = i + 1;
  while (j < sql.length) {
    if (sql[j] === close) {
      if (sql[j + 1] !== close) return j + 1;
      j += 2;
    } else j++;
  }
  return -1;
}

function startsRun(sql: string, i: number, syntax: SqlSyntax): boolean {
  const c = sql[i]!;
  const next = sql[i + 1];
  if (c === '[' && syntax.bracketNames) return true;
  if (c === "'" || c === '"' || (c === '`' && syntax.backtickNames)) return true;
  if ((c === '-' && next === '-') || (c === '/' && next === '*') || (c === '#' && syntax.hashComments)) return true;
  return c === '$' && syntax.dollarQuotes && !NAME_CHAR.test(sql[i - 1] ?? '') && /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.test(sql.slice(i, i + 65));
}

/** A refusal of the definition, worded for the admin (the REST answer's message). */
export class TemplateError extends Error {}

/**
 * Splits `statement` at its `:name` placeholders. Refused: a placeholder naming no parameter, a parameter used
 * nowhere, a declared parameter's placeholder inside quotes or a comment (it would not be bound), positional
 * parameters of the driver (`$1`, `?`) and `{{...}}` templates.
 */
export function parseTemplate(statement: string, params: readonly SavedParam[], syntax: SqlSyntax): SavedTemplate {
  const declared = new Set(params.map((p) => p.name));
  const parts: string[] = [];
  const slots: string[] = [];
  let from = 0;
  let i = 0;
  while (i < statement.length) {
    const c = statement[i]!;
    if (startsRun(statement, i, syntax)) {
      const end = skipRun(statement, i, syntax);
      if (end < 0) throw new TemplateError('The statement has an unterminated string, quoted name or comment.');
      for (const m of statement.slice(i, end).matchAll(PLACEHOLDER)) {
        if (declared.has(m[1]!) && statement[i + m.index - 1] !== ':') {
          throw new TemplateError(
            `The placeholder :${m[1]} is inside a string literal, a quoted name or a comment, where it would not be bound; write it outside quotes (its value is bound as data).`,
          );
        }
      }
      i = end;
    } else if (c === ':' && statement[i + 1] === ':') i += 2;
    else if (c === ':' && /[A-Za-z_]/.test(statement[i + 1] ?? '') && !NAME_CHAR.test(statement[i - 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(statement.slice(i + 1))![0];
      if (!declared.has(name)) throw new TemplateError(`The placeholder :${name} names no declared parameter.`);
      parts.push(statement.slice(from, i));
      slots.push(name);
      i += 1 + name.length;
      from = i;
    } else if ((c === '$' && syntax.positional === '$1' && /[0-9]/.test(statement[i + 1] ?? '')) || (c === '?' && syntax.positional === '?')) {
      throw new TemplateError(`Positional parameters (${c === '?' ? '?' : '$1'}) are not accepted: name each parameter and write it as :name.`);
    } else if (c === '{' && statement[i + 1] === '{') {
      throw new TemplateError('{{...}} templates are not accepted: write each parameter as :name.');
    } else i++;
  }
  parts.push(statement.slice(from));
  for (const p of params)
    if (!slots.includes(p.name)) throw new TemplateError(`The parameter ${p.name} is declared but the statement does not use it (:${p.name}).`);
  return { parts, slots };
}

const DATE_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';
const TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$';
const DEFAULT_MAX_ITEMS = 100;

type ScalarBounds = Omit<SavedParam, 'name' | 'description' | 'items'>;

function scalarSchema(p: ScalarBounds): Record<string, unknown> {
  const bounds = (keys: (keyof ScalarBounds)[]) => Object.fromEntries(keys.filter((k) => p[k] !== undefined).map((k) => [k, p[k]]));
  switch (p.type) {
    case 'string':
      return { type: 'string', ...bounds(['minLength', 'maxLength', 'pattern']) };
    case 'integer':
    case 'number':
      return { type: p.type, ...bounds(['minimum', 'maximum']) };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', pattern: DATE_PATTERN };
    case 'timestamp':
      return { type: 'string', pattern: TIMESTAMP_PATTERN };
    case 'enum':
      return { type: 'string', enum: p.values ?? [] };
    default:
      throw new TemplateError(`Unknown parameter type ${String(p.type)}.`);
  }
}

const FORMAT_HINT: Partial<Record<SavedParam['type'], string>> = { date: ' (a date, YYYY-MM-DD)', timestamp: ' (a timestamp, ISO 8601)' };

/** The JSON Schema of one parameter, as the tool's inputSchema lists it. */
export function parameterSchema(p: SavedParam): Record<string, unknown> {
  const own =
    p.type === 'array'
      ? { type: 'array', items: scalarSchema(p.items ?? { type: 'string' }), minItems: 1, maxItems: p.maxItems ?? DEFAULT_MAX_ITEMS }
      : scalarSchema(p);
  const hint = FORMAT_HINT[p.type === 'array' ? (p.items?.type ?? 'string') : p.type] ?? '';
  return { ...own, description: p.description + hint, ...(p.default !== undefined ? { default: p.default } : {}) };
}

/** The tool's inputSchema: one property per parameter; those without a default are required. */
export function savedInputSchema(params: readonly SavedParam[]): {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties: false;
} {
  const required = params.filter((p) => p.default === undefined).map((p) => p.name);
  return {
    type: 'object',
    properties: Object.fromEntries(params.map((p) => [p.name, parameterSchema(p)])),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  };
}

/** A statement ready for the driver: its text with the dialect's markers, and the values they stand for. */
export interface BoundStatement {
  text: string;
  values: unknown[];
  /** What the guard checks when it does not accept this driver's markers (mssql, oracle); absent: `text`. */
  guardText?: string;
  /** MySQL: where each `?` of `text` is (one per value), so a tool policy's own `?` can be bound among them. */
  offsets?: number[];
}

/** The type a parameter's values take (an array's: its elements'). */
export const elementType = (p: SavedParam): ScalarType => (p.type === 'array' ? (p.items?.type ?? 'string') : p.type);

/** What a Dialect's bind takes: the template and its parameters. */
export type SavedBinding = Pick<SavedStatement, 'parts' | 'slots' | 'parameters'>;

/** How a positional dialect writes its n-th marker (1-based), and how it takes a value of a type (in its folder). */
export interface PositionalMarkers {
  marker(n: number): string;
  value(type: ScalarType, v: unknown): unknown;
}

/**
 * A positional dialect (SQL Server `@p1`, `@p2`, ...; Oracle `:1`, `:2`, ...): one marker per placeholder, one per
 * element of an array (a list, `IN (:ids)`), each with its own value. Their guards refuse bind markers, so
 * `guardText` is the same statement with the literal 0 at each marker: a marker can only stand where a value can,
 * and the guard decides on that.
 */
export function bindPositional(
  d: PositionalMarkers,
  saved: SavedBinding,
  args: Record<string, unknown>,
  sample = false,
): BoundStatement & { guardText: string } {
  const byName = new Map(saved.parameters.map((p) => [p.name, p]));
  const values: unknown[] = [];
  let text = saved.parts[0]!;
  let guardText = text;
  saved.slots.forEach((name, k) => {
    const p = byName.get(name)!;
    const v = args[name] ?? null;
    const items = p.type === 'array' && !sample ? ((v as unknown[] | null) ?? [null]) : [v];
    const markers = items.map((item) => (values.push(d.value(elementType(p), item)), d.marker(values.length)));
    text += markers.join(', ') + saved.parts[k + 1]!;
    guardText += markers.map(() => '0').join(', ') + saved.parts[k + 1]!;
  });
  return { text, values, guardText };
}
