/**
 * The read-only guard for dialects without writes through Toolgate (SQL Server, Oracle): one SELECT over the tool's
 * own table, on sqlparser-rs' AST, with a fail-closed allow-list of AST variants and functions. What differs per
 * dialect (the lexer, how names compare, the function list, session keywords) comes in a ReadOnlyDialect.
 *
 * Shape of the walk (tree.ts, as mysql/guard/walk.ts): every enum variant met must be on QUERY_VARIANTS or a literal;
 * table references must be the tool's table or a CTE in scope; function names must be single, unqualified and on
 * the dialect's list; SELECT ... INTO, FOR UPDATE, FOR XML/JSON/BROWSE, table hints (but NOLOCK), table-valued
 * functions and anything the walk does not know are refused.
 */
import { parse as parseSql, type DialectName } from '@guanmingchiu/sqlparser-ts';
import type { GuardOptions, GuardResult } from './types.ts';
import { MAX_SQL_LENGTH, Refusal, allow, clip, tableLabel } from './common.ts';
import { type AnyObj, isObj, spelled, treeWalker, variantOf } from './tree.ts';
import { LITERAL_VARIANTS, READ_VARIANTS } from './variants.ts';
import {
  type CteScope,
  type Frame,
  type NamePart,
  addSource,
  addSources,
  listedTable,
  outputColumns,
  partsOf,
  tableColumns,
  wildcardQualifier,
  withCtes,
} from './readonly-names.ts';

export type { NamePart } from './readonly-names.ts';

export interface ReadOnlyDialect {
  /** The sqlparser dialect. */
  parser: DialectName;
  /** `WITH RECURSIVE` is not the dialect's syntax (Oracle's recursive WITH has no keyword): refused. */
  noRecursiveKeyword: boolean;
  /** Human name in refusals. */
  label: string;
  /** Text checks before parsing (comments, quotes, one statement, forbidden characters); returns a refusal or undefined. */
  lex(sql: string): string | undefined;
  /** Whether a name as written denotes the stored name (`stored`: as the catalog holds it). */
  sameName(written: NamePart, stored: string, opts: GuardOptions): boolean;
  /** A one-part table name resolves to the tool's schema (Oracle: CURRENT_SCHEMA is set per call; SQL Server: the login's default schema). */
  unqualifiedIsOwn(opts: GuardOptions): boolean;
  /** With opts.tables: the schema a one-part table name resolves to, or undefined when it must be qualified. */
  unqualifiedSchema(opts: GuardOptions): string | undefined;
  /** Allowed built-in functions, upper case. */
  functions: ReadonlySet<string>;
  /** Bare keywords the parser reports as column names but the server evaluates as session functions (upper case). */
  sessionKeywords: ReadonlySet<string>;
  /** Unquoted one-part tables that are no table (Oracle DUAL). */
  dummyTables: ReadonlySet<string>;
  /** Table hints accepted (upper case), e.g. NOLOCK. */
  tableHints: ReadonlySet<string>;
  /**
   * Oracle: a bare name that is no column in scope is a call of a parameterless function, and `a.b` that is no column
   * of a table in scope is `package.function` or `schema.function`. With this set, every name is resolved as the
   * server resolves it (readonly-names.ts): a bare name must be a column of a FROM item of its SELECT or of an
   * enclosing one (not across an inline view; in an ON clause, of the items joined so far; in ORDER BY, also a
   * select-list alias), or one of these pseudo-columns (upper case); `a.b` must be column `b` of the FROM item `a`
   * so visible.
   */
  strictNames?: ReadonlySet<string>;
  /** How a name as written is compared with declared names (aliases, CTEs). */
  key(part: NamePart, opts: GuardOptions): string;
  /**
   * The server's reserved words (upper case). Unquoted, they are never a name to the server, so an unquoted name the
   * parser read as one (an alias, a column, a table) means parser and server read the text differently: refused.
   * (T-SQL needs no `;` between statements, so `SELECT * FROM t SHUTDOWN` is two statements to SQL Server and one
   * SELECT with the alias SHUTDOWN to a parser that does not reserve the word.)
   */
  reservedWords: ReadonlySet<string>;
}

/** The shared read list (variants.ts) and these dialects' own: APPLY, CONNECT BY, semi/anti joins, OFFSET ... ROWS. */
const QUERY_VARIANTS: ReadonlySet<string> = new Set([
  ...READ_VARIANTS,
  'CrossApply',
  'OuterApply',
  'Constant',
  'StartWith',
  'ConnectBy',
  'Prior',
  'AtTimeZone',
  'Semi',
  'Anti',
  'LeftSemi',
  'LeftAnti',
  'RightSemi',
  'RightAnti',
  'Offset',
  'OffsetRows',
  'Rows',
  'Row',
]);

const LITERALS: ReadonlySet<string> = new Set([...LITERAL_VARIANTS, 'QuoteDelimitedStringLiteral', 'NationalQuoteDelimitedStringLiteral']);

interface State {
  opts: GuardOptions;
  d: ReadOnlyDialect;
  /** strictNames: what each enclosing SELECT / ON / ORDER BY sees (innermost last); null marks an inline-view barrier. */
  frames: (Frame | null)[];
  /** With opts.tables: the listed tables touched, and the column names and `*` met (checked after the walk). */
  listed?: { touched: Set<number>; names: string[]; star: boolean };
}

/** strictNames: the frames a name can resolve in, innermost first, up to an inline-view barrier. */
function* visibleFrames(st: State): Generator<Frame> {
  for (let i = st.frames.length - 1; i >= 0; i--) {
    const f = st.frames[i];
    if (!f) return;
    yield f;
  }
}

function checkTable(name: unknown, st: State, scope: CteScope): void {
  const parts = partsOf(name);
  const { opts, d } = st;
  const label = clip(parts.map((p) => p.value).join('.'));
  if (st.listed) return checkListedTable(parts, label, st, scope);
  if (parts.length === 1) {
    const p = parts[0]!;
    if (!p.quoted && d.dummyTables.has(p.value.toUpperCase())) return;
    if (scope.has(d.key(p, opts))) return;
    if (d.sameName(p, opts.table.name, opts)) {
      if (d.unqualifiedIsOwn(opts)) return;
      throw new Refusal(`write the table with its schema, as ${clip(opts.table.schema)}.${clip(opts.table.name)}`);
    }
  } else if (parts.length === 2 && d.sameName(parts[0]!, opts.table.schema, opts) && d.sameName(parts[1]!, opts.table.name, opts)) {
    return;
  }
  throw new Refusal(`it references "${label}", which is not this tool's table`);
}

/**
 * With opts.tables (issue 38, docs/decisions/0292): a table is DUAL, a CTE in scope (one-part names) or one of the
 * connector's tables, resolved as the server resolves it. These dialects have no rewrite: a touched table with a
 * column or row policy (`policy`: masks or a row filter) cannot be governed, so the statement is refused naming it;
 * hidden columns (`hidden`) the guard keeps out itself after the walk.
 */
function checkListedTable(parts: NamePart[], label: string, st: State, scope: CteScope): void {
  const { opts, d } = st;
  if (parts.length === 1) {
    const p = parts[0]!;
    if (!p.quoted && d.dummyTables.has(p.value.toUpperCase())) return;
    if (scope.has(d.key(p, opts))) return;
  }
  const i = listedTable(parts, d, opts);
  if (i === undefined) {
    if (parts.length === 1 && d.unqualifiedSchema(opts) === undefined) throw new Refusal(`write the table "${label}" with its schema`);
    throw new Refusal(`it references "${label}", which is not a table of this connector`);
  }
  const t = opts.tables!.list[i]!;
  if (t.policy) throw new Refusal(`table "${clip(`${t.schema}.${t.name}`)}" has a column or row policy that ${d.label} statements cannot apply`);
  st.listed!.touched.add(i);
}

/** After the walk: a name equal to a hidden column of a touched table, or any `*` when one has hidden columns, is refused. */
function checkListedHidden(st: State): void {
  const { listed, opts } = st;
  if (!listed) return;
  const hidden = new Set<string>();
  for (const i of listed.touched) {
    const t = opts.tables!.list[i]!;
    for (const h of t.hidden ?? []) hidden.add(h.toUpperCase());
    if (t.schema === opts.table.schema && t.name === opts.table.name) for (const h of opts.policy?.hidden ?? []) hidden.add(h.toUpperCase());
  }
  if (hidden.size === 0) return;
  if (listed.star) throw new Refusal('* and t.* are not allowed on a table with hidden columns; name the columns');
  for (const n of listed.names) if (hidden.has(n.toUpperCase())) throw new Refusal(`column "${clip(n)}" is not available on this connector's tables`);
}

const { walk, walkStruct } = treeWalker<State, CteScope>({ queryFields: new Set(['subquery', 'query']), variant: visit, query: walkQuery });

const NAME_FIELD: ReadonlySet<string> = new Set(['name']);
const TABLE_FIELDS: ReadonlySet<string> = new Set(['name', 'with_hints', 'alias']);

function visit(variant: string, payload: unknown, st: State, scope: CteScope): void {
  if (LITERALS.has(variant)) return;
  if (!QUERY_VARIANTS.has(variant)) throw new Refusal(`it uses ${spelled(variant)}, which is not allowed here`);
  switch (variant) {
    case 'Identifier':
      if (isObj(payload)) checkHidden([payload.value], st);
      return visitIdentifier(payload, st);
    case 'CompoundIdentifier':
      if (Array.isArray(payload))
        checkHidden(
          payload.map((p) => (isObj(p) ? p.value : undefined)),
          st,
        );
      if (st.d.strictNames) resolveQualified(payload, st);
      return;
    case 'QualifiedWildcard':
      checkHidden(['*'], st);
      if (st.d.strictNames) visitQualifiedWildcard(payload, st);
      return;
    case 'Wildcard':
      return checkHidden(['*'], st);
    case 'Value':
      if (variant === 'Value' && isObj(payload)) walk(payload.value, st, scope, 'value');
      return;
    case 'Query':
    case 'Subquery':
      if (!isObj(payload)) throw new Refusal('a subquery could not be understood');
      return walkQuery(payload, st, scope);
    case 'Select':
      return visitSelect(payload, st, scope);
    case 'Derived':
      return visitDerived(payload, st, scope);
    case 'Table':
      return visitTable(payload, st, scope);
    case 'Cast':
      // `a::b` is no cast in T-SQL or Oracle: SQL Server reads `type::Method(...)` as a call of a CLR type's method.
      if (isObj(payload) && payload.kind === 'DoubleColon') throw new Refusal('"::" is not allowed; use CAST(x AS type)');
      return walk(payload, st, scope, variant);
    case 'Function':
      return visitFunction(payload, st, scope);
    default:
      return walk(payload, st, scope, variant);
  }
}

/**
 * A tool with hidden columns (shared/policy.ts): these read-only types have no rewrite, so the guard itself keeps
 * the columns out. A name equal to a hidden column (any part, compared ignoring case: never fewer refusals than the
 * server's own comparison) and every `*` / `t.*` are refused; whole-row values do not exist in T-SQL, and Oracle's
 * strict name resolution (resolveBare) admits only columns, aliases and pseudo-columns.
 */
function checkHidden(names: unknown[], st: State): void {
  if (st.listed) {
    for (const n of names) {
      if (n === '*') st.listed.star = true;
      else if (typeof n === 'string') st.listed.names.push(n);
    }
    return;
  }
  const hidden = st.opts.policy?.hidden;
  if (!hidden || hidden.length === 0) return;
  for (const n of names) {
    if (n === '*') throw new Refusal('* and t.* are not allowed on a tool with hidden columns; name the columns');
    if (typeof n === 'string' && hidden.some((h) => h.toUpperCase() === n.toUpperCase()))
      throw new Refusal(`column "${clip(n)}" is not available on this tool`);
  }
}

function visitIdentifier(payload: unknown, st: State): void {
  if (!isObj(payload) || typeof payload.value !== 'string') throw new Refusal('a name could not be understood');
  const quoted = payload.quote_style !== undefined && payload.quote_style !== null;
  if (!quoted && st.d.sessionKeywords.has(payload.value.toUpperCase())) {
    throw new Refusal(`${clip(payload.value)} reads the server session, which is not this tool's table`);
  }
  if (payload.value.startsWith('@') || payload.value.startsWith('#')) throw new Refusal('variables and temporary objects are not allowed');
  if (st.d.strictNames) resolveBare({ value: payload.value, quoted }, st);
}

function visitQualifiedWildcard(payload: unknown, st: State): void {
  if (!Array.isArray(payload)) throw new Refusal('a qualified * could not be understood');
  const qualifier = wildcardQualifier(payload, st.d, st.opts);
  if (![...visibleFrames(st)].some((f) => f.sources.has(qualifier))) throw new Refusal('t.* needs t to be a table or alias of this SELECT');
}

function visitSelect(payload: unknown, st: State, scope: CteScope): void {
  if (!isObj(payload)) throw new Refusal('a SELECT could not be understood');
  if (payload.into !== undefined && payload.into !== null) throw new Refusal('SELECT ... INTO creates a table and is not allowed');
  if (Array.isArray(payload.optimizer_hints) && payload.optimizer_hints.length > 0) throw new Refusal('optimizer hints are not allowed');
  if (!st.d.strictNames) return walkStruct(payload, st, scope);
  // FROM first (its ON clauses see only what is joined so far), then the rest with every FROM item in view.
  walkFrom(payload.from, st, scope);
  const frame: Frame = { sources: new Map() };
  addSources(payload.from, st.d, st.opts, scope, frame.sources);
  st.frames.push(frame);
  try {
    return walkStruct(payload, st, scope, FROM_FIELD);
  } finally {
    st.frames.pop();
  }
}

function visitDerived(payload: unknown, st: State, scope: CteScope): void {
  // An inline view does not see the tables of the SELECT around it (unless LATERAL).
  const lateral = isObj(payload) && payload.lateral === true;
  if (st.d.strictNames && !lateral) st.frames.push(null);
  try {
    return walk(payload, st, scope, 'Derived');
  } finally {
    if (st.d.strictNames && !lateral) st.frames.pop();
  }
}

function visitTable(payload: unknown, st: State, scope: CteScope): void {
  if (!isObj(payload) || !('name' in payload)) throw new Refusal('a table reference could not be understood');
  if (payload.args !== undefined && payload.args !== null) throw new Refusal('table functions are not allowed in FROM');
  for (const k of ['version', 'sample', 'json_path', 'partitions', 'index_hints']) {
    const x = payload[k];
    if (x !== undefined && x !== null && !(Array.isArray(x) && x.length === 0)) throw new Refusal(`table modifier ${k} is not allowed`);
  }
  const hints = Array.isArray(payload.with_hints) ? payload.with_hints : [];
  for (const h of hints) {
    const word = isObj(h) && isObj(h.Identifier) && typeof h.Identifier.value === 'string' ? h.Identifier.value.toUpperCase() : '';
    if (!st.d.tableHints.has(word)) throw new Refusal('table hints other than NOLOCK are not allowed');
  }
  checkTable(payload.name, st, scope);
  return walkStruct(payload, st, scope, TABLE_FIELDS);
}

function visitFunction(payload: unknown, st: State, scope: CteScope): void {
  if (!isObj(payload)) throw new Refusal('a function call could not be understood');
  if ('lateral' in payload || 'alias' in payload) throw new Refusal('functions in FROM are not allowed; select from the table');
  const parts = partsOf(payload.name);
  const label = clip(parts.map((p) => p.value).join('.'));
  if (parts.length !== 1) throw new Refusal(`function ${label}() is not allowed; only built-in functions are`);
  const upper = parts[0]!.value.replace(/[a-z]+/g, (m) => m.toUpperCase());
  if (parts[0]!.quoted || !st.d.functions.has(upper)) {
    throw new Refusal(`function ${label}() is not on the list of allowed functions (aggregates, string, date, math and conversion functions)`);
  }
  return walkStruct(payload, st, scope, NAME_FIELD);
}

const FROM_FIELD: ReadonlySet<string> = new Set(['from']);
const RELATION_FIELDS: ReadonlySet<string> = new Set(['relation', 'joins']);

/** strictNames: a FROM list, each join's ON / USING seeing the items joined so far (and the enclosing SELECTs). */
function walkFrom(from: unknown, st: State, scope: CteScope): void {
  if (!Array.isArray(from)) return walk(from, st, scope, 'from');
  for (const t of from) walkJoined(t, st, scope);
}

function walkJoined(t: unknown, st: State, scope: CteScope): void {
  if (!isObj(t)) throw new Refusal('a FROM item could not be understood');
  const soFar: Frame = { sources: new Map() };
  st.frames.push(soFar);
  try {
    walkRelation(t.relation, st, scope);
    addSource(t.relation, st.d, st.opts, scope, soFar.sources);
    for (const j of Array.isArray(t.joins) ? t.joins : []) {
      if (!isObj(j)) throw new Refusal('a join could not be understood');
      walkRelation(j.relation, st, scope);
      addSource(j.relation, st.d, st.opts, scope, soFar.sources);
      walkStruct(j, st, scope, RELATION_FIELDS);
    }
    walkStruct(t, st, scope, RELATION_FIELDS);
  } finally {
    st.frames.pop();
  }
}

function walkRelation(rel: unknown, st: State, scope: CteScope): void {
  const nested = isObj(rel) && isObj(rel.NestedJoin) ? rel.NestedJoin : undefined;
  if (!nested) return walk(rel, st, scope, 'relation');
  walkJoined(nested.table_with_joins, st, scope);
  walkStruct(nested, st, scope, new Set(['table_with_joins']));
}

/** strictNames: a bare name is a column of a FROM item in view, else an allowed pseudo-column, else a function call. */
function resolveBare(part: NamePart, st: State): void {
  const key = st.d.key(part, st.opts);
  for (const f of visibleFrames(st)) for (const columns of f.sources.values()) if (columns.has(key)) return;
  if (!part.quoted && st.d.strictNames!.has(key)) return;
  throw new Refusal(`"${clip(part.value)}" is not a column of a table of this SELECT (Oracle would call a function of that name)`);
}

/** strictNames: `q.col` is column col of FROM item q in view; `schema.table.col` the same for the own table. */
function resolveQualified(payload: unknown, st: State): void {
  if (!Array.isArray(payload) || payload.length < 2) throw new Refusal('a qualified name could not be understood');
  const parts = payload.map((p) => {
    if (!isObj(p) || typeof p.value !== 'string') throw new Refusal('a qualified name could not be understood');
    return { value: p.value, quoted: p.quote_style !== undefined && p.quote_style !== null };
  });
  const label = clip(parts.map((p) => p.value).join('.'));
  const refuse = () => new Refusal(`"${label}" is not a column of a table of this SELECT (packages and schema functions are not allowed)`);
  let qualifier: string;
  const named = parts.length === 3 ? tableColumns(parts.slice(0, 2), st.d, st.opts) : undefined;
  if (parts.length === 2) qualifier = st.d.key(parts[0]!, st.opts);
  else if (named) qualifier = st.d.key(parts[1]!, st.opts);
  else throw refuse();
  const column = st.d.key(parts[parts.length - 1]!, st.opts);
  for (const f of visibleFrames(st)) {
    const columns = f.sources.get(qualifier);
    if (!columns) continue;
    // The innermost FROM item of that name is the one Oracle takes; a column it lacks is no fallback to another.
    if (columns.has(column) && (parts.length === 2 || (named !== undefined && sameSet(columns, named)))) return;
    throw refuse();
  }
  throw refuse();
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}

const WITH_FIELDS: ReadonlySet<string> = new Set(['with', 'locks', 'body', 'for_clause']);

function walkQuery(q: AnyObj, st: State, outer: CteScope): void {
  let scope = outer;
  const w = q.with;
  if (isObj(w)) {
    if (w.recursive === true && st.d.noRecursiveKeyword) throw new Refusal(`WITH RECURSIVE is not ${st.d.label} syntax`);
    // Each CTE's columns (strictNames); a CTE's query sees the earlier CTEs and itself, never the query around it.
    const columns = st.d.strictNames ? withCtes(q, st.d, st.opts, outer) : new Map<string, ReadonlySet<string>>();
    const acc = new Map(outer);
    for (const c of Array.isArray(w.cte_tables) ? w.cte_tables : []) {
      const name = isObj(c) && isObj(c.alias) && isObj(c.alias.name) ? c.alias.name : undefined;
      if (!name || typeof name.value !== 'string' || !isObj(c.query)) throw new Refusal('its WITH clause could not be understood');
      const key = st.d.key({ value: name.value, quoted: name.quote_style !== undefined && name.quote_style !== null }, st.opts);
      // A CTE sees the earlier ones and itself (SQL Server and Oracle allow recursive CTEs without RECURSIVE).
      acc.set(key, columns.get(key) ?? new Set());
      if (st.d.strictNames) st.frames.push(null);
      try {
        walkQuery(c.query, st, new Map(acc));
      } finally {
        if (st.d.strictNames) st.frames.pop();
      }
    }
    scope = acc;
  } else if (w !== undefined && w !== null) {
    throw new Refusal('its WITH clause could not be understood');
  }
  if (Array.isArray(q.locks) && q.locks.length > 0) throw new Refusal('SELECT ... FOR UPDATE takes row locks');
  if (q.for_clause !== undefined && q.for_clause !== null)
    throw new Refusal('FOR XML / FOR JSON / FOR BROWSE is not allowed; the gateway returns rows as JSON');
  walk(q.body, st, scope, 'body');
  if (!st.d.strictNames) return walkStruct(q, st, scope, WITH_FIELDS);
  // ORDER BY (and OFFSET / FETCH) of a plain SELECT see its FROM items and its select-list aliases; of a compound
  // query, the result columns only.
  const order: Frame = { sources: new Map([['\u0000result', outputColumns(q, st.d, st.opts, outer)]]) };
  if (isObj(q.body) && isObj(q.body.Select)) addSources(q.body.Select.from, st.d, st.opts, scope, order.sources);
  st.frames.push(order);
  try {
    walkStruct(q, st, scope, WITH_FIELDS);
  } finally {
    st.frames.pop();
  }
}

/** Refuses an unquoted name (not a function's name) that is a reserved word of the server. */
function checkReserved(v: unknown, d: ReadOnlyDialect, depth = 0): void {
  if (depth > 500) throw new RangeError('deep');
  if (Array.isArray(v)) {
    for (const x of v) checkReserved(x, d, depth + 1);
    return;
  }
  if (!isObj(v)) return;
  if (
    typeof v.value === 'string' &&
    !('keyword' in v) &&
    (v.quote_style === undefined || v.quote_style === null) &&
    d.reservedWords.has(v.value.toUpperCase())
  ) {
    throw new Refusal(`${clip(v.value.toUpperCase())} is a reserved word of the server and cannot be a name here (quote it if it is a column)`);
  }
  for (const k in v) {
    if (k === 'span' || k === 'data_type' || k.endsWith('_token')) continue;
    const x = v[k];
    if (typeof x !== 'object' || x === null) continue;
    // A function's own name may be a reserved word (COALESCE, NULLIF, CONVERT).
    if (k === 'Function' && isObj(x)) {
      for (const f in x) if (f !== 'name') checkReserved(x[f], d, depth + 1);
      continue;
    }
    checkReserved(x, d, depth + 1);
  }
}

/** Decides one statement for a read-only dialect. */
export function decideReadOnly(d: ReadOnlyDialect, sql: string, opts: GuardOptions): GuardResult {
  const where = opts.tables ? "over this connector's tables" : `on table "${clip(tableLabel(opts), 120)}"`;
  const no = (detail: string): GuardResult => ({
    ok: false,
    reason: `Only a single SELECT ${where} is allowed (${d.label} tools are read-only): ${detail}.`,
  });
  if (sql.trim() === '') return no('the query is empty');
  if (sql.length > MAX_SQL_LENGTH) return no(`the query is longer than ${MAX_SQL_LENGTH} characters`);
  if (sql.includes('\u0000')) return no('the query contains a NUL character');
  const lexed = d.lex(sql);
  if (lexed !== undefined) return no(lexed);
  let parsed: unknown;
  try {
    parsed = parseSql(sql, d.parser);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return no(`the SQL could not be parsed (${clip(msg.replace(/^sql parser error:\s*/i, ''))})`);
  }
  if (!Array.isArray(parsed) || parsed.length !== 1 || !isObj(parsed[0])) {
    return no(Array.isArray(parsed) && parsed.length > 1 ? `found ${parsed.length} statements; send exactly one` : 'the SQL could not be parsed');
  }
  const variant = variantOf(parsed[0]);
  if (variant !== 'Query') return no(`found ${variant === undefined ? 'a statement that could not be understood' : spelled(variant)}`);
  try {
    checkReserved(parsed[0][variant], d);
    const st: State = { opts, d, frames: [], ...(opts.tables ? { listed: { touched: new Set<number>(), names: [], star: false } } : {}) };
    walkQuery(parsed[0][variant] as AnyObj, st, new Map());
    if (!st.listed) return allow('select', true);
    checkListedHidden(st);
    return { ok: true, kind: 'select', readOnly: true, touched: [...st.listed.touched].sort((a, b) => a - b) };
  } catch (e) {
    if (e instanceof Refusal) return no(e.detail);
    if (e instanceof RangeError) return no('the query is nested too deeply');
    throw e;
  }
}

export interface LexRules {
  /** Block comments nest (SQL Server). */
  nestedComments: boolean;
  /** [bracketed] identifiers (SQL Server). */
  brackets: boolean;
  /** Oracle q'...' quoting and N'...': refused, not lexed. */
  refuseQQuote: boolean;
  /**
   * Unquoted words refused outside strings and comments (upper case): clauses the server reads but the parser takes
   * for something else (sqlparser reads T-SQL's `OPTION (...)` query hints as a table alias).
   */
  refusedWords?: ReadonlySet<string>;
}

/**
 * Lexes just enough (strings, quoted names, comments) to be the authority on statement boundaries: at most one
 * statement and one trailing `;`, nothing unterminated, no `@` (SQL Server variables and @@ globals, Oracle
 * database links) outside quotes and comments.
 */
export function lexCheck(sql: string, r: LexRules): string | undefined {
  const n = sql.length;
  let i = 0;
  let ended = false;
  let sawToken = false;
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          if (!r.nestedComments) return 'a comment holds "/*"; write comments without it';
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
      if (depth > 0) return 'the statement has an unterminated comment';
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (ended) return 'send exactly one statement: text follows the terminating semicolon';
    if (c === ';') {
      ended = true;
      i++;
      continue;
    }
    sawToken = true;
    const qAt = /[nN]/.test(c) && /[qQ]/.test(next ?? '') ? i + 2 : /[qQ]/.test(c) ? i + 1 : -1;
    if (r.refuseQQuote && qAt > 0 && sql[qAt] === "'" && !/[A-Za-z0-9_$#]/.test(sql[i - 1] ?? '')) {
      return "q'...' quoting is not accepted; write the string with doubled quotes";
    }
    if (c === "'" || c === '"' || (c === '[' && r.brackets)) {
      const close = c === '[' ? ']' : c;
      let j = i + 1;
      for (;;) {
        if (j >= n) return 'the statement has an unterminated string or quoted name';
        if (sql[j] === close) {
          if (sql[j + 1] === close) j += 2;
          else break;
        } else j++;
      }
      i = j + 1;
      continue;
    }
    if (c === '@') return '@ (variables, system functions, database links) is not allowed';
    if (/[A-Za-z_]/.test(c) && !/[A-Za-z0-9_$#]/.test(sql[i - 1] ?? '')) {
      const word = /^[A-Za-z_][A-Za-z0-9_$#]*/.exec(sql.slice(i, i + 129))![0];
      if (r.refusedWords?.has(word.toUpperCase())) return `${word.toUpperCase()} is not allowed (write a column of that name in quotes)`;
      i += word.length;
      continue;
    }
    i++;
  }
  if (!sawToken) return 'the query contains no statement (only comments or semicolons)';
  return undefined;
}
