/**
 * MySQL / MariaDB SQL guard: decides whether one SQL text may run against a tool bound to one table.
 *
 * Parser: `@guanmingchiu/sqlparser-ts` — Apache DataFusion's sqlparser-rs (a hand-written
 * recursive-descent SQL parser, MySQL dialect) compiled to WebAssembly and shipped inside the npm
 * package: no native build, no download, no install script, loads under Bun and Node. We tried
 * `node-sql-parser` (the usual choice) first: its PEG parser rebuilds its grammar tables on every call
 * (several times slower than sqlparser-rs, far over budget on the hot path) and it reads
 * `--x` and `/*! ... *\/` as comments where MySQL does not. sqlparser-rs is faster, tokenizes
 * `--x` as MySQL does, rejects `/*!`, and yields a typed AST (Rust enums: `{"Variant": {...}}`) that a
 * fail-closed walker can check variant by variant. There is no separate MariaDB dialect; the MySQL one
 * parses what MariaDB adds that matters here (e.g. DELETE ... RETURNING), and MariaDB's `/*M!` comments
 * are refused by the lexer (mysql-lexer.ts). Use guardMysqlSql for both.
 *
 * Neither parser is MySQL's own grammar, so the guard does not trust the parser alone with statement
 * boundaries: a lexer written to MySQL's own rules runs first and is the authority on comments, quotes
 * and `;`:
 *  - `/*!...*\/`, `/*M!...*\/` (executable comments) and `/*+...*\/` (optimizer hints, which can SET_VAR)
 *    are refused anywhere in the text, before parsing;
 *  - `--` not followed by white space (two minus signs to MySQL) is refused as ambiguous;
 *  - a quoted string whose end depends on whether backslash escapes are on (NO_BACKSLASH_ESCAPES)
 *    is refused; unterminated quotes or comments are refused;
 *  - at most one statement, one trailing `;`;
 *  - `@` (user/system variables, `INTO @v`), `OUTFILE`/`DUMPFILE`, dangerous function names followed
 *    by `(` (LOAD_FILE, SLEEP, BENCHMARK, GET_LOCK, ...) and `mysql.` / `information_schema.` /
 *    `performance_schema.` / `sys.` are refused at token level, whatever the parser makes of them.
 * Then the AST is walked with an allow-list of variants, failing closed on anything it does not know:
 *  - SELECT (WITH, UNION, subqueries, derived tables, VALUES) always; INSERT/REPLACE/UPDATE/DELETE (also
 *    under WITH) only when allowWrite && !readOnly; CREATE TABLE / CREATE INDEX / ALTER TABLE (listed
 *    operations and options) / DROP TABLE / TRUNCATE / RENAME TABLE on the tool's table only when
 *    allowDdl && !readOnly; everything else (SET, LOCK TABLES, HANDLER, LOAD DATA, DO, CALL, transaction
 *    control, SHOW, EXPLAIN, GRANT, PREPARE, ...) is refused.
 *  - every table reference must be the tool's table (unqualified, or qualified with opts.table.schema,
 *    the database) or a CTE visible at that point (a CTE sees earlier siblings, and itself under RECURSIVE);
 *    names are compared as the server compares them (opts.lowerCaseTableNames, see mysql-names.ts: exactly
 *    on a case-sensitive server), and system databases are never the tool's;
 *  - functions: an ALLOW-LIST (SAFE_FUNCTIONS) of side-effect-free built-ins; qualified (stored)
 *    functions and functions in FROM (JSON_TABLE, table functions) are refused;
 *  - SELECT ... INTO (OUTFILE, DUMPFILE, @var) refused; FOR UPDATE / FOR SHARE only when writes are
 *    allowed.
 *
 * The guard is split by what each part owns: this file (text checks, statement dispatch, verdict
 * cache), mysql-lexer.ts (the lexer and token-level checks), mysql-walk.ts (the AST walk), mysql-names.ts
 * (how the server compares names),
 * mysql-functions.ts (the function allow-list) and mysql-ddl.ts (the DDL statements and options).
 *
 * Speed: parsing runs on every uncached tools/call statement (measured figures: docs/performance.md, SQL
 * guard speed). A repeated statement is answered from a 512-entry LRU of verdicts (bounded in entries and
 * key size) without parsing.
 */

import { init as initSqlParser, parse as parseSql } from '@guanmingchiu/sqlparser-ts';
import type { GuardOptions, GuardResult, RefusalClass, StatementKind } from '../../shared/sqlguard/types.ts';
import { EMPTY_SCOPE, MAX_SQL_LENGTH, Refusal, cachedGuard, allow, canDdl, canWrite, clip, refuse, tableLabel } from '../../shared/sqlguard/common.ts';
import { type AnyObj, isObj, variantOf } from '../../shared/sqlguard/tree.ts';
import { checkExecutableComments, checkTokens, lexMysql } from './lexer.ts';
import { type WalkState, visitVariant } from './walk.ts';
import { walkDdl } from './ddl.ts';
import { isSystemDatabase } from './names.ts';
import { checkListed, listedState } from './tables.ts';
import type { TableRef } from '../../shared/policy.ts';

await initSqlParser();

// ---------------------------------------------------------------------------------------------------
// Statement names for refusals

const STATEMENT_NAMES: Readonly<Record<string, string>> = {
  Query: 'SELECT',
  Insert: 'INSERT',
  Update: 'UPDATE',
  Delete: 'DELETE',
  Set: 'SET',
  Commit: 'COMMIT',
  Rollback: 'ROLLBACK',
  StartTransaction: 'START TRANSACTION/BEGIN',
  LockTables: 'LOCK TABLES',
  UnlockTables: 'UNLOCK TABLES',
  Call: 'CALL',
  Explain: 'EXPLAIN',
  ExplainTable: 'EXPLAIN/DESCRIBE',
  Grant: 'GRANT',
  Revoke: 'REVOKE',
  Prepare: 'PREPARE',
  Execute: 'EXECUTE',
  Deallocate: 'DEALLOCATE',
  Kill: 'KILL',
  Flush: 'FLUSH',
  Use: 'USE',
  LoadData: 'LOAD DATA',
  Savepoint: 'SAVEPOINT',
  ReleaseSavepoint: 'RELEASE SAVEPOINT',
  CreateView: 'CREATE VIEW',
  CreateFunction: 'CREATE FUNCTION',
  CreateProcedure: 'CREATE PROCEDURE',
  CreateTrigger: 'CREATE TRIGGER',
  CreateDatabase: 'CREATE DATABASE',
  CreateTable: 'CREATE TABLE',
  AlterTable: 'ALTER TABLE',
  Truncate: 'TRUNCATE',
  CreateIndex: 'CREATE INDEX',
  RenameTable: 'RENAME TABLE',
  Merge: 'MERGE',
};

function statementName(variant: string, node: unknown): string {
  if (variant === 'Drop' && isObj(node)) return `DROP ${String(node.object_type ?? '').toUpperCase()}`.trim();
  if (variant === 'Commit' && isObj(node) && node.end === true) return 'END';
  return STATEMENT_NAMES[variant] ?? variant.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

// ---------------------------------------------------------------------------------------------------
// Entry point

const DDL_STATEMENTS: ReadonlySet<string> = new Set(['CreateTable', 'AlterTable', 'Drop', 'Truncate', 'CreateIndex', 'RenameTable']);

function decide(sql: string, opts: GuardOptions): GuardResult {
  const label = tableLabel(opts);
  const no = (detail: string, why?: RefusalClass) => refuse(opts, label, detail, why);

  if (sql.trim() === '') return no('the query is empty', 'parse_error');
  if (sql.length > MAX_SQL_LENGTH) return no(`the query is longer than ${MAX_SQL_LENGTH} characters`, 'too_long');
  if (sql.includes('\u0000')) return no('the query contains a NUL character', 'parse_error');
  const ec = checkExecutableComments(sql);
  if (ec !== undefined) return no(ec);

  const mode = opts.lowerCaseTableNames ?? 0;
  // The server's catalogs hold every table's names, statistics and grants: never a tool's table (the driver does
  // not expose them either; this covers a tool introspected before it refused to).
  if (isSystemDatabase(opts.table.schema, mode)) return no(`${clip(opts.table.schema)} is a system database; its tables are not served`);

  const st: WalkState = {
    opts,
    schema: opts.table.schema,
    name: opts.table.name,
    mode,
    storedFunctions: new Set(opts.storedFunctions ?? []),
    writes: new Set(),
    locks: false,
    ddl: false,
    ...(opts.policy ? { refs: [] } : {}),
  };
  try {
    const tokens = lexMysql(sql);
    if (tokens.length === 0) return no('the query contains no statement (only comments or semicolons)', 'parse_error');
    checkTokens(tokens, opts);

    let parsed: unknown;
    try {
      parsed = parseSql(sql, 'mysql');
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      return no(`the SQL could not be parsed (${clip(msg.replace(/^sql parser error:\s*/i, ''))})`, 'parse_error');
    }
    if (!Array.isArray(parsed) || parsed.length !== 1 || !isObj(parsed[0])) {
      if (Array.isArray(parsed) && parsed.length > 1) return no(`found ${parsed.length} statements; send exactly one`, 'multiple_statements');
      return no('the SQL could not be parsed', 'parse_error');
    }
    const stmt = parsed[0];
    const variant = variantOf(stmt);
    if (variant === undefined) return no('the SQL could not be parsed', 'parse_error');
    const node = stmt[variant];

    if (variant === 'Query' || variant === 'Insert' || variant === 'Update' || variant === 'Delete') {
      st.listed = listedState(opts, mode);
      if (st.listed) st.refs = [];
      visitVariant(variant, node, st, EMPTY_SCOPE);
      const writes = [...st.writes];
      if (st.listed) checkListed(st, st.listed, writes.length > 0 || st.locks);
      const touched = st.listed ? { touched: [...st.listed.touched].sort((a, b) => a - b) } : {};
      if (writes.length === 0 && !st.locks)
        return st.refs ? { ok: true, kind: 'select', readOnly: true, refs: tableRefs(sql, st.refs), ...touched } : allow('select', true);
      if (!canWrite(opts)) {
        if (writes.length > 0) return no(`found ${writes.map((w) => w.toUpperCase()).join(', ')}`, 'write');
        return no('SELECT ... FOR UPDATE / FOR SHARE takes row locks', 'row_lock');
      }
      const kind: StatementKind = writes[0] ?? 'select';
      return { ...allow(kind, false), ...touched };
    }
    if (DDL_STATEMENTS.has(variant)) {
      if (!canDdl(opts)) return no(`found ${statementName(variant, node)}`, 'ddl');
      if (!isObj(node) && !Array.isArray(node)) return no('the SQL could not be parsed');
      walkDdl(variant, node as AnyObj, st);
      return allow('ddl', false);
    }
    return no(`found ${statementName(variant, node)}`, 'statement_not_allowed');
  } catch (e) {
    if (e instanceof Refusal) return no(e.detail, e.reasonClass);
    if (e instanceof RangeError) return no('the query is nested too deeply');
    throw e;
  }
}

const cached = cachedGuard(decide);

/**
 * Decides whether `sql` may run on a MySQL or MariaDB tool bound to `opts.table`, where
 * `opts.table.schema` is the database name.
 */
export const guardMysqlSql: (sql: string, opts: GuardOptions) => GuardResult = cached.guard;

/** For tests and benchmarks: forget cached verdicts. */
export const clearMysqlGuardCache: () => void = cached.clear;

/** Offsets of each line's start, so the parser's (line, column) positions become string offsets. */
function lineStarts(sql: string): number[] {
  const starts = [0];
  for (let i = 0; i < sql.length; i++) if (sql[i] === '\n') starts.push(i + 1);
  return starts;
}

/** A (line, column) of the parser (both from 1; columns count characters, not UTF-16 units) as a string offset. */
function offsetOf(sql: string, starts: number[], pos: { line: number; column: number }): number {
  const lineStart = starts[pos.line - 1];
  if (lineStart === undefined) throw new Refusal('a table reference could not be located');
  let i = lineStart;
  for (let col = 1; col < pos.column; col++) i += (sql.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  return i;
}

/** How an identifier part is written in the text: quoted parts with their doubled quotes. */
function written(part: { value: string; quote: string | null }): string {
  return part.quote === null ? part.value : `${part.quote}${part.value.split(part.quote).join(part.quote + part.quote)}${part.quote}`;
}

/**
 * The text spans of the references to the tool's table (shared/policy.ts replaces each by the policy's derived
 * table). A span whose text is not exactly its name parts (white space aside) is refused: the rewrite never guesses.
 */
function tableRefs(sql: string, raw: NonNullable<WalkState['refs']>): TableRef[] {
  const starts = lineStarts(sql);
  return raw.map((r) => {
    const start = offsetOf(sql, starts, r.start);
    const end = offsetOf(sql, starts, r.end);
    const text = sql.slice(start, end).replace(/\s+/g, '');
    if (text !== r.parts.map(written).join('.')) throw new Refusal('a table reference could not be located');
    const alias = r.alias ? null : written(r.parts[r.parts.length - 1]!);
    return r.table === undefined ? { start, end, alias } : { start, end, alias, table: r.table };
  });
}
