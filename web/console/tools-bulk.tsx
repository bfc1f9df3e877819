/**
 * Selecting many tools on the tools page and enabling or disabling them in one request (PATCH /api/mcp/{orgId}/tools,
 * docs/decisions/0304): all or nothing, one audit row.
 */
import { useState } from 'preact/hooks';
import { call, client, rest, type Tool } from './api.ts';
import type { Column } from './controls.tsx';

/** The ids of the selected tools, kept across reloads (a tool that disappeared simply matches no row). */
export function useSelection() {
  const [ids, setIds] = useState<ReadonlySet<string>>(new Set());
  return {
    ids,
    has: (id: string) => ids.has(id),
    toggle: (id: string, on: boolean) => {
      const next = new Set(ids);
      if (on) next.add(id);
      else next.delete(id);
      setIds(next);
    },
    set: (list: readonly string[]) => setIds(new Set(list)),
  };
}
type Selection = ReturnType<typeof useSelection>;

/** The checkbox column that selects a tool. */
export function selectColumn(selection: Selection): Column<Tool> {
  return {
    key: 'select',
    label: 'Select',
    value: (t) => (selection.has(t.id) ? 1 : 0),
    render: (t) => (
      <input type="checkbox" aria-label={`Select ${t.name}`} checked={selection.has(t.id)} onChange={(e) => selection.toggle(t.id, e.currentTarget.checked)} />
    ),
  };
}

/**
 * The bar above the table: how many are selected, select all listed or none, and enable or disable the selection.
 * `run` is the page's action (toasts, errors), `done` reloads the list.
 */
export function BulkBar({
  orgId,
  listed,
  selection,
  run,
  done,
}: {
  orgId: string;
  listed: Tool[];
  selection: Selection;
  run: (work: () => Promise<unknown>, message: string) => Promise<unknown>;
  done: () => void;
}) {
  const chosen = listed.filter((t) => selection.has(t.id)).map((t) => t.id);
  const apply = (enabled: boolean) =>
    run(
      () => call(rest.updateToolsBulk({ client, path: { orgId }, body: { ids: chosen, enabled } })),
      `${chosen.length} tools ${enabled ? 'enabled' : 'disabled'}`,
    ).then(done);
  return (
    <div class="buttons" data-testid="tools-bulk">
      <span class="hint" aria-live="polite">
        {chosen.length} selected
      </span>
      <button type="button" class="secondary" onClick={() => selection.set(listed.map((t) => t.id))}>
        Select all {listed.length}
      </button>
      <button type="button" class="secondary" disabled={chosen.length === 0} onClick={() => selection.set([])}>
        Select none
      </button>
      <button type="button" disabled={chosen.length === 0} onClick={() => apply(true)}>
        Enable selected
      </button>
      <button type="button" class="danger" disabled={chosen.length === 0} onClick={() => apply(false)}>
        Disable selected
      </button>
    </div>
  );
}
