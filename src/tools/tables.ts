/**
 * A connector's tables (SQL) or collections (MongoDB, decision 0328) as a call sees them (issue 38, docs/decisions/0292): every exposed table's target with the
 * governance of its own tool row (enabled, policy, approval), built once per catalog version and connector; a call
 * adds its caller's attributes, which only the tables with a policy need (one array copy per call at most).
 */
import type { CallTable, ExecutionContext, SqlTarget, CallPolicy } from '../connectors/types.ts';

/** What a table's tool row decides besides the guard's part: who approves calls that touch it, and for how long. */
export interface TableRow {
  /** The table's tool row (approvals record the rows a held call touched). */
  toolId: string;
  /** `schema.table`, as audit rows and messages name it. */
  name: string;
  requiresApproval: boolean;
  approvalEmails: string[];
  approvalTtlSeconds: number;
}

/** A policy ready for calls, the caller's attributes still to add. */
type PreparedPolicy = Omit<CallPolicy, 'caller'>;

/** One connector's tables for one catalog version. */
export interface ConnectorTables {
  /** `<catalogVersion>:<connectorId>`: keys the guard's verdicts on this list. */
  key: string;
  /** Index i of `list`, `rows` and `policies` is one table. */
  list: readonly CallTable[];
  rows: readonly TableRow[];
  /** Some table requires approval: a call's touched tables must be known before it runs (runtime.ts gate). */
  anyApproval: boolean;
  /** The indexes of the tables with a policy: the only entries a call rewrites with its caller's attributes. */
  policied: readonly number[];
  policies: readonly (PreparedPolicy | null)[];
  /** `tableKey(schema, table)` -> index. */
  indexOf: ReadonlyMap<string, number>;
  /** `{key, list}` for calls when no table has a policy (nothing per call), and per caller object otherwise. */
  plain: NonNullable<ExecutionContext['tables']>;
  byCaller: WeakMap<object, NonNullable<ExecutionContext['tables']>>;
}

/** A MongoDB collection's target (mongodb/driver.ts MongoTarget) as far as the table list needs it. */
interface CollectionTarget {
  database: string;
  collection: string;
}

/** What a table tool row governs: a SQL table, or a MongoDB collection (its database stands for the schema). */
type TableTarget = SqlTarget | CollectionTarget;

/** One table tool row as the catalog read it. */
export interface TableSource {
  toolId: string;
  target: TableTarget;
  enabled: boolean;
  policy: PreparedPolicy | null;
  requiresApproval: boolean;
  approvalEmails: string[];
  approvalTtlSeconds: number;
}

/** Whether a tool's target is a SQL table (postgresql, mysql, mssql, oracle), as opposed to a collection or an upstream tool. */
export function isSqlTable(target: unknown): target is SqlTarget {
  const t = target as Partial<SqlTarget> | null;
  return !!t && typeof t.schema === 'string' && typeof t.table === 'string' && Array.isArray(t.columns) && !t.saved;
}

/** Whether a tool's target is a MongoDB collection or view (not a saved pipeline): issue 38 `$lookup` reads these. */
export function isCollection(target: unknown): target is CollectionTarget {
  const t = target as Partial<CollectionTarget & { saved: unknown }> | null;
  return !!t && typeof t.database === 'string' && typeof t.collection === 'string' && !t.saved;
}

/** Where a target is, as the list keys and names it: a collection's database stands for the schema. */
function placeOf(target: TableTarget | { schema: string; table: string }): { schema: string; table: string } {
  return 'collection' in target ? { schema: target.database, table: target.collection } : target;
}

export function connectorTables(key: string, sources: TableSource[]): ConnectorTables {
  const placed = sources.map((s) => ({ s, at: placeOf(s.target) }));
  placed.sort((a, b) => (a.at.schema === b.at.schema ? cmp(a.at.table, b.at.table) : cmp(a.at.schema, b.at.schema)));
  const sorted = placed.map((p) => p.s);
  // A collection's target goes to the mongodb driver as it is (CallTable<MongoTarget>); the list's type is the SQL one.
  const list = sorted.map((s) => ({ target: s.target, enabled: s.enabled, ...(s.policy ? { policy: { ...s.policy, caller: {} } } : {}) })) as CallTable[];
  const policied = sorted.flatMap((s, i) => (s.policy ? [i] : []));
  return {
    key,
    list,
    rows: sorted.map((s) => ({
      toolId: s.toolId,
      name: `${placeOf(s.target).schema}.${placeOf(s.target).table}`,
      requiresApproval: s.requiresApproval,
      approvalEmails: s.approvalEmails,
      approvalTtlSeconds: s.approvalTtlSeconds,
    })),
    anyApproval: sorted.some((s) => s.requiresApproval),
    policied,
    policies: sorted.map((s) => s.policy),
    indexOf: new Map(placed.map((p, i) => [tableKey(p.at.schema, p.at.table), i])),
    plain: { key, list },
    byCaller: new WeakMap(),
  };
}

export const tableKey = (schema: string, table: string): string => `${schema}\u0000${table}`;

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const NO_ATTRIBUTES: Readonly<Record<string, string>> = Object.freeze({});

/** The tables of one call: each policy with this caller's attributes (kept per caller object while the catalog lives). */
export function callTables(tables: ConnectorTables, caller: Readonly<Record<string, string>> | undefined): NonNullable<ExecutionContext['tables']> {
  if (tables.policied.length === 0) return tables.plain;
  const who = caller ?? NO_ATTRIBUTES;
  const known = tables.byCaller.get(who);
  if (known) return known;
  const list = tables.list.slice();
  for (const i of tables.policied) list[i] = { ...list[i]!, policy: { ...tables.policies[i]!, caller: who } };
  const made = { key: tables.key, list };
  tables.byCaller.set(who, made);
  return made;
}

/** Who approves a held call and for how long: every tool row whose approval it needs (`toolIds`). */
export interface HeldApproval {
  approvalEmails: string[];
  approvalTtlSeconds: number;
  toolIds: string[];
}

/** The approval a call touching `touched` (indexes) needs, with the called tool's own; null when none requires one. */
export function approvalOf(tables: ConnectorTables, touched: readonly number[], own: Omit<TableRow, 'name'>): HeldApproval | null {
  const rows = touched.map((i) => tables.rows[i]!).filter((r) => r.requiresApproval);
  if (own.requiresApproval) rows.unshift({ ...own, name: '' });
  if (rows.length === 0) return null;
  const emails = new Set<string>();
  for (const r of rows) for (const e of r.approvalEmails) emails.add(e);
  return {
    approvalEmails: [...emails].sort(),
    approvalTtlSeconds: Math.min(...rows.map((r) => r.approvalTtlSeconds)),
    toolIds: [...new Set(rows.map((r) => r.toolId))],
  };
}

/** The indexes of touched tables (as a driver reports them), ascending; a table not in the list is left out. */
export function touchedIndexes(tables: ConnectorTables, touched: readonly (TableTarget | { schema: string; table: string })[]): number[] {
  if (touched.length === 1) {
    const at = placeOf(touched[0]!);
    const i = tables.indexOf.get(tableKey(at.schema, at.table));
    return i === undefined ? [] : [i];
  }
  const out = new Set<number>();
  for (const t of touched) {
    const at = placeOf(t);
    const i = tables.indexOf.get(tableKey(at.schema, at.table));
    if (i !== undefined) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** `schema.table` of each touched table, for the audit row. */
export function touchedNames(tables: ConnectorTables, touched: readonly number[]): string[] {
  return touched.map((i) => tables.rows[i]!.name);
}
