/**
 * Which of a database connector's tables become tools (docs/decisions/0303): glob patterns over `schema.table`
 * (mongodb: `database.collection`), matched case-insensitively; an empty include list lets every table in, an exclude
 * pattern always wins. Also the checks with the words a 400 answers for patterns and the connector's description.
 */
import { AppError } from '../errors.ts';
import type { ToolSpec } from './types.ts';

/** The table filter of a connector as stored (connectors.include_tables / exclude_tables). */
export interface TableFilter {
  include: readonly string[];
  exclude: readonly string[];
}

const bad = (message: string) => new AppError(400, 'validation_error', message);

/**
 * Refuses a pattern list that cannot mean what its author wants: a pattern with no `.` (it would never match a
 * `schema.table`), an empty side of the dot, or a control character.
 */
export function checkTablePatterns(field: 'include_tables' | 'exclude_tables', patterns: readonly string[] | undefined): void {
  if (!patterns) return;
  patterns.forEach((pattern, i) => {
    const where = `body.${field}[${i}]`;
    if (/[\u0000-\u001f\u007f]/.test(pattern)) throw bad(`${where} contains a control character.`);
    const dot = pattern.indexOf('.');
    if (dot <= 0 || dot === pattern.length - 1) {
      throw bad(`${where} "${pattern.slice(0, 60)}" must have the form schema.table, e.g. public.orders, public.order* or *.orders.`);
    }
  });
}

/** A connector description is one line of text (it ends every tool description): control characters are refused. */
export function checkDescription(description: string | null | undefined): void {
  if (typeof description === 'string' && /[\u0000-\u001f\u007f]/.test(description)) {
    throw bad('body.description must be one line of text without control characters.');
  }
}

/**
 * Whether `name` matches the glob `pattern` as a whole: `*` any run of characters, `?` one, everything else literal,
 * case-insensitively. The two-pointer walk (back to the last `*` on a mismatch) takes at most
 * pattern x name steps whatever the pattern: a regular expression of many `*` would backtrack without bound.
 */
export function globMatches(pattern: string, name: string): boolean {
  const p = [...pattern.toLowerCase()];
  const n = [...name.toLowerCase()];
  let pi = 0;
  let ni = 0;
  let star = -1;
  let resume = 0;
  while (ni < n.length) {
    if (pi < p.length && (p[pi] === '?' || (p[pi] !== '*' && p[pi] === n[ni]))) {
      pi++;
      ni++;
    } else if (pi < p.length && p[pi] === '*') {
      star = pi++;
      resume = ni;
    } else if (star >= 0) {
      pi = star + 1;
      ni = ++resume;
    } else return false;
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}

/** The `schema.table` a tool's target names (SQL types: schema/table; mongodb: database/collection); null: none. */
export function relationName(target: unknown): string | null {
  const t = target as { schema?: unknown; table?: unknown; database?: unknown; collection?: unknown } | null;
  const schema = t?.schema ?? t?.database;
  const table = t?.table ?? t?.collection;
  return typeof schema === 'string' && typeof table === 'string' ? `${schema}.${table}` : null;
}

/** Whether a filter lets anything out at all (no pattern: every table is served, nothing to do). */
function filters(filter: TableFilter): boolean {
  return filter.include.length > 0 || filter.exclude.length > 0;
}

/**
 * The introspected tools whose table the filter lets in, in their order. A tool that names no table (an upstream MCP
 * server's) is kept: the filter is about tables.
 */
export function applyTableFilter<T extends ToolSpec>(specs: readonly T[], filter: TableFilter): T[] {
  if (!filters(filter)) return [...specs];
  return specs.filter((spec) => {
    const name = relationName(spec.target);
    if (name === null) return true;
    if (filter.exclude.some((p) => globMatches(p, name))) return false;
    return filter.include.length === 0 || filter.include.some((p) => globMatches(p, name));
  });
}
