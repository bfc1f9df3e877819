/** Helpers shared by the per-dialect SQL guards: refusal wording and a small verdict cache (tree.ts: the AST basics). */

import type { GuardOptions, GuardResult, RefusalClass, StatementKind } from './types.ts';

/** Longest SQL text a guard will look at; anything longer is refused without parsing. */
export const MAX_SQL_LENGTH = 100_000;

/** Quote user-supplied text in a reason without echoing huge input back. */
export function clip(text: string, max = 80): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

/** The tool's table as `schema.name`, for refusals. */
export function tableLabel(opts: GuardOptions): string {
  return `${opts.table.schema}.${opts.table.name}`;
}

export function canWrite(opts: GuardOptions): boolean {
  return opts.allowWrite && !opts.readOnly;
}

export function canDdl(opts: GuardOptions): boolean {
  return opts.allowDdl && !opts.readOnly;
}

/**
 * The sentence that tells the agent what it may send, e.g.
 * `Only a single SELECT on table "public.users" is allowed (read-only tool)`.
 */
export function allowedPhrase(opts: GuardOptions, tableLabel: string): string {
  const kinds = ['SELECT'];
  if (canWrite(opts)) kinds.push('INSERT', 'UPDATE', 'DELETE');
  if (canDdl(opts)) kinds.push('DDL (CREATE/ALTER/DROP/TRUNCATE TABLE)');
  const list = kinds.length === 1 ? kinds[0]! : `${kinds.slice(0, -1).join(', ')} or ${kinds[kinds.length - 1]}`;
  let why = '';
  if (opts.readOnly) why = ' (read-only tool)';
  else if (!opts.allowWrite && !opts.allowDdl) why = ' (read-only connector)';
  const table = `table "${clip(tableLabel, 120)}"`;
  // Issue 38: a read may span the connector's tables; a write stays on the tool's own table.
  if (opts.tables) {
    return kinds.length === 1
      ? `Only a single SELECT over this connector's tables is allowed${why}`
      : `Only a single SELECT over this connector's tables, or ${kinds.slice(1).join(', ')} on ${table} alone, is allowed${why}`;
  }
  return `Only a single ${list} on ${table} is allowed${why}`;
}

export function refuse(opts: GuardOptions, tableLabel: string, detail: string, reasonClass: RefusalClass = 'not_allowed'): GuardResult {
  return { ok: false, reason: `${allowedPhrase(opts, tableLabel)}: ${detail}.`, class: reasonClass };
}

export function allow(kind: StatementKind, readOnly: boolean): GuardResult {
  return { ok: true, kind, readOnly };
}

/**
 * A small least-recently-used map of verdicts. Bounded in entries and in key size, so it cannot grow
 * without bound however many distinct statements arrive.
 */
export class VerdictCache {
  private readonly map = new Map<string, GuardResult>();
  constructor(
    private readonly maxEntries = 512,
    private readonly maxKeyLength = 4096,
  ) {}

  static key(sql: string, opts: GuardOptions, extra = ''): string {
    // lowerCaseTableNames and storedFunctions change what the same text resolves to (MySQL): part of the key.
    const flags = `${opts.allowWrite ? 'w' : '-'}${opts.allowDdl ? 'd' : '-'}${opts.readOnly ? 'r' : '-'}${opts.lowerCaseTableNames ?? ''}${opts.storedFunctions?.join(',') ?? ''}${opts.caseSensitiveNames ? 'c' : ''}\u0000${opts.defaultSchema ?? ''}\u0000${opts.columns?.join('\u0001') ?? ''}\u0000${opts.policy?.key ?? ''}\u0000${opts.policy?.params ?? ''}\u0000${opts.tables?.key ?? ''}${extra}`;
    return `${flags}\u0000${opts.table.schema}\u0000${opts.table.name}\u0000${sql}`;
  }

  get(key: string): GuardResult | undefined {
    const hit = this.map.get(key);
    if (hit !== undefined) {
      // Refresh recency.
      this.map.delete(key);
      this.map.set(key, hit);
    }
    return hit;
  }

  set(key: string, value: GuardResult): void {
    if (key.length > this.maxKeyLength) return;
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }

  get size(): number {
    return this.map.size;
  }

  clear(): void {
    this.map.clear();
  }
}

/** Thrown inside a guard's walk to stop at the first reason to refuse. */
export class Refusal extends Error {
  constructor(
    readonly detail: string,
    /** The class of the closed list (types.ts REFUSAL_CLASSES) this refusal belongs to. */
    readonly reasonClass: RefusalClass = 'not_allowed',
  ) {
    super(detail);
  }
}

/** The set of CTE names visible at the top of a statement: none. */
export const EMPTY_SCOPE: ReadonlySet<string> = new Set();

/** A dialect's guard entry: non-strings refused, verdicts cached (frozen) by text and options. */
export function cachedGuard(decide: (sql: string, opts: GuardOptions) => GuardResult): {
  guard: (sql: string, opts: GuardOptions) => GuardResult;
  clear: () => void;
} {
  const cache = new VerdictCache();
  return {
    guard(sql, opts) {
      if (typeof sql !== 'string') return refuse(opts, tableLabel(opts), 'the query is not a string', 'invalid_arguments');
      const key = VerdictCache.key(sql, opts);
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      const verdict = Object.freeze(decide(sql, opts));
      cache.set(key, verdict);
      return verdict;
    },
    clear: () => cache.clear(),
  };
}
