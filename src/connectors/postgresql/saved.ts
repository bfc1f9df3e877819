/** PostgreSQL's saved-statement facts (shared/saved.ts): how its text is lexed, and how a template binds as `$n`. */
import { elementType, type BoundStatement, type SavedBinding } from '../shared/saved.ts';
import type { SqlSyntax } from '../shared/sqltext.ts';
import type { SavedParam, ScalarType } from '../types.ts';

/** `--` and nesting `/* *\/` comments, `E'...'` backslash escapes, `$tag$` dollar quotes, `$1` markers. */
export const PG_SYNTAX: SqlSyntax = {
  hashComments: false,
  dashCommentNeedsSpace: false,
  nestedComments: true,
  executableComments: false,
  backslash: 'e-strings',
  backtickNames: false,
  bracketNames: false,
  qQuotes: false,
  dollarQuotes: true,
  positional: '$1',
};

const PG_TYPES: Record<ScalarType, string> = {
  string: 'pg_catalog.text',
  enum: 'pg_catalog.text',
  integer: 'pg_catalog.int8',
  number: 'pg_catalog.numeric',
  boolean: 'pg_catalog.bool',
  date: 'pg_catalog.date',
  timestamp: 'pg_catalog.timestamptz',
};

/** PostgreSQL array input text: every element double-quoted (backslash and quote escaped), so no element is read as syntax. */
const pgArrayText = (items: unknown[]): string => `{${items.map((v) => (v === null ? 'NULL' : `"${pgText(v).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
const pgText = (v: unknown): string => (typeof v === 'string' ? v : String(v));

/**
 * PostgreSQL: each parameter is `$n`, sent as text and cast in the statement (`$1::pg_catalog.text::pg_catalog.int8`),
 * so its type is fixed by the template, not by the value; arrays travel as array input text. `args` has been
 * validated against the inputSchema (defaults filled in).
 */
export function bindPostgres(saved: SavedBinding, args: Record<string, unknown>): BoundStatement {
  const byName = new Map(saved.parameters.map((p) => [p.name, p]));
  const index = new Map<string, number>();
  const values: unknown[] = [];
  let text = saved.parts[0]!;
  saved.slots.forEach((name, k) => {
    let n = index.get(name);
    if (n === undefined) {
      const p = byName.get(name)!;
      const v = args[name];
      values.push(v === null || v === undefined ? null : p.type === 'array' ? pgArrayText(v as unknown[]) : pgText(v));
      index.set(name, (n = values.length));
    }
    text += `${pgPlaceholder(n, byName.get(name)!)}${saved.parts[k + 1]!}`;
  });
  return { text, values };
}

/** `$n` with the casts of the parameter's type (what the guard and the resolution check see). */
function pgPlaceholder(n: number, p: SavedParam): string {
  const type = PG_TYPES[elementType(p)];
  const cast = type === 'pg_catalog.text' && p.type !== 'array' ? '' : `::${type}${p.type === 'array' ? '[]' : ''}`;
  return `$${n}::pg_catalog.text${cast}`;
}
