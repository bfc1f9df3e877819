/** MySQL's saved-statement facts (shared/saved.ts): how its text is lexed, and how a template binds as `?`. */
import { elementType, type BoundStatement, type SavedBinding } from '../shared/saved.ts';
import type { SqlSyntax } from '../shared/sqltext.ts';
import { timestampArgumentToUtc } from '../shared/param-values.ts';
import type { ScalarType } from '../types.ts';

/** `#` and `-- ` comments, executable `/*! *\/` comments, backslash escapes in strings, backtick names, `?` markers. */
export const MYSQL_SYNTAX: SqlSyntax = {
  hashComments: true,
  dashCommentNeedsSpace: true,
  nestedComments: false,
  executableComments: true,
  backslash: 'quotes',
  backtickNames: true,
  bracketNames: false,
  qQuotes: false,
  dollarQuotes: false,
  positional: '?',
};

/** A timestamp as MySQL DATETIME text in UTC (the session's time zone), its fraction kept; the gateway checked it (shared/param-values.ts). */
const mysqlValue = (type: ScalarType, v: unknown): unknown => (v !== null && type === 'timestamp' ? timestampArgumentToUtc(String(v)) : v);

/**
 * MySQL: each placeholder is `?` (a prepared statement: values travel in the binary protocol); an array stands for
 * one `?` per element, for `IN (:ids)`. `sample`: the text for the guard at save time (one `?` per array).
 */
export function bindMysql(saved: SavedBinding, args: Record<string, unknown>, sample = false): BoundStatement {
  const byName = new Map(saved.parameters.map((p) => [p.name, p]));
  const values: unknown[] = [];
  const offsets: number[] = [];
  let text = saved.parts[0]!;
  const mark = (value: unknown): void => {
    values.push(value);
    offsets.push(text.length);
    text += '?';
  };
  saved.slots.forEach((name, k) => {
    const p = byName.get(name)!;
    const v = args[name] ?? null;
    if (p.type === 'array' && !sample) {
      const items = (v as unknown[] | null) ?? [null];
      items.forEach((item, i) => {
        if (i > 0) text += ', ';
        mark(mysqlValue(elementType(p), item));
      });
    } else mark(mysqlValue(elementType(p), v));
    text += saved.parts[k + 1]!;
  });
  return { text, values, offsets };
}
