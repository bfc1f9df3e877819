/** PostgreSQL guard: the walk over the parse tree (table references, CTE scoping) and the names used in refusals. */

import type { GuardOptions, GuardTable } from '../../shared/sqlguard/types.ts';
import { Refusal, clip } from '../../shared/sqlguard/common.ts';
import { type AnyObj, isObj, variantOf } from '../../shared/sqlguard/tree.ts';
import { checkFunction } from './functions.ts';
import { DDL_NODES, DDL_ONLY_TYPE_NAMES, QUERY_NODES, SAFE_ALTER_SUBTYPES, SAFE_TABLESAMPLE_METHODS, SAFE_TYPE_NAMES, UNWRAPPED_FIELDS } from './nodes.ts';

export interface WalkState {
  readonly opts: GuardOptions;
  /** Kinds of data-modifying statements found (top level or in CTEs). */
  writes: Set<'insert' | 'update' | 'delete'>;
  /** A FOR UPDATE/SHARE clause was found. */
  locks: boolean;
  /** Node types allowed in this statement. */
  readonly ddl: boolean;
  /**
   * With a tool policy: the references to the tool's table found so far (byte locations of their first name part).
   * With opts.tables: the references to listed tables that have a policy, each with its index (`table`).
   */
  refs?: { location: number; parts: number; alias: boolean; table?: number }[];
  /** With opts.tables (issue 38): how names resolve to listed tables, and what the walk found. */
  multi?: MultiState;
}

/** The multi-table part of a walk (opts.tables): what the statement touched, the column names and parameters it used. */
interface MultiState {
  readonly index: TableIndex;
  touched: Set<number>;
  /** Every name part of every column reference (checked against the touched tables' hidden columns after the walk). */
  columns: Set<string>;
  /** Every parameter number used ($n), 0 for one without a number. */
  params: Set<number>;
}

/** The listed tables by `schema\0name`, and by bare name (the schemas holding it), for resolution and refusals. */
export interface TableIndex {
  readonly list: readonly GuardTable[];
  readonly byName: ReadonlyMap<string, number>;
  readonly schemasOf: ReadonlyMap<string, readonly string[]>;
}

const indexes = new WeakMap<readonly GuardTable[], TableIndex>();

/** The index of a table list, built once per list (the list is the catalog's, reused across calls). */
export function tableIndex(list: readonly GuardTable[]): TableIndex {
  let index = indexes.get(list);
  if (index) return index;
  const byName = new Map<string, number>();
  const schemasOf = new Map<string, string[]>();
  list.forEach((t, i) => {
    const key = `${t.schema}\u0000${t.name}`;
    if (!byName.has(key)) byName.set(key, i);
    const schemas = schemasOf.get(t.name) ?? [];
    schemas.push(t.schema);
    schemasOf.set(t.name, schemas);
  });
  indexes.set(list, (index = { list, byName, schemasOf }));
  return index;
}

function isEmpty(v: AnyObj): boolean {
  for (const _ in v) return false;
  return true;
}

/** If `v` is a wrapped node `{Type: {...}}`, its type name; otherwise undefined. */
export function wrappedType(v: AnyObj): string | undefined {
  const type = variantOf(v);
  return type !== undefined && isObj(v[type]) ? type : undefined;
}

export function strings(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const item of list) {
    if (isObj(item) && isObj(item.String) && typeof item.String.sval === 'string') out.push(item.String.sval);
    else out.push('?');
  }
  return out;
}

/** Records a reference to the tool's table for the policy rewrite (shared/policy.ts). */
function policyRef(rv: AnyObj, refs: NonNullable<WalkState['refs']>, table?: number): void {
  if (rv.inh !== true) throw new Refusal('ONLY is not allowed on a table with column or row policies');
  if (typeof rv.location !== 'number' || rv.location < 0) throw new Refusal('a table reference could not be located');
  refs.push({ location: rv.location, parts: rv.schemaname === undefined ? 1 : 2, alias: isObj(rv.alias), ...(table === undefined ? {} : { table }) });
}

/**
 * Parameters carry the policy's caller values: a statement under a policy must not bind (or read) them itself. A
 * saved tool's statement has its own `$1..$k` (its arguments, `policy.params`); the policy's are numbered after them.
 */
function checkParamRef(node: AnyObj, st: WalkState): void {
  // Multi-table: whether a touched table has a policy is known after the walk (finishTables).
  if (st.multi) {
    st.multi.params.add(typeof node.number === 'number' ? node.number : 0);
    return;
  }
  const own = st.opts.policy?.params ?? 0;
  if (st.opts.policy && !(typeof node.number === 'number' && node.number >= 1 && node.number <= own)) {
    throw new Refusal('parameters ($n) are not allowed on a tool with column or row policies');
  }
}

/** A column reference naming a hidden column (in any part: `ssn`, `t.ssn`), refused with the policy. */
function checkHiddenColumn(node: AnyObj, st: WalkState): void {
  if (st.multi) for (const part of strings(node.fields)) st.multi.columns.add(part);
  const hidden = st.opts.policy?.hidden;
  if (!hidden || hidden.length === 0) return;
  for (const part of strings(node.fields)) {
    if (hidden.includes(part)) throw new Refusal(`column "${clip(part)}" is not available on this tool`, 'hidden_column');
  }
}

function rangeVarLabel(rv: AnyObj): string {
  return [rv.catalogname, rv.schemaname, rv.relname].filter((p) => typeof p === 'string').join('.');
}

function isOwnTable(rv: AnyObj, opts: GuardOptions): boolean {
  if (rv.catalogname !== undefined) return false;
  if (rv.relname !== opts.table.name) return false;
  return rv.schemaname === undefined || rv.schemaname === opts.table.schema;
}

function checkRangeVar(rv: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  const cte = rv.schemaname === undefined && rv.catalogname === undefined && typeof rv.relname === 'string' && scope.has(rv.relname);
  if (st.multi) {
    // A CTE in scope shadows a table of its name (unqualified names only), as the server resolves it.
    if (cte) return;
    const i = resolveListed(rv, st.opts, st.multi.index);
    st.multi.touched.add(i);
    if (st.multi.index.list[i]!.policy && st.refs) policyRef(rv, st.refs, i);
    return;
  }
  if (isOwnTable(rv, st.opts)) {
    // A CTE of the table's name shadows the table (unqualified names only): that reference is the CTE, not a table read.
    if (st.refs && !cte) policyRef(rv, st.refs);
    return;
  }
  if (cte) return;
  throw new Refusal(`it references "${clip(rangeVarLabel(rv))}", which is not this tool's table`, 'other_table');
}

/**
 * The listed table a relation name resolves to, as the server resolves it: a qualified name is that schema's table; an
 * unqualified one is looked up along the call's search_path, whose first (and only user) schema is the tool's
 * (pool.ts searchPath), so it is the tool's schema's table of that name. Anything else is refused, naming it.
 */
function resolveListed(rv: AnyObj, opts: GuardOptions, index: TableIndex): number {
  const label = clip(rangeVarLabel(rv));
  if (rv.catalogname === undefined && typeof rv.relname === 'string') {
    const schema = typeof rv.schemaname === 'string' ? rv.schemaname : opts.table.schema;
    const i = index.byName.get(`${schema}\u0000${rv.relname}`);
    if (i !== undefined) return i;
    const elsewhere = rv.schemaname === undefined ? index.schemasOf.get(rv.relname) : undefined;
    if (elsewhere?.length === 1) {
      throw new Refusal(
        `"${label}" is not in schema "${clip(opts.table.schema)}", where unqualified names resolve; write it as ${clip(`${elsewhere[0]}.${rv.relname}`)}`,
      );
    }
    if (elsewhere && elsewhere.length > 1) {
      throw new Refusal(`"${label}" is in several schemas (${clip(elsewhere.join(', '))}) and not in "${clip(opts.table.schema)}"; qualify it with its schema`);
    }
  }
  throw new Refusal(`it references "${label}", which is not a table of this connector`, 'other_table');
}

/**
 * After a multi-table walk: the touched tables (a write or lock touches its own table and no other), no hidden column
 * of a touched table named anywhere, and no parameter of a policy's beyond the statement's own. Returns the indexes.
 */
export function finishTables(st: WalkState, own: number | undefined, write: boolean): number[] {
  const m = st.multi!;
  const { list } = m.index;
  if (write) {
    if (own === undefined) throw new Refusal("this tool's table is not among the connector's tables");
    const other = [...m.touched].find((i) => i !== own);
    if (other !== undefined) {
      const t = list[other]!;
      throw new Refusal(`a write touches only its own table and reads no other, and it references "${clip(`${t.schema}.${t.name}`)}"`, 'other_table');
    }
    m.touched.add(own);
  }
  const touched = [...m.touched].sort((a, b) => a - b);
  for (const i of touched) {
    const t = list[i]!;
    const named = t.hidden?.find((h) => m.columns.has(h));
    if (named !== undefined) throw new Refusal(`column "${clip(named)}" of table ${clip(`${t.schema}.${t.name}`)} is not available`, 'hidden_column');
  }
  if (touched.some((i) => list[i]!.policy)) {
    const ownParams = st.opts.policy?.params ?? 0;
    for (const n of m.params) {
      if (!(n >= 1 && n <= ownParams)) throw new Refusal('parameters ($n) are not allowed on a statement reading a table with column or row policies');
    }
  }
  return touched;
}

/** Adds the CTE names of a WITH clause to the scope, SQL-style. Returns [scope for CTE i, scope for body]. */
function cteScopes(withClause: AnyObj, outer: ReadonlySet<string>): { perCte: ReadonlySet<string>[]; body: ReadonlySet<string> } {
  const ctes = Array.isArray(withClause.ctes) ? withClause.ctes : [];
  const names: string[] = [];
  for (const c of ctes) {
    const cte = isObj(c) && isObj(c.CommonTableExpr) ? c.CommonTableExpr : undefined;
    if (cte === undefined || typeof cte.ctename !== 'string') throw new Refusal('its WITH clause could not be understood');
    names.push(cte.ctename);
  }
  const body = new Set([...outer, ...names]);
  if (withClause.recursive === true) return { perCte: names.map(() => body), body };
  const perCte: ReadonlySet<string>[] = [];
  const acc = new Set(outer);
  for (const n of names) {
    perCte.push(new Set(acc));
    acc.add(n);
  }
  return { perCte, body };
}

function walk(value: unknown, st: WalkState, scope: ReadonlySet<string>, parentType: string, field: string): void {
  if (Array.isArray(value)) {
    for (const v of value) walk(v, st, scope, parentType, field);
    return;
  }
  if (!isObj(value)) return;
  const wrapped = wrappedType(value);
  if (wrapped !== undefined) {
    visitNode(wrapped, value[wrapped] as AnyObj, st, scope);
    return;
  }
  // `{}` stands for an empty node (e.g. the NIL element of DISTINCT's list): it holds nothing.
  if (isEmpty(value)) return;
  const t = UNWRAPPED_FIELDS[`${parentType}.${field}`];
  if (t === undefined) throw new Refusal(`it uses a construct the guard does not support (${clip(`${parentType}.${field}`)})`);
  visitNode(t, value, st, scope);
}

function walkFields(type: string, node: AnyObj, st: WalkState, scope: ReadonlySet<string>, skip?: ReadonlySet<string>): void {
  for (const k in node) {
    if (skip?.has(k)) continue;
    const v = node[k];
    if (typeof v === 'object' && v !== null) walk(v, st, scope, type, k);
  }
}

const SKIP_WITH = new Set(['withClause']);
const SKIP_LEAF = new Set<string>();
const SKIP_LOCKED_RELS = new Set(['lockedRels']);
const SKIP_TARGET = new Set(['relation', 'withClause']);
const SKIP_CTEQUERY = new Set(['ctequery']);

export function visitNode(type: string, node: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  if (!QUERY_NODES.has(type) && !(st.ddl && DDL_NODES.has(type))) {
    throw new Refusal(`it uses ${describeNode(type, node)}, which is not allowed here`);
  }
  if (node.behavior === 'DROP_CASCADE') throw new Refusal('CASCADE would touch other objects');
  switch (type) {
    case 'A_Const':
    case 'String':
    case 'Integer':
    case 'Float':
    case 'Boolean':
    case 'BitString':
    case 'A_Star':
      return;
    case 'ParamRef':
      return checkParamRef(node, st);
    case 'SQLValueFunction':
    case 'SetToDefault':
    case 'Alias':
      return; // leaves
    case 'RangeVar':
      checkRangeVar(node, st, scope);
      return;
    case 'ColumnRef':
      checkHiddenColumn(node, st);
      walkFields(type, node, st, scope);
      return;
    case 'FuncCall':
      checkFunction(strings(node.funcname));
      walkFields(type, node, st, scope, SKIP_LEAF);
      return;
    case 'A_Expr':
      checkOperator(node);
      walkFields(type, node, st, scope);
      return;
    case 'TypeName':
      checkTypeName(node, st);
      walkFields(type, node, st, scope);
      return;
    case 'RangeTableSample':
      checkTableSample(node);
      walkFields(type, node, st, scope);
      return;
    case 'LockingClause':
      st.locks = true;
      // lockedRels name FROM items (often aliases), not tables; they are resolved against the FROM list.
      walkFields(type, node, st, scope, SKIP_LOCKED_RELS);
      return;
    case 'SelectStmt': {
      if (node.intoClause !== undefined) throw new Refusal('SELECT ... INTO creates a new table');
      const inner = visitWith(node, st, scope);
      walkFields(type, node, st, inner, SKIP_WITH);
      return;
    }
    case 'InsertStmt':
    case 'UpdateStmt':
    case 'DeleteStmt':
      visitWrite(type, node, st, scope);
      return;
    case 'CommonTableExpr':
      // Reached only through visitWith, which walks ctequery with the right scope.
      walkFields(type, node, st, scope, SKIP_CTEQUERY);
      return;
    case 'AlterTableCmd':
      checkAlterCmd(node);
      walkFields(type, node, st, scope);
      return;
    case 'CreateStmt':
      if (node.relpersistence === 't' || (isObj(node.relation) && node.relation.relpersistence === 't')) {
        throw new Refusal('temporary tables are not allowed');
      }
      walkFields(type, node, st, scope);
      return;
    default:
      walkFields(type, node, st, scope);
  }
}

/** Operators are built-in ones, unqualified or in pg_catalog: OPERATOR(schema.op) could name a user's function. */
function checkOperator(node: AnyObj): void {
  const op = strings(node.name);
  if (op.length > 1 && !(op.length === 2 && op[0] === 'pg_catalog')) {
    throw new Refusal(`operator OPERATOR(${clip(op.join('.'))}) is not allowed; use built-in operators unqualified`);
  }
}

function checkTableSample(node: AnyObj): void {
  const method = strings(node.method);
  if (!(method.length === 1 && SAFE_TABLESAMPLE_METHODS.has(method[0]!)))
    throw new Refusal(`TABLESAMPLE ${clip(method.join('.'))} is not allowed (use BERNOULLI or SYSTEM)`);
}

function checkAlterCmd(node: AnyObj): void {
  const sub = typeof node.subtype === 'string' ? node.subtype : '?';
  if (!SAFE_ALTER_SUBTYPES.has(sub)) throw new Refusal(`ALTER TABLE ${clip(sub.replace(/^AT_/, ''))} is not allowed`);
}

/** INSERT, UPDATE, DELETE: recorded as a write; the target is always this tool's real table, never a CTE name. */
function visitWrite(type: string, node: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  st.writes.add(type === 'InsertStmt' ? 'insert' : type === 'UpdateStmt' ? 'update' : 'delete');
  if (!isObj(node.relation) || !isOwnTable(node.relation, st.opts)) {
    throw new Refusal(`it writes to "${clip(isObj(node.relation) ? rangeVarLabel(node.relation) : '?')}", which is not this tool's table`, 'other_table');
  }
  const inner = visitWith(node, st, scope);
  walkFields(type, node, st, inner, SKIP_TARGET);
}

/** Refuses a type name that is not a built-in scalar type (see SAFE_TYPE_NAMES for why). */
function checkTypeName(node: AnyObj, st: WalkState): void {
  const names = strings(node.names);
  const label = clip(names.join('.'));
  if (node.pct_type === true) throw new Refusal(`the type reference ${label}%TYPE is not allowed`);
  if (node.setof === true) throw new Refusal('SETOF types are not allowed');
  const last = names.length === 1 || (names.length === 2 && names[0] === 'pg_catalog') ? names[names.length - 1] : undefined;
  if (last !== undefined && (SAFE_TYPE_NAMES.has(last) || (st.ddl && DDL_ONLY_TYPE_NAMES.has(last)))) return;
  if (last === 'regclass' || last?.startsWith('reg')) throw new Refusal(`casts to ${label} (a system-catalog lookup) are not allowed`);
  throw new Refusal(`the type ${label} is not allowed here; only built-in scalar types may be named (no row types, domains or catalog-lookup types)`);
}

/** Walks a node's WITH clause (if any) and returns the scope for the node's body. */
function visitWith(node: AnyObj, st: WalkState, scope: ReadonlySet<string>): ReadonlySet<string> {
  const wc = node.withClause;
  if (wc === undefined) return scope;
  if (!isObj(wc)) throw new Refusal('its WITH clause could not be understood');
  const { perCte, body } = cteScopes(wc, scope);
  const ctes = wc.ctes as unknown[];
  ctes.forEach((c, i) => {
    const cte = (c as AnyObj).CommonTableExpr as AnyObj;
    visitNode('CommonTableExpr', cte, st, perCte[i]!);
    const q = cte.ctequery;
    if (!isObj(q)) throw new Refusal('its WITH clause could not be understood');
    walk(q, st, perCte[i]!, 'CommonTableExpr', 'ctequery');
  });
  return body;
}

// ---------------------------------------------------------------------------------------------------
// Statement names for refusals

const TRANSACTION_NAMES: Readonly<Record<string, string>> = {
  TRANS_STMT_BEGIN: 'BEGIN',
  TRANS_STMT_START: 'START TRANSACTION',
  TRANS_STMT_COMMIT: 'COMMIT/END',
  TRANS_STMT_ROLLBACK: 'ROLLBACK/ABORT',
  TRANS_STMT_SAVEPOINT: 'SAVEPOINT',
  TRANS_STMT_RELEASE: 'RELEASE SAVEPOINT',
  TRANS_STMT_ROLLBACK_TO: 'ROLLBACK TO SAVEPOINT',
  TRANS_STMT_PREPARE: 'PREPARE TRANSACTION',
  TRANS_STMT_COMMIT_PREPARED: 'COMMIT PREPARED',
  TRANS_STMT_ROLLBACK_PREPARED: 'ROLLBACK PREPARED',
};

const STATEMENT_NAMES: Readonly<Record<string, string>> = {
  SelectStmt: 'SELECT',
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  VariableSetStmt: 'SET',
  VariableShowStmt: 'SHOW',
  CopyStmt: 'COPY',
  DoStmt: 'DO',
  CallStmt: 'CALL',
  ExplainStmt: 'EXPLAIN',
  GrantStmt: 'GRANT/REVOKE',
  GrantRoleStmt: 'GRANT/REVOKE role',
  VacuumStmt: 'VACUUM/ANALYZE',
  ListenStmt: 'LISTEN',
  UnlistenStmt: 'UNLISTEN',
  NotifyStmt: 'NOTIFY',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeallocateStmt: 'DEALLOCATE',
  LockStmt: 'LOCK',
  LoadStmt: 'LOAD',
  CreateStmt: 'CREATE TABLE',
  AlterTableStmt: 'ALTER TABLE',
  TruncateStmt: 'TRUNCATE',
  IndexStmt: 'CREATE INDEX',
  RenameStmt: 'ALTER ... RENAME',
  ViewStmt: 'CREATE VIEW',
  CreateTableAsStmt: 'CREATE TABLE AS',
  CreateFunctionStmt: 'CREATE FUNCTION',
  DiscardStmt: 'DISCARD',
  CheckPointStmt: 'CHECKPOINT',
  DeclareCursorStmt: 'DECLARE CURSOR',
  FetchStmt: 'FETCH',
  ClosePortalStmt: 'CLOSE',
  AlterSystemStmt: 'ALTER SYSTEM',
  ConstraintsSetStmt: 'SET CONSTRAINTS',
  ReindexStmt: 'REINDEX',
  ClusterStmt: 'CLUSTER',
  RefreshMatViewStmt: 'REFRESH MATERIALIZED VIEW',
  CreateSchemaStmt: 'CREATE SCHEMA',
  CreatedbStmt: 'CREATE DATABASE',
  DropdbStmt: 'DROP DATABASE',
  CreateRoleStmt: 'CREATE ROLE',
  AlterRoleStmt: 'ALTER ROLE',
  DropRoleStmt: 'DROP ROLE',
  CreateExtensionStmt: 'CREATE EXTENSION',
  RuleStmt: 'CREATE RULE',
  CreateTrigStmt: 'CREATE TRIGGER',
  CommentStmt: 'COMMENT',
  AlterOwnerStmt: 'ALTER ... OWNER',
  AlterObjectSchemaStmt: 'ALTER ... SET SCHEMA',
};

export function statementName(stmt: unknown): string {
  if (!isObj(stmt)) return 'an unknown statement';
  const type = wrappedType(stmt);
  if (type === undefined) return 'an unknown statement';
  const node = stmt[type] as AnyObj;
  if (type === 'TransactionStmt') return TRANSACTION_NAMES[String(node.kind)] ?? 'a transaction statement';
  if (type === 'VariableSetStmt' && node.kind === 'VAR_SET_MULTI') return `SET ${clip(String(node.name ?? ''))}`;
  if (type === 'DropStmt')
    return `DROP ${String(node.removeType ?? '')
      .replace(/^OBJECT_/, '')
      .replace(/_/g, ' ')}`.trim();
  if (type === 'ExplainStmt') return 'EXPLAIN';
  if (type === 'CopyStmt') return node.is_program === true ? 'COPY ... PROGRAM' : 'COPY';
  return (
    STATEMENT_NAMES[type] ??
    type
      .replace(/Stmt$/, '')
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .toUpperCase()
  );
}

function describeNode(type: string, node: AnyObj): string {
  switch (type) {
    case 'RangeFunction':
      return 'a function in FROM';
    case 'RangeTableFunc':
      return 'XMLTABLE';
    case 'JsonTable':
      return 'JSON_TABLE';
    case 'XmlExpr':
    case 'XmlSerialize':
      return 'an XML function';
    case 'IntoClause':
      return 'SELECT ... INTO';
    case 'MergeStmt':
      return 'MERGE';
    case 'RoleSpec':
      return 'a role';
    default:
      if (type.endsWith('Stmt')) return statementName({ [type]: node });
      return `a ${type} construct`;
  }
}
