/**
 * Issue 38 (docs/decisions/0292): a statement over several tables of its connector, each governed by its own table's
 * tool row. This file owns what the shared call steps (prepare.ts) do with `ExecutionContext.tables`: the guard's view
 * of the list (cached by its key), and, once the guard has said which tables a statement touches, the refusal of a
 * disabled one and the policies to apply.
 */
import type { GuardOptions, GuardResult, GuardTable, RefusalClass } from './sqlguard/types.ts';
import type { CallTable, ExecutionContext, SqlTarget, CallPolicy } from '../types.ts';
import type { PolicyTable, TableRef } from './policy.ts';
import { resolutionKey } from './policy.ts';

type Tables = NonNullable<ExecutionContext['tables']>;

/** Guard lists by the catalog's key: built once per catalog version and connector, not per call (2,000 tables...). */
const GUARD_LISTS_MAX = 64;
const guardLists = new Map<string, NonNullable<GuardOptions['tables']>>();

function toGuardTable(t: CallTable, policy: CallPolicy | undefined, columns: boolean): GuardTable {
  // The read-only dialects (`columns`: mssql, oracle) have no rewrite: they keep hidden columns out themselves, and
  // `policy` tells them the table's policy also masks or filters rows, which refuses a statement touching it.
  const rewrite = policy !== undefined && (!columns || policy.policy.masked_columns.length > 0 || policy.policy.row_filter !== null);
  return {
    schema: t.target.schema,
    name: t.target.table,
    ...(policy ? { hidden: policy.policy.hidden_columns, ...(rewrite ? { policy: true } : {}) } : {}),
    ...(columns ? { columns: t.target.columns.map((c) => c.name) } : {}),
  };
}

/** Each list's positions by `schema\0table`, by the list's key (a list of 2,000 tables is not scanned per call). */
const positions = new Map<string, Map<string, number>>();

/** Where the tool's own table is in the list, or -1. */
export function ownIndexOf(tables: Tables, own: { schema: string; table: string }): number {
  let byName = positions.get(tables.key);
  if (!byName || byName.size > tables.list.length) {
    byName = new Map();
    tables.list.forEach((t, i) => {
      const name = `${t.target.schema}\u0000${t.target.table}`;
      if (!byName!.has(name)) byName!.set(name, i);
    });
    positions.set(tables.key, byName);
    if (positions.size > GUARD_LISTS_MAX) positions.delete(positions.keys().next().value!);
  }
  const i = byName.get(`${own.schema}\u0000${own.table}`);
  // The key promises the same list; the entry is checked all the same (a wrong position would govern the wrong table).
  return i !== undefined && tables.list[i]?.target.schema === own.schema && tables.list[i]?.target.table === own.table ? i : -1;
}

/**
 * The policy each listed table is governed by in this call: its own row's; for the tool's own table, the call's
 * policy when its row carries none (a tool-level policy not yet moved onto its table keeps applying).
 */
function policyAt(tables: Tables, i: number, own: number, callPolicy: CallPolicy | undefined): CallPolicy | undefined {
  return tables.list[i]!.policy ?? (i === own ? callPolicy : undefined);
}

/**
 * The guard's `tables` for a call. `columns`: the dialect's guard needs every table's column names (oracle). Cached
 * by the list's key; a call whose own table's policy is the tool's (not its row's) gets its own list.
 */
export function guardTablesFor(tables: Tables, own: SqlTarget, callPolicy: CallPolicy | undefined, columns: boolean): NonNullable<GuardOptions['tables']> {
  const ownAt = ownIndexOf(tables, own);
  const extra = ownAt >= 0 && !tables.list[ownAt]!.policy && callPolicy ? callPolicy : undefined;
  const key = `${tables.key}\u0000${columns ? 'c' : ''}${extra ? `\u0000${extra.key}` : ''}`;
  const hit = guardLists.get(key);
  if (hit) return hit;
  const list = tables.list.map((t, i) => toGuardTable(t, policyAt(tables, i, ownAt, callPolicy), columns));
  const made = { key, list };
  guardLists.set(key, made);
  if (guardLists.size > GUARD_LISTS_MAX) guardLists.delete(guardLists.keys().next().value!);
  return made;
}

/** What governing the touched tables decided: the policies to apply by reference, and the touched tables' targets. */
export interface TablesGovernance {
  touched: SqlTarget[];
  /** The touched tables that have a policy, by index. */
  policies: Map<number, CallPolicy>;
}

/** Why governance refuses a call: the text the agent gets and its reason class (docs/decisions/0320). */
interface TableRefusal {
  reason: string;
  class: RefusalClass;
}

/**
 * After the guard: a touched table whose tool is disabled refuses the call (the text, naming it); otherwise the
 * touched targets and the policies of those that have one.
 */
export function governTouched(
  tables: Tables,
  own: SqlTarget,
  callPolicy: CallPolicy | undefined,
  verdict: GuardResult & { ok: true },
): TablesGovernance | TableRefusal {
  const ownAt = ownIndexOf(tables, own);
  // A write touches the tool's own table, whether or not the dialect's guard listed it.
  const listed = verdict.touched ?? [];
  const touched = !verdict.readOnly && ownAt >= 0 && !listed.includes(ownAt) ? [...listed, ownAt].sort((a, b) => a - b) : listed;
  const policies = new Map<number, CallPolicy>();
  const through = new Set<number>();
  for (const i of touched) {
    const t = tables.list[i];
    if (!t) return { reason: 'The statement could not be checked against the connector’s tables.', class: 'not_allowed' };
    if (!t.enabled)
      return {
        reason: `Table "${t.target.schema}.${t.target.table}" is not available: its tool is disabled, so no statement may read it.`,
        class: 'disabled_table',
      };
    const p = policyAt(tables, i, ownAt, callPolicy);
    if (p) policies.set(i, p);
    const base = viewBlocked(tables, i, ownAt, callPolicy, through);
    if (base) return base;
  }
  // A view's bases are touched too: their approvals hold the call and the audit lists them.
  const extra = [...through].filter((j) => !touched.includes(j)).sort((a, b) => a - b);
  return { touched: [...touched, ...extra].map((i) => tables.list[i]!.target), policies };
}

/**
 * A dialect checked single-table (no list in its guard) still answers for a view's bases: the refusal, or the tool's
 * table followed by the bases of the list it reads through it.
 */
export function viewGoverned(tables: Tables, own: SqlTarget, callPolicy: CallPolicy | undefined): SqlTarget[] | TableRefusal {
  const ownAt = ownIndexOf(tables, own);
  if (ownAt < 0) return [own];
  const through = new Set<number>();
  const blocked = viewBlocked(tables, ownAt, ownAt, callPolicy, through);
  if (blocked) return blocked;
  return [own, ...[...through].sort((a, b) => a - b).map((j) => tables.list[j]!.target)];
}

/**
 * Decision 0292 item 4: a view reads its base tables where no rewrite reaches, so a touched view whose recorded bases
 * (SqlTarget.bases, through views of views) include a disabled table or one with a policy refuses the call, naming
 * that table. Bases outside the list (not exposed) govern nothing, as before; unrecorded bases are not checked.
 */
function viewBlocked(tables: Tables, i: number, ownAt: number, callPolicy: CallPolicy | undefined, reached: Set<number>): TableRefusal | null {
  const view = tables.list[i]!.target;
  if (!view.bases) return null;
  const seen = new Set<number>([i]);
  const queue = [...view.bases];
  while (queue.length > 0) {
    const b = queue.shift()!;
    const j = ownIndexOf(tables, b);
    if (j < 0 || seen.has(j)) continue;
    seen.add(j);
    const t = tables.list[j]!;
    const name = `"${t.target.schema}.${t.target.table}"`;
    const via = `View "${view.schema}.${view.table}" reads table ${name}`;
    if (!t.enabled) return { reason: `${via}, whose tool is disabled, so no statement may read it.`, class: 'disabled_table' };
    if (policyAt(tables, j, ownAt, callPolicy))
      return { reason: `${via}, which has a column or row policy that cannot apply inside a view: query ${name} itself.`, class: 'policy' };
    reached.add(j);
    queue.push(...(t.target.bases ?? []));
  }
  return null;
}

/** Each reference's table in the rewrite: the reference's `table` index (unset: the tool's own table). */
export function policyTablesOf(
  tables: Tables,
  own: SqlTarget,
  policies: ReadonlyMap<number, CallPolicy>,
  quote: (name: string) => string,
): (ref: TableRef) => PolicyTable {
  const ownAt = ownIndexOf(tables, own);
  const made = new Map<number, PolicyTable>();
  return (ref) => {
    const i = ref.table ?? ownAt;
    let t = made.get(i);
    if (!t) {
      const cp = policies.get(i);
      const target = tables.list[i]?.target;
      if (!cp || !target) throw new Error('a reference to a table without a policy');
      t = { qualified: `${quote(target.schema)}.${quote(target.table)}`, columns: target.columns.map((c) => c.name), cp };
      made.set(i, t);
    }
    return t;
  };
}

/** What keys the server-side resolution verdict for these policies (each table's policy and whether its filter applies). */
export const policiesKey = (policies: ReadonlyMap<number, CallPolicy>): string => [...policies].map(([i, cp]) => `${i}:${resolutionKey(cp)}`).join('\u0002');
