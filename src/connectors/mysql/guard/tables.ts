/**
 * MySQL guard, issue 38 (docs/decisions/0292): a statement over several of the connector's tables. The list is
 * indexed by the names the server resolves (database and table compared by `lower_case_table_names`, names.ts), and
 * after the walk the touched tables' rules are checked together: hidden columns by name, markers under a policy,
 * and a write that reads only the tool's own table.
 */
import type { GuardOptions, GuardTable } from '../../shared/sqlguard/types.ts';
import { Refusal, clip } from '../../shared/sqlguard/common.ts';
import type { LowerCaseTableNames } from './names.ts';
import { type ListedState, type TableIndex, type WalkState, hasPolicy, tableKey } from './walk.ts';

/** One name index per list object and mode: a connector's list is built once per catalog version (its `key`) and shared by its tools. */
const indexes = new WeakMap<readonly GuardTable[], Map<LowerCaseTableNames, ReadonlyMap<string, number>>>();

function indexOf(opts: GuardOptions, list: readonly GuardTable[], mode: LowerCaseTableNames): TableIndex {
  let byMode = indexes.get(list);
  if (!byMode) indexes.set(list, (byMode = new Map()));
  let byKey = byMode.get(mode);
  if (!byKey) {
    const made = new Map<string, number>();
    list.forEach((t, i) => {
      const key = tableKey(t.schema, t.name, mode);
      // Two listed tables the server cannot tell apart in this mode (a list built under another mode): neither is guessed.
      made.set(key, made.has(key) ? -1 : i);
    });
    byMode.set(mode, (byKey = made));
  }
  const own = byKey.get(tableKey(opts.table.schema, opts.table.name, mode));
  return { byKey, own: own !== undefined && own >= 0 ? own : undefined };
}

/** The walk's state for opts.tables, or undefined without it. */
export function listedState(opts: GuardOptions, mode: LowerCaseTableNames): ListedState | undefined {
  if (!opts.tables) return undefined;
  return { index: indexOf(opts, opts.tables.list, mode), list: opts.tables.list, touched: new Set(), names: [], placeholder: false };
}

const label = (t: GuardTable): string => `${t.schema}.${t.name}`;

/**
 * After the walk: a name equal to a hidden column of any touched table is refused (MySQL column names ignore case);
 * a `?` is refused when a touched table has a policy (its values are bound among the markers) unless the statement is
 * a saved tool's with its own; a write or a locking read touches the tool's own table and nothing else.
 */
export function checkListed(st: WalkState, listed: ListedState, writes: boolean): void {
  const touched = [...listed.touched];
  const own = listed.index.own;
  const hidden = new Set<string>();
  for (const i of touched) for (const h of listed.list[i]!.hidden ?? []) hidden.add(h.toLowerCase());
  if (hidden.size > 0) {
    for (const n of listed.names)
      if (hidden.has(n.toLowerCase())) throw new Refusal(`column "${clip(n)}" is not available on this connector's tables`, 'hidden_column');
  }
  if (listed.placeholder && !st.opts.policy?.params && touched.some((i) => hasPolicy(i, listed))) {
    throw new Refusal('parameters (?) are not allowed on a table with column or row policies');
  }
  if (writes) {
    const other = touched.find((i) => i !== own);
    if (other !== undefined) {
      throw new Refusal(`a write works on the tool's own table alone; it also reads "${clip(label(listed.list[other]!))}"`, 'other_table');
    }
  }
}
