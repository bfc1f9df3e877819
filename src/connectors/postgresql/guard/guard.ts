/**
 * PostgreSQL SQL guard: decides whether one SQL text may run against a tool bound to one table.
 *
 * Parser: `libpg-query` — PostgreSQL's own grammar (the server's gram.y and scanner, from libpg_query)
 * compiled to WebAssembly and shipped inside the npm package: no native build, no download and no
 * install script, and it loads under Bun and Node alike. Because the statement is read by the same
 * grammar the server will use, there is no keyword matching to fool: comments, dollar quotes, nested
 * parentheses, `END` as a synonym of `COMMIT`, stacked statements and so on all come out as the server
 * will see them. (`pgsql-parser` / `@pgsql/parser` wrap this same WASM parser and add a deparser we
 * do not need.) The WASM module is loaded once (pg-parser.ts, with a smaller initial memory than the package
 * declares), with a top-level await, so `guardPostgresSql` is
 * synchronous for callers.
 *
 * Policy, in order:
 *  1. Text checks: not empty, no NUL byte, at most MAX_SQL_LENGTH characters, and no backslash inside a
 *     standard '...' string literal (its meaning depends on standard_conforming_strings, so the server
 *     could split the text differently from us; use E'...' or a dollar quote instead).
 *  2. Exactly one statement, which the parser must read; unparsable text is refused, never let through.
 *  3. Statement kinds: SELECT (incl. WITH, set operations, VALUES, TABLE) always; INSERT/UPDATE/DELETE
 *     only when allowWrite && !readOnly; CREATE TABLE / ALTER TABLE (a fixed list of sub-commands) /
 *     DROP TABLE / TRUNCATE / CREATE INDEX / ALTER TABLE RENAME, on the tool's table only and without
 *     CASCADE, only when allowDdl && !readOnly. Everything else (transaction control, SET, COPY, DO,
 *     CALL, EXPLAIN, GRANT, VACUUM, LISTEN/NOTIFY, PREPARE/EXECUTE, LOCK, LOAD, MERGE, ...) is refused.
 *  4. The whole tree is walked with an allow-list of node types: anything the guard does not know is
 *     refused (fail closed). Every table reference must be the tool's table (unqualified: name only;
 *     qualified: schema and name; no catalog part) or a CTE name visible at that point (with SQL's
 *     scoping: a non-recursive CTE sees only earlier siblings). Functions in FROM, XMLTABLE/JSON_TABLE,
 *     SELECT INTO, data-modifying CTEs (read mode), FOR UPDATE/SHARE (read mode), DROP ... CASCADE,
 *     schema-qualified operators and type names not on SAFE_TYPE_NAMES (row types, domains, reg*) are refused.
 *  5. Functions: an ALLOW-LIST (see SAFE_FUNCTIONS in postgres-functions.ts) of side-effect-free
 *     built-ins, optionally qualified with pg_catalog. Anything else — pg_read_file, lo_export,
 *     setval/nextval, dblink_exec, pg_sleep, set_config, current_setting, txid_*, pg_advisory_*,
 *     query_to_xml, user functions... — is refused.
 *
 * Known limit of any text check: attribute notation `t.f` (= `f(t)`), user operators and implicit casts call
 * functions with nothing in the text that looks like a call, and unqualified names resolve along the
 * search_path. The server-side resolution check (postgresql/resolution.ts) closes that class: it refuses any
 * statement that resolves to a non-built-in function, operator, type or another relation. Type names are an
 * allow-list here (SAFE_TYPE_NAMES): no row type, domain or reg* type may be named.
 *
 * The guard is split by what each part owns: this file (text checks, statement dispatch, DDL
 * statements, verdict cache), postgres-walk.ts (the tree walk and statement names), postgres-nodes.ts
 * (the node allow-lists) and postgres-functions.ts (the function allow-list).
 *
 * Speed: parsing runs on every uncached tools/call statement (measured figures: docs/performance.md, SQL
 * guard speed). A repeated statement is answered from a 512-entry LRU of verdicts (bounded in entries and
 * key size) without parsing.
 */

import { parseSync, scanSync } from './parser.ts';
import type { GuardOptions, GuardResult, RefusalClass, StatementKind } from '../../shared/sqlguard/types.ts';
import {
  EMPTY_SCOPE,
  MAX_SQL_LENGTH,
  Refusal,
  VerdictCache,
  cachedGuard,
  allow,
  canDdl,
  canWrite,
  clip,
  refuse,
  tableLabel,
} from '../../shared/sqlguard/common.ts';
import { type AnyObj, isObj } from '../../shared/sqlguard/tree.ts';
import { type WalkState, finishTables, statementName, strings, tableIndex, visitNode, wrappedType } from './walk.ts';
import { statementShape, type ShapeInfo } from './shape.ts';
import { literalForm } from './literals.ts';
import type { TableRef } from '../../shared/policy.ts';

// ---------------------------------------------------------------------------------------------------
// Entry point

/** Refuse standard '...' literals holding a backslash: their meaning depends on standard_conforming_strings. */
function checkBackslashes(sql: string): string | undefined {
  if (!sql.includes('\\')) return undefined;
  let tokens: ReturnType<typeof scanSync>['tokens'];
  try {
    tokens = scanSync(sql).tokens;
  } catch {
    return 'the SQL could not be read';
  }
  for (const t of tokens) {
    if (t.tokenName === 'SCONST' && t.text.startsWith("'") && t.text.includes('\\')) {
      return `the string literal ${clip(t.text, 40)} contains a backslash, whose meaning depends on server settings; use E'...' or $$...$$ instead`;
    }
  }
  return undefined;
}

function decide(sql: string, opts: GuardOptions, info?: ShapeInfo): GuardResult {
  const label = tableLabel(opts);
  const no = (detail: string, why?: RefusalClass) => refuse(opts, label, detail, why);

  if (sql.trim() === '') return no('the query is empty', 'parse_error');
  if (sql.length > MAX_SQL_LENGTH) return no(`the query is longer than ${MAX_SQL_LENGTH} characters`, 'too_long');
  if (sql.includes('\u0000')) return no('the query contains a NUL character', 'parse_error');
  const bs = checkBackslashes(sql);
  if (bs !== undefined) return no(bs);

  let stmts: unknown[];
  try {
    stmts = parseSync(sql).stmts ?? [];
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return no(`the SQL could not be parsed (${clip(msg)})`, 'parse_error');
  }
  if (stmts.length === 0) return no('the query contains no statement (only comments or semicolons)', 'parse_error');
  if (stmts.length > 1) {
    const names = stmts.slice(0, 4).map((s) => statementName(isObj(s) ? s.stmt : undefined));
    return no(`found ${stmts.length} statements (${names.join('; ')}${stmts.length > 4 ? '; ...' : ''}); send exactly one`, 'multiple_statements');
  }
  const first = stmts[0];
  const stmt = isObj(first) ? first.stmt : undefined;
  if (!isObj(stmt)) return no('the SQL could not be parsed', 'parse_error');
  const type = wrappedType(stmt);
  const node = type === undefined ? undefined : (stmt[type] as AnyObj);
  if (type === undefined || node === undefined) return no('the SQL could not be parsed', 'parse_error');

  const st: WalkState = { opts, writes: new Set(), locks: false, ddl: false, ...(opts.policy || opts.tables ? { refs: [] } : {}) };
  if (opts.tables) st.multi = { index: tableIndex(opts.tables.list), touched: new Set(), columns: new Set(), params: new Set() };
  try {
    switch (type) {
      case 'SelectStmt':
      case 'InsertStmt':
      case 'UpdateStmt':
      case 'DeleteStmt':
        return decideDml(sql, type, stmt, node, st, info);
      case 'CreateStmt':
      case 'AlterTableStmt':
      case 'DropStmt':
      case 'TruncateStmt':
      case 'IndexStmt':
      case 'RenameStmt': {
        if (!canDdl(opts)) return no(`found ${statementName(stmt)}`, 'ddl');
        // DDL names the tool's own table and no other, with or without opts.tables.
        const own = ownIndex(opts);
        if (opts.tables && own === undefined) return no("this tool's table is not among the connector's tables");
        checkDdl(type, node, { ...st, multi: undefined, refs: undefined });
        return own === undefined ? allow('ddl', false) : { ok: true, kind: 'ddl', readOnly: false, touched: [own] };
      }
      default:
        return no(`found ${statementName(stmt)}`, 'statement_not_allowed');
    }
  } catch (e) {
    if (e instanceof Refusal) return no(e.detail, e.reasonClass);
    if (e instanceof RangeError) return no('the query is nested too deeply');
    throw e;
  }
}

/**
 * The text spans of the references to the tool's table (shared/policy.ts replaces each by the policy's derived
 * table). The parser reports byte offsets of a reference's first name part; the scanner's tokens give where its name
 * ends. A span whose tokens are not exactly `name` or `schema . name` is refused: the rewrite never guesses.
 */
/** A SELECT, INSERT, UPDATE or DELETE: walked, kind decided, shape, references and (opts.tables) touched tables added. */
function decideDml(sql: string, type: string, stmt: AnyObj, node: AnyObj, st: WalkState, info?: ShapeInfo): GuardResult {
  const { opts } = st;
  visitNode(type, node, st, EMPTY_SCOPE);
  const writes = [...st.writes];
  const read = writes.length === 0 && !st.locks;
  if (!read && !canWrite(opts)) {
    if (type === 'SelectStmt' && writes.length > 0)
      throw new Refusal(`found a data-modifying WITH clause (${writes.map((w) => w.toUpperCase()).join(', ')})`, 'write');
    if (writes.length > 0) throw new Refusal(`found ${statementName(stmt)}`, 'write');
    throw new Refusal('SELECT ... FOR UPDATE/SHARE takes row locks', 'row_lock');
  }
  const kind: StatementKind = read ? 'select' : (WRITE_KINDS[type] ?? writes[0] ?? 'select');
  const touched = st.multi ? finishTables(st, ownIndex(opts), !read) : undefined;
  return {
    ok: true,
    kind,
    readOnly: read,
    // The shape keys the server-side resolution verdict (postgres-shape.ts): computed from this parse, so a call
    // parses its text once.
    shape: statementShape(sql, stmt, info),
    // No reference to locate (no governed table touched): no scan of the text.
    ...(st.refs && (read || touched) ? { refs: st.refs.length === 0 ? [] : tableRefs(sql, st.refs) } : {}),
    ...(touched ? { touched } : {}),
  };
}

const WRITE_KINDS: Readonly<Record<string, StatementKind>> = { InsertStmt: 'insert', UpdateStmt: 'update', DeleteStmt: 'delete' };

/** With opts.tables: the index of the tool's own table in the list, if it is listed. */
function ownIndex(opts: GuardOptions): number | undefined {
  return opts.tables ? tableIndex(opts.tables.list).byName.get(`${opts.table.schema}\u0000${opts.table.name}`) : undefined;
}

function tableRefs(sql: string, raw: NonNullable<WalkState['refs']>): TableRef[] {
  const bytes = Buffer.from(sql, 'utf8');
  const tokens = scanSync(sql).tokens;
  const charAt = (byte: number): number => (bytes.length === sql.length ? byte : bytes.subarray(0, byte).toString('utf8').length);
  return raw.map((r) => {
    const i = tokens.findIndex((t) => t.start === r.location);
    const first = tokens[i];
    const names = r.parts === 1 ? [first] : [first, tokens[i + 1], tokens[i + 2]];
    if (!first || names.some((t) => t === undefined) || (r.parts === 2 && names[1]!.text !== '.')) throw new Refusal('a table reference could not be located');
    const last = names[names.length - 1]!;
    if (last.text.startsWith('"') ? !last.text.endsWith('"') : !/^[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*$/.test(last.text)) {
      throw new Refusal('a table reference could not be located');
    }
    return { start: charAt(first.start), end: charAt(last.end), alias: r.alias ? null : last.text, ...(r.table === undefined ? {} : { table: r.table }) };
  });
}

function checkDdl(type: string, node: AnyObj, st: WalkState): void {
  const ddlState: WalkState = { ...st, ddl: true };
  const opts = st.opts;
  const ownLabel = tableLabel(opts);
  switch (type) {
    case 'DropStmt': {
      if (node.removeType !== 'OBJECT_TABLE') throw new Refusal(`found ${statementName({ DropStmt: node })}; only DROP TABLE ${ownLabel} is allowed`);
      if (node.behavior === 'DROP_CASCADE') throw new Refusal('CASCADE would touch other objects');
      const objects = Array.isArray(node.objects) ? node.objects : [];
      if (objects.length === 0) throw new Refusal('the DROP statement names no table');
      for (const o of objects) {
        const names = isObj(o) && isObj(o.List) ? strings(o.List.items) : ['?'];
        const own =
          (names.length === 1 && names[0] === opts.table.name) || (names.length === 2 && names[0] === opts.table.schema && names[1] === opts.table.name);
        if (!own) throw new Refusal(`it drops "${clip(names.join('.'))}", which is not this tool's table`, 'other_table');
      }
      return;
    }
    case 'TruncateStmt':
      if (!Array.isArray(node.relations) || node.relations.length === 0) throw new Refusal('the TRUNCATE statement names no table');
      visitNode(type, node, ddlState, EMPTY_SCOPE);
      return;
    case 'AlterTableStmt':
      if (node.objtype !== 'OBJECT_TABLE') throw new Refusal('only ALTER TABLE is allowed');
      visitNode(type, node, ddlState, EMPTY_SCOPE);
      return;
    case 'RenameStmt':
      if (!['OBJECT_TABLE', 'OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT'].includes(String(node.renameType))) {
        throw new Refusal('only renaming the table, one of its columns or one of its constraints is allowed');
      }
      if (node.renameType !== 'OBJECT_TABLE' && node.relationType !== 'OBJECT_TABLE') throw new Refusal('only ALTER TABLE ... RENAME is allowed');
      if (!isObj(node.relation)) throw new Refusal('the statement names no table');
      visitNode(type, node, ddlState, EMPTY_SCOPE);
      return;
    case 'CreateStmt':
    case 'IndexStmt':
      if (!isObj(node.relation)) throw new Refusal('the statement names no table');
      visitNode(type, node, ddlState, EMPTY_SCOPE);
      return;
  }
}

/** Verdicts by literal form (literals.ts): a form's first verdict, or NO_FORM when it may not be reused. */
const formCache = new VerdictCache();
const NO_FORM: GuardResult = Object.freeze({ ok: false, reason: 'not reusable by form' });

/**
 * A new text whose form (its small numbers replaced by their kinds) was seen before takes that form's verdict without
 * a parse: allowed, with the same kind and shape (literals.ts says why that is exact). Only an allowed verdict whose
 * shape kept no literal's value is reused; a refusal, a text over the length limit and a call with a tool policy
 * (whose verdict carries positions in the text) are decided from the text every time.
 */
function decideByForm(sql: string, opts: GuardOptions): GuardResult {
  if (opts.policy !== undefined || sql.length > MAX_SQL_LENGTH) return decide(sql, opts);
  const form = literalForm(sql);
  if (form === null || form === sql) return decide(sql, opts);
  const key = VerdictCache.key(form, opts);
  const known = formCache.get(key);
  if (known !== undefined && known !== NO_FORM) return known;
  const info: ShapeInfo = { exact: false };
  const verdict = decide(sql, opts, info);
  // With opts.tables, a verdict holding positions of references (a touched table's policy) is this text's alone;
  // the tables touched are the same for every text of the form (names are never literals).
  const reusable = verdict.ok && verdict.shape !== undefined && !info.exact && !(verdict.refs && verdict.refs.length > 0);
  if (known === undefined) formCache.set(key, reusable ? Object.freeze(verdict) : NO_FORM);
  return verdict;
}

const cached = cachedGuard(decideByForm);

/**
 * Decides whether `sql` may run on a PostgreSQL tool bound to `opts.table`.
 * Synchronous: the WASM parser is loaded when this module is imported.
 */
export const guardPostgresSql: (sql: string, opts: GuardOptions) => GuardResult = cached.guard;

/** For tests and benchmarks: forget cached verdicts. */
export const clearPostgresGuardCache = (): void => {
  cached.clear();
  formCache.clear();
};
