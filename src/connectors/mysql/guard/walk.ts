/** MySQL guard: the walk over the parsed AST (variant allow-list, table references, CTE scoping, write targets). */

import type { GuardOptions, GuardTable } from '../../shared/sqlguard/types.ts';
import { EMPTY_SCOPE, Refusal, clip } from '../../shared/sqlguard/common.ts';
import { type AnyObj, identOf, isObj, nameParts, spelled, treeWalker, variantOf } from '../../shared/sqlguard/tree.ts';
import { LITERAL_VARIANTS, READ_VARIANTS } from '../../shared/sqlguard/variants.ts';
import { checkFunction } from './functions.ts';
import { type LowerCaseTableNames, isSystemDatabase, nameKey, sameName } from './names.ts';

/** AST variants (sqlparser-rs enum variant names) the guard understands in queries and writes: the shared read list and MySQL's. */
const QUERY_VARIANTS: ReadonlySet<string> = new Set([
  ...READ_VARIANTS,
  'Prefixed',
  'ObjectName',
  'RLike',
  'MatchAgainst',
  'Separator',
  'OffsetCommaLimit',
  'StraightJoin',
  'Insert',
  'Update',
  'Delete',
  'DuplicateKeyUpdate',
  'ColumnName',
  'TableName',
  'WithFromKeyword',
  'WithoutKeyword',
  'MemberOf',
]);

/** Literal values: leaves. */
const LITERALS: ReadonlySet<string> = new Set([
  ...LITERAL_VARIANTS,
  'SingleQuotedByteStringLiteral',
  'DoubleQuotedByteStringLiteral',
  'Placeholder',
  'EscapedStringLiteral',
]);

/** ALTER TABLE operations the walk accepts (ddl.ts also takes RENAME TO, which it checks without a walk). */
export const ALTER_OPERATIONS: readonly string[] = [
  'AddColumn',
  'DropColumn',
  'ModifyColumn',
  'ChangeColumn',
  'AddConstraint',
  'DropIndex',
  'DropPrimaryKey',
  'DropForeignKey',
  'DropConstraint',
  'RenameColumn',
  'AlterColumn',
];

/** Extra variants in the DDL statements we accept. */
const DDL_VARIANTS: ReadonlySet<string> = new Set([
  ...ALTER_OPERATIONS,
  'SetDefault',
  'DropDefault',
  'SetNotNull',
  'DropNotNull',
  'After',
  'First',
  'Default',
  'Comment',
  'WithEq',
  'PrimaryKey',
  'Unique',
  'Index',
  'Check',
  'ForeignKey',
  'Generated',
  'OnUpdate',
  'CharacterSet',
  'Collation',
  'DialectSpecific',
  'Word',
]);

export interface WalkState {
  readonly opts: GuardOptions;
  /** The tool's database and table, as stored on the server. */
  readonly schema: string;
  readonly name: string;
  /** How the server compares database, table and CTE names (mysql-names.ts). */
  readonly mode: LowerCaseTableNames;
  /** Allowed built-in names that a stored function of the tool's database also carries (upper case). */
  readonly storedFunctions: ReadonlySet<string>;
  writes: Set<'insert' | 'update' | 'delete'>;
  locks: boolean;
  ddl: boolean;
  /** With a tool policy: the references to the tool's table found so far, by the parser's positions. */
  refs?: PolicyRef[];
  /** With opts.tables (reads and writes, not DDL): the connector's tables, what the walk touched and the names it saw. */
  listed?: ListedState;
}

/** The connector's tables as the server resolves names to them (tables.ts), and what one walk found. */
export interface ListedState {
  readonly index: TableIndex;
  readonly list: readonly GuardTable[];
  readonly touched: Set<number>;
  /** Column-like names met (every part of `t.c`), checked against the touched tables' hidden columns after the walk. */
  readonly names: string[];
  /** A `?` marker was met. */
  placeholder: boolean;
}

/** Name key (`nameKey(database)` NUL `nameKey(table)`) to the table's index in the list; -1: two tables share it. */
export interface TableIndex {
  readonly byKey: ReadonlyMap<string, number>;
  /** The tool's own table's index, when it is listed. */
  readonly own: number | undefined;
}

type Position = { line: number; column: number };
/** A reference to the tool's table as the parser gives it: its name parts as written, and where they are. */
interface PolicyRef {
  start: Position;
  end: Position;
  parts: { value: string; quote: string | null }[];
  alias: boolean;
  /** With opts.tables: the listed table's index. */
  table?: number;
}

/** Records a reference to the tool's table for the policy rewrite (a CTE of the same name shadows the table). */
function policyRef(payload: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  if (!st.refs) return;
  const parts = nameParts(payload.name);
  if (parts.length === 1 && scope.has(cteKey(parts[0]!, st))) return;
  pushRef(payload, st.refs);
}

/** Where a table reference is in the text (its name parts' spans), for the rewrite. */
function pushRef(payload: AnyObj, refs: PolicyRef[], table?: number): void {
  const idents = (payload.name as unknown[]).map(identOf) as AnyObj[];
  const spans = idents.map((i) => (isObj(i.span) ? i.span : undefined));
  const first = spans[0]?.start;
  const last = spans[spans.length - 1]?.end;
  if (!isObj(first) || !isObj(last)) throw new Refusal('a table reference could not be located');
  refs.push({
    start: first as Position,
    end: last as Position,
    parts: idents.map((i) => ({ value: String(i.value), quote: typeof i.quote_style === 'string' ? i.quote_style : null })),
    alias: isObj(payload.alias),
    ...(table === undefined ? {} : { table }),
  });
}

/**
 * With opts.tables: a table in FROM / JOIN is a CTE in scope (one-part names only) or one of the connector's
 * tables, resolved as the server resolves it (an unqualified name in the tool's database, the session's default);
 * anything else is refused. A listed table with a policy has every reference recorded with its index.
 */
function listedRef(payload: AnyObj, st: WalkState, listed: ListedState, scope: ReadonlySet<string>): void {
  const parts = nameParts(payload.name);
  if (parts.length === 2 && isSystemDatabase(parts[0]!, st.mode)) {
    throw new Refusal(`it references "${clip(parts.join('.'))}" in a system database, which is not a table of this connector`, 'other_table');
  }
  if (parts.length === 1 && scope.has(cteKey(parts[0]!, st))) return;
  const i = parts.length <= 2 ? listed.index.byKey.get(tableKey(parts.length === 2 ? parts[0]! : st.schema, parts[parts.length - 1]!, st.mode)) : undefined;
  if (i === undefined) throw new Refusal(`it references "${clip(parts.join('.'))}", which is not a table of this connector`, 'other_table');
  if (i < 0) throw new Refusal(`"${clip(parts.join('.'))}" names two of the connector's tables; write it as the server stores it`);
  listed.touched.add(i);
  if (hasPolicy(i, listed)) pushRef(payload, st.refs!, i);
}

/** An INSERT's target: the tool's own table, touched with opts.tables. */
function insertTarget(payload: unknown, st: WalkState): void {
  checkTableName(payload, st, EMPTY_SCOPE, 'writes to');
  if (st.listed) touchOwn(st.listed);
}

/** With opts.tables: a write's target (always the tool's own table) is touched; an own table the list lacks is refused. */
function touchOwn(listed: ListedState): void {
  if (listed.index.own === undefined) throw new Refusal("the tool's own table is not among the connector's tables");
  listed.touched.add(listed.index.own);
}

/**
 * Whether references to listed table `i` are rewritten: its own policy. With `tables`, `opts.policy` carries only a
 * saved statement's parameter count (shared/prepare.ts); every table's policy, the tool's own included, is in the list.
 */
export function hasPolicy(i: number, listed: ListedState): boolean {
  return listed.list[i]!.policy === true;
}

/** The key a listed table is found under: database and table compared as the server compares them. */
export function tableKey(schema: string, name: string, mode: LowerCaseTableNames): string {
  return `${nameKey(schema, mode)}\u0000${nameKey(name, mode)}`;
}

/** With a tool policy: a leaf naming a hidden column, or a parameter (they carry the policy's caller values), is refused. */
function policyLeaf(variant: string, payload: unknown, st: WalkState): void {
  if (st.listed) return listedLeaf(variant, payload, st.listed);
  if (!st.opts.policy) return;
  if (variant === 'Identifier' && isObj(payload)) checkHiddenName([String(payload.value)], st);
  else if (variant === 'CompoundIdentifier') checkHiddenName(nameParts(payload), st);
  else if (variant === 'Value' && isObj(payload) && isObj(payload.value) && 'Placeholder' in payload.value && !st.opts.policy.params) {
    // A saved tool's statement has its own `?` (its arguments, from its :name placeholders); free SQL has none.
    throw new Refusal('parameters (?) are not allowed on a tool with column or row policies');
  }
}

/** With opts.tables: names and markers are kept; which tables' hidden columns apply is known after the walk. */
function listedLeaf(variant: string, payload: unknown, listed: ListedState): void {
  if (variant === 'Identifier' && isObj(payload)) listed.names.push(String(payload.value));
  else if (variant === 'CompoundIdentifier') listed.names.push(...nameParts(payload));
  else if (variant === 'Value' && isObj(payload) && isObj(payload.value) && 'Placeholder' in payload.value) listed.placeholder = true;
}

/** A name naming a hidden column (any part of `t.ssn`), refused with the policy; MySQL column names ignore case. */
function checkHiddenName(values: string[], st: WalkState): void {
  const hidden = st.opts.policy?.hidden;
  if (!hidden || hidden.length === 0) return;
  for (const v of values) {
    if (hidden.some((h) => h.toLowerCase() === v.toLowerCase())) throw new Refusal(`column "${clip(v)}" is not available on this tool`, 'hidden_column');
  }
}

/** Unqualified names resolve in the session's default database, which the driver sets to the tool's own. */
function isOwnName(parts: string[], st: WalkState): boolean {
  if (parts.length === 1) return sameName(parts[0]!, st.name, st.mode);
  if (parts.length === 2) return sameName(parts[0]!, st.schema, st.mode) && sameName(parts[1]!, st.name, st.mode);
  return false;
}

/** Whether a database name the statement writes is the tool's own (renames stay within it). */
export function isOwnSchema(name: string, st: WalkState): boolean {
  return sameName(name, st.schema, st.mode);
}

/** Scopes hold CTE names as `nameKey` makes them, so a lookup compares as the server does. */
function cteKey(name: string, st: WalkState): string {
  return nameKey(name, st.mode);
}

export function checkTableName(name: unknown, st: WalkState, scope: ReadonlySet<string>, verb = 'references'): void {
  const parts = nameParts(name);
  if (parts.length === 2 && isSystemDatabase(parts[0]!, st.mode)) {
    throw new Refusal(`it ${verb} "${clip(parts.join('.'))}" in a system database, which is not this tool's table`, 'other_table');
  }
  // A CTE shadows a table of the same name; the own-table test first only decides the wording.
  if (isOwnName(parts, st)) return;
  if (parts.length === 1 && scope.has(cteKey(parts[0]!, st))) return;
  throw new Refusal(`it ${verb} "${clip(parts.join('.'))}", which is not this tool's table`, 'other_table');
}

/** `FROM DUAL` (unquoted) is MySQL's dummy table, not a table. */
function isDual(name: unknown): boolean {
  if (!Array.isArray(name) || name.length !== 1) return false;
  const p = name[0];
  const ident = isObj(p) && isObj(p.Identifier) ? p.Identifier : undefined;
  return (
    ident !== undefined &&
    typeof ident.value === 'string' &&
    ident.value.toUpperCase() === 'DUAL' &&
    (ident.quote_style === undefined || ident.quote_style === null)
  );
}

const { walk, walkStruct } = treeWalker<WalkState, ReadonlySet<string>>({
  // MySQL's INSERT ... SELECT holds its query under `source`.
  queryFields: new Set(['subquery', 'query', 'source']),
  variant: visitVariant,
  query: walkQuery,
});
export { walk };

export function visitVariant(variant: string, payload: unknown, st: WalkState, scope: ReadonlySet<string>): void {
  if (LITERALS.has(variant)) return;
  if (!QUERY_VARIANTS.has(variant) && !(st.ddl && DDL_VARIANTS.has(variant))) {
    throw new Refusal(`it uses ${describeVariant(variant)}, which is not allowed here`);
  }
  switch (variant) {
    case 'Identifier':
      checkBareIdentifier(payload);
      return policyLeaf(variant, payload, st);
    case 'Value':
    case 'CompoundIdentifier':
    case 'QualifiedWildcard':
    case 'Wildcard':
      return policyLeaf(variant, payload, st); // leaves (column references and literals)
    case 'Query':
    case 'Subquery':
      if (!isObj(payload)) throw new Refusal('a subquery could not be understood');
      walkQuery(payload, st, scope);
      return;
    case 'Select':
      if (!isObj(payload)) throw new Refusal('a SELECT could not be understood');
      if (payload.into !== undefined && payload.into !== null) throw new Refusal('SELECT ... INTO is not allowed');
      if (Array.isArray(payload.optimizer_hints) && payload.optimizer_hints.length > 0) throw new Refusal('optimizer hints are not allowed');
      walkStruct(payload, st, scope);
      return;
    case 'Table': {
      // A table in FROM / JOIN / UPDATE / DELETE.
      if (!isObj(payload) || !('name' in payload)) throw new Refusal('a table reference could not be understood');
      if (payload.args !== undefined && payload.args !== null) throw new Refusal('table functions are not allowed in FROM');
      for (const k of ['version', 'sample', 'json_path']) {
        if (payload[k] !== undefined && payload[k] !== null) throw new Refusal(`table modifier ${k} is not allowed`);
      }
      if (isDual(payload.name)) return;
      if (st.listed) return listedRef(payload, st, st.listed, scope);
      checkTableName(payload.name, st, scope);
      policyRef(payload, st, scope);
      return;
    }
    case 'TableName':
      return insertTarget(payload, st);
    case 'Function':
      if (!isObj(payload)) throw new Refusal('a function call could not be understood');
      // TableFactor::Function (a function in FROM) carries `lateral` / `alias`; Expr::Function does not.
      if ('lateral' in payload || 'alias' in payload) throw new Refusal('functions in FROM are not allowed; select from the table');
      checkFunction(nameParts(payload.name), st.storedFunctions);
      walkStruct(payload, st, scope, NAME_FIELD);
      return;
    case 'Insert':
    case 'Update':
    case 'Delete':
      if (isObj(payload) && variantOf(payload) !== undefined) {
        // SetExpr::Update(Statement::Update) and friends: a statement under WITH.
        walk(payload, st, scope, variant);
        return;
      }
      if (!isObj(payload)) throw new Refusal('a statement could not be understood');
      if (variant === 'Insert') walkInsert(payload, st, scope);
      else if (variant === 'Update') walkUpdate(payload, st, scope);
      else walkDelete(payload, st, scope);
      return;
    case 'DialectSpecific': {
      // Raw tokens kept by the parser (column option AUTO_INCREMENT): allow only that keyword.
      const tokens = Array.isArray(payload) ? payload : [];
      for (const t of tokens) {
        const word = isObj(t) && isObj(t.Word) ? t.Word : undefined;
        if (word === undefined || String(word.value).toUpperCase() !== 'AUTO_INCREMENT') throw new Refusal('column option not allowed');
      }
      return;
    }
    case 'ForeignKey':
      if (isObj(payload)) checkTableName(payload.foreign_table, st, EMPTY_SCOPE);
      walkStruct(isObj(payload) ? payload : {}, st, scope, FOREIGN_TABLE_FIELD);
      return;
    default:
      // A newtype variant may wrap another enum, a struct or a list: walk() tells them apart.
      walk(payload, st, scope, variant);
  }
}

/**
 * Keywords MySQL/MariaDB evaluate as functions without parentheses, which the parser reports as plain column
 * names: they read the session's account and role. (CURRENT_DATE and the like come through as functions.)
 */
const BARE_STATE_FUNCTIONS: ReadonlySet<string> = new Set(['CURRENT_USER', 'CURRENT_ROLE', 'SESSION_USER', 'SYSTEM_USER']);

function checkBareIdentifier(payload: unknown): void {
  if (!isObj(payload) || typeof payload.value !== 'string') throw new Refusal('a name could not be understood');
  const quoted = payload.quote_style !== undefined && payload.quote_style !== null;
  if (!quoted && BARE_STATE_FUNCTIONS.has(payload.value.toUpperCase())) {
    throw new Refusal(`${clip(payload.value)} reads the server session's account, which is not this tool's table`);
  }
}

const NAME_FIELD: ReadonlySet<string> = new Set(['name']);
const FOREIGN_TABLE_FIELD: ReadonlySet<string> = new Set(['foreign_table']);
const WITH_LOCKS: ReadonlySet<string> = new Set(['with', 'locks', 'body']);

export function walkQuery(q: AnyObj, st: WalkState, outer: ReadonlySet<string>): void {
  let scope = outer;
  const w = q.with;
  if (isObj(w)) {
    const ctes = Array.isArray(w.cte_tables) ? w.cte_tables : [];
    const names: string[] = [];
    for (const c of ctes) {
      const alias = isObj(c) && isObj(c.alias) && isObj(c.alias.name) ? c.alias.name.value : undefined;
      if (typeof alias !== 'string') throw new Refusal('its WITH clause could not be understood');
      names.push(alias);
    }
    const keys = names.map((n) => cteKey(n, st));
    const acc = new Set(outer);
    ctes.forEach((c: AnyObj, i: number) => {
      // A CTE sees the earlier ones; under RECURSIVE also itself. MariaDB also lets a recursive CTE see later
      // siblings, MySQL does not: the guard takes the narrower rule, so what it reads as a CTE never resolves
      // to a real table on either server (it may refuse a forward reference MariaDB would accept).
      const cteScope = w.recursive === true ? new Set([...acc, keys[i]!]) : new Set(acc);
      if (!isObj(c.query)) throw new Refusal('its WITH clause could not be understood');
      walkQuery(c.query, st, cteScope);
      acc.add(keys[i]!);
    });
    scope = acc;
  } else if (w !== undefined && w !== null) {
    throw new Refusal('its WITH clause could not be understood');
  }
  if (Array.isArray(q.locks) && q.locks.length > 0) st.locks = true;
  walk(q.body, st, scope, 'body');
  walkStruct(q, st, scope, WITH_LOCKS);
}

function walkInsert(node: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  st.writes.add('insert');
  if (!isObj(node.table)) throw new Refusal('the INSERT names no table');
  walkStruct(node, st, scope);
}

/** Walks assignments: the target is a column (maybe alias-qualified), only the value is an expression. */
function walkAssignments(list: unknown, st: WalkState, scope: ReadonlySet<string>): void {
  if (!Array.isArray(list)) return;
  for (const a of list) if (isObj(a)) walk(a.value, st, scope, 'value');
}

const ASSIGNMENT_FIELDS: ReadonlySet<string> = new Set(['assignments', 'table']);

function walkUpdate(node: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  st.writes.add('update');
  const table = node.table;
  const relation = isObj(table) && isObj(table.relation) ? table.relation : undefined;
  const target = relation && isObj(relation.Table) ? relation.Table : undefined;
  if (target === undefined) throw new Refusal('the UPDATE target could not be understood');
  // The target is always a real table, never a CTE.
  checkTableName(target.name, st, EMPTY_SCOPE, 'writes to');
  walk(table, st, scope, 'table');
  walkAssignments(node.assignments, st, scope);
  walkStruct(node, st, scope, ASSIGNMENT_FIELDS);
}

const DELETE_FIELDS: ReadonlySet<string> = new Set(['tables', 'from']);

function walkDelete(node: AnyObj, st: WalkState, scope: ReadonlySet<string>): void {
  st.writes.add('delete');
  const fromKind = node.from;
  const variant = isObj(fromKind) ? variantOf(fromKind) : undefined;
  const from = variant !== undefined ? (fromKind as AnyObj)[variant] : undefined;
  if (!Array.isArray(from) || from.length === 0) throw new Refusal('the DELETE names no table');
  const aliases = new Set<string>();
  for (const twj of from) {
    const rel = isObj(twj) && isObj(twj.relation) && isObj(twj.relation.Table) ? twj.relation.Table : undefined;
    if (rel === undefined) throw new Refusal('the DELETE target could not be understood');
    // Rows are deleted from the FROM tables: real tables, never CTEs.
    checkTableName(rel.name, st, EMPTY_SCOPE, 'deletes from');
    // Table aliases follow the table-name rule (case-sensitive in mode 0).
    if (isObj(rel.alias) && isObj(rel.alias.name) && typeof rel.alias.name.value === 'string') aliases.add(cteKey(rel.alias.name.value, st));
  }
  walk(from, st, scope, 'from');
  // Multi-table DELETE targets name FROM items, by alias or by name.
  const targets = Array.isArray(node.tables) ? node.tables : [];
  for (const t of targets) {
    const parts = nameParts(t);
    if (!(parts.length === 1 && aliases.has(cteKey(parts[0]!, st))) && !isOwnName(parts, st)) {
      throw new Refusal(`it deletes from "${clip(parts.join('.'))}", which is not this tool's table`, 'other_table');
    }
  }
  walkStruct(node, st, scope, DELETE_FIELDS);
}

function describeVariant(variant: string): string {
  switch (variant) {
    case 'TableFunction':
    case 'Function':
    case 'UNNEST':
    case 'JsonTable':
    case 'OpenJsonTable':
      return 'a function in FROM';
    default:
      return spelled(variant);
  }
}
