/**
 * Oracle name resolution for the read-only walk: which columns each FROM item of a SELECT brings (the tool's table
 * from introspection, DUAL, CTEs and inline views from their select lists), so that every name without parentheses
 * is resolved as Oracle resolves it. In Oracle a bare name that is no column in scope calls a parameterless function,
 * and `a.b` that is no column of a table in scope calls package or schema function `b`: such names are refused.
 */
import type { GuardOptions } from './types.ts';
import { Refusal } from './common.ts';
import { type AnyObj, identOf, isObj, nameParts, variantOf } from './tree.ts';

/** One part of a name as written: its text and whether it was quoted. */
export interface NamePart {
  value: string;
  quoted: boolean;
}

/** What resolution needs of the dialect: how written names compare (keys), and the dummy table (DUAL). */
export interface NameRules {
  key(part: NamePart, opts: GuardOptions): string;
  sameName(written: NamePart, stored: string, opts: GuardOptions): boolean;
  unqualifiedIsOwn(opts: GuardOptions): boolean;
  /** With opts.tables: the schema a one-part table name resolves to (the server's rule), or undefined (must be qualified). */
  unqualifiedSchema(opts: GuardOptions): string | undefined;
  dummyTables: ReadonlySet<string>;
}

/** CTE names in scope (keys), each with its columns (keys). */
export type CteScope = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * The names one SELECT (or one ON clause, or an ORDER BY) sees: each FROM item under its qualifier, with its columns.
 * Items without a qualifier (an inline view without alias) are under a key no written name can have.
 */
export interface Frame {
  sources: Map<string, ReadonlySet<string>>;
}

const DUAL_COLUMNS: ReadonlySet<string> = new Set(['DUMMY']);
let anonymous = 0;

export function partsOf(v: unknown): NamePart[] {
  nameParts(v); // throws a Refusal when the name is not understood
  return (v as unknown[]).map((p) => {
    const ident = identOf(p) as AnyObj;
    return { value: ident.value as string, quoted: ident.quote_style !== undefined && ident.quote_style !== null };
  });
}

const partOf = (ident: AnyObj): NamePart => ({ value: ident.value as string, quoted: ident.quote_style !== undefined && ident.quote_style !== null });

/** Whether a table name as written is the tool's own table. */
function isOwnTable(parts: NamePart[], r: NameRules, opts: GuardOptions): boolean {
  if (parts.length === 1) return r.sameName(parts[0]!, opts.table.name, opts) && r.unqualifiedIsOwn(opts);
  return parts.length === 2 && r.sameName(parts[0]!, opts.table.schema, opts) && r.sameName(parts[1]!, opts.table.name, opts);
}

/** The tool's table's columns, as keys (the catalog holds exact names). */
function ownColumns(r: NameRules, opts: GuardOptions): Set<string> {
  return new Set((opts.columns ?? []).map((c) => r.key({ value: c, quoted: true }, opts)));
}

/**
 * With opts.tables (issue 38): the index of the listed table a name as written resolves to, as the server resolves
 * it (a one-part name in `unqualifiedSchema`), or undefined when it is none of them. Two listed tables the name could
 * both denote are refused, never guessed.
 */
export function listedTable(parts: NamePart[], r: NameRules, opts: GuardOptions): number | undefined {
  const list = opts.tables?.list;
  if (!list || parts.length < 1 || parts.length > 2) return undefined;
  const name = parts[parts.length - 1]!;
  let schemaOf: (stored: string) => boolean;
  if (parts.length === 2) schemaOf = (stored) => r.sameName(parts[0]!, stored, opts);
  else {
    const schema = r.unqualifiedSchema(opts);
    if (schema === undefined) return undefined;
    schemaOf = (stored) => r.sameName({ value: schema, quoted: true }, stored, opts);
  }
  let found: number | undefined;
  list.forEach((t, i) => {
    if (!r.sameName(name, t.name, opts) || !schemaOf(t.schema)) return;
    if (found !== undefined) throw new Refusal(`"${parts.map((p) => p.value).join('.')}" could name two of the connector's tables; write it as stored`);
    found = i;
  });
  return found;
}

/** The columns (keys) of the table a name denotes: a listed table's (opts.tables), else the tool's own; else undefined. */
export function tableColumns(parts: NamePart[], r: NameRules, opts: GuardOptions): ReadonlySet<string> | undefined {
  if (!opts.tables) return isOwnTable(parts, r, opts) ? ownColumns(r, opts) : undefined;
  const i = listedTable(parts, r, opts);
  if (i === undefined) return undefined;
  const t = opts.tables.list[i]!;
  const own = t.schema === opts.table.schema && t.name === opts.table.name;
  const columns = t.columns ?? (own ? opts.columns : undefined) ?? [];
  return new Set(columns.map((c) => r.key({ value: c, quoted: true }, opts)));
}

/** Adds the FROM item `rel` (a TableFactor) to `into`: qualifier -> columns. Unknown tables add nothing (the walk refuses them). */
export function addSource(rel: unknown, r: NameRules, opts: GuardOptions, ctes: CteScope, into: Map<string, ReadonlySet<string>>): void {
  if (!isObj(rel)) return;
  const variant = variantOf(rel);
  const body = variant !== undefined ? rel[variant] : undefined;
  if (!isObj(body)) return;
  const aliasIdent = isObj(body.alias) && isObj(body.alias.name) ? body.alias.name : undefined;
  const aliasColumns = isObj(body.alias) && Array.isArray(body.alias.columns) ? columnList(body.alias.columns, r, opts) : undefined;
  if (variant === 'Table' && Array.isArray(body.name)) {
    const parts = partsOf(body.name);
    const last = parts[parts.length - 1]!;
    let columns: ReadonlySet<string> | undefined;
    if (parts.length === 1 && ctes.has(r.key(last, opts))) columns = ctes.get(r.key(last, opts));
    else if (parts.length === 1 && !last.quoted && r.dummyTables.has(last.value.toUpperCase())) columns = DUAL_COLUMNS;
    else columns = tableColumns(parts, r, opts);
    if (!columns) return;
    into.set(aliasIdent ? r.key(partOf(aliasIdent), opts) : r.key(last, opts), aliasColumns?.size ? aliasColumns : columns);
  } else if (variant === 'Derived' && isObj(body.subquery)) {
    const columns = aliasColumns?.size ? aliasColumns : outputColumns(body.subquery, r, opts, ctes);
    into.set(aliasIdent ? r.key(partOf(aliasIdent), opts) : `\u0000inline view ${anonymous++}`, columns);
  } else if (variant === 'NestedJoin' && isObj(body.table_with_joins)) {
    addSources([body.table_with_joins], r, opts, ctes, into);
  }
}

/** Every FROM item of a FROM list. */
export function addSources(from: unknown, r: NameRules, opts: GuardOptions, ctes: CteScope, into: Map<string, ReadonlySet<string>>): void {
  for (const t of Array.isArray(from) ? from : []) {
    if (!isObj(t)) continue;
    addSource(t.relation, r, opts, ctes, into);
    for (const j of Array.isArray(t.joins) ? t.joins : []) if (isObj(j)) addSource(j.relation, r, opts, ctes, into);
  }
}

function columnList(list: unknown[], r: NameRules, opts: GuardOptions): Set<string> {
  const out = new Set<string>();
  for (const c of list) {
    const n = isObj(c) && isObj(c.name) ? c.name : c;
    if (isObj(n) && typeof n.value === 'string') out.add(r.key(partOf(n), opts));
  }
  return out;
}

/** The CTEs of a query's WITH added to `ctes`, each with its columns (its column list, else its select list). */
export function withCtes(q: AnyObj, r: NameRules, opts: GuardOptions, ctes: CteScope): CteScope {
  const w = q.with;
  if (!isObj(w)) return ctes;
  const acc = new Map(ctes);
  for (const c of Array.isArray(w.cte_tables) ? w.cte_tables : []) {
    const name = isObj(c) && isObj(c.alias) && isObj(c.alias.name) ? c.alias.name : undefined;
    if (!name || typeof name.value !== 'string' || !isObj(c.query)) continue;
    const key = r.key(partOf(name), opts);
    const listed = isObj(c.alias) && Array.isArray(c.alias.columns) ? columnList(c.alias.columns, r, opts) : undefined;
    // A recursive CTE refers to itself: while its own columns are derived, it has none.
    acc.set(key, listed?.size ? listed : outputColumns(c.query, r, opts, new Map([...acc, [key, new Set<string>()]])));
  }
  return acc;
}

/**
 * The names of a query's result columns, as Oracle names them: an alias, a bare or qualified column's own name, the
 * columns `*` and `t.*` expand to; a compound query takes its first branch's. An unnamed expression's column is named
 * by its text and left out (a reference to it is refused, which never admits more than Oracle).
 */
export function outputColumns(q: AnyObj, r: NameRules, opts: GuardOptions, outer: CteScope): Set<string> {
  const ctes = withCtes(q, r, opts, outer);
  return setExprColumns(q.body, r, opts, ctes);
}

function setExprColumns(body: unknown, r: NameRules, opts: GuardOptions, ctes: CteScope): Set<string> {
  if (!isObj(body)) return new Set();
  if (isObj(body.Query)) return outputColumns(body.Query, r, opts, ctes);
  if (isObj(body.SetOperation)) return setExprColumns(body.SetOperation.left, r, opts, ctes);
  const select = isObj(body.Select) ? body.Select : undefined;
  if (!select) return new Set();
  const sources = new Map<string, ReadonlySet<string>>();
  addSources(select.from, r, opts, ctes, sources);
  const out = new Set<string>();
  for (const item of Array.isArray(select.projection) ? select.projection : []) {
    if (!isObj(item)) continue;
    if (isObj(item.ExprWithAlias) && isObj(item.ExprWithAlias.alias)) out.add(r.key(partOf(item.ExprWithAlias.alias), opts));
    else if (isObj(item.UnnamedExpr) && isObj(item.UnnamedExpr.Identifier)) out.add(r.key(partOf(item.UnnamedExpr.Identifier), opts));
    else if (isObj(item.UnnamedExpr) && Array.isArray(item.UnnamedExpr.CompoundIdentifier)) {
      const last = item.UnnamedExpr.CompoundIdentifier[item.UnnamedExpr.CompoundIdentifier.length - 1];
      if (isObj(last)) out.add(r.key(partOf(last), opts));
    } else if ('Wildcard' in item) {
      for (const cols of sources.values()) for (const c of cols) out.add(c);
    } else if (Array.isArray(item.QualifiedWildcard)) {
      const cols = sources.get(wildcardQualifier(item.QualifiedWildcard, r, opts));
      for (const c of cols ?? []) out.add(c);
    }
  }
  return out;
}

/** The qualifier key of `q.*` (one part; anything longer is refused by the walk). */
export function wildcardQualifier(payload: unknown[], r: NameRules, opts: GuardOptions): string {
  const first = payload[0];
  const name = isObj(first) && Array.isArray(first.ObjectName) ? first.ObjectName : undefined;
  if (!name) throw new Refusal('a qualified * could not be understood');
  const parts = partsOf(name);
  if (parts.length !== 1) throw new Refusal('write t.* with the alias of a table of this SELECT');
  return r.key(parts[0]!, opts);
}
