/**
 * A SQL tool's column and row policy (docs/tool-policies.md), on the tool's page, for admins: hidden columns, masked
 * columns (fixed/hash/last_n) and a row filter, saved with updateToolMetadata `{policy}` and removed with `{policy: null}`.
 */
import { useState } from 'preact/hooks';
import { schemas } from '../../generated/contract-schemas.ts';
import { call, client, rest, type ColumnMask, type Tool, type ToolPolicy } from './api.ts';
import { schemaError, type FieldSchema } from './controls.tsx';
import { ErrorBox, useAction } from './kit.tsx';
import { fullPolicy } from './connector-types.ts';

const M = schemas.ColumnMask.properties as unknown as Record<string, FieldSchema>;
const KINDS = M.mask!.enum as readonly ColumnMask['mask'][];
const FILTER = schemas.ToolPolicy.properties.row_filter as unknown as FieldSchema;

interface MaskDraft {
  column: string;
  mask: ColumnMask['mask'];
  text: string;
  n: string;
}

const csv = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function maskOf(d: MaskDraft): ColumnMask {
  const m: ColumnMask = { column: d.column.trim(), mask: d.mask };
  if (d.mask === 'fixed' && d.text !== '') m.text = d.text;
  if (d.mask === 'last_n' && d.n.trim()) m.n = Number(d.n);
  return m;
}

function policyOf(hidden: string, masks: MaskDraft[], filter: string): ToolPolicy {
  const policy: ToolPolicy = {};
  if (csv(hidden).length) policy.hidden_columns = csv(hidden);
  if (masks.length) policy.masked_columns = masks.map(maskOf);
  if (filter.trim()) policy.row_filter = filter.trim();
  return policy;
}

function MaskRow({ i, d, set, remove }: { i: number; d: MaskDraft; set: (d: MaskDraft) => void; remove: () => void }) {
  const id = (f: string) => `pm-${i}-${f}`;
  const nProblem = d.mask === 'last_n' ? schemaError(M.n, d.n.trim()) : null;
  return (
    <fieldset class="card mask-row" data-testid={`mask-${i}`}>
      <legend>Masked column {i + 1}</legend>
      <div class="field inline">
        <label for={id('column')}>Column</label>
        <input
          id={id('column')}
          value={d.column}
          autoComplete="off"
          maxLength={M.column!.maxLength}
          onInput={(e) => set({ ...d, column: e.currentTarget.value })}
        />
      </div>
      <div class="field inline">
        <label for={id('mask')}>Mask</label>
        <select id={id('mask')} value={d.mask} onChange={(e) => set({ ...d, mask: e.currentTarget.value as MaskDraft['mask'] })}>
          {KINDS.map((k) => (
            <option value={k}>{k}</option>
          ))}
        </select>
      </div>
      {d.mask === 'fixed' && (
        <div class="field inline">
          <label for={id('text')}>Replacement (default ****)</label>
          <input id={id('text')} value={d.text} maxLength={M.text!.maxLength} onInput={(e) => set({ ...d, text: e.currentTarget.value })} />
        </div>
      )}
      {d.mask === 'last_n' && (
        <div class="field inline">
          <label for={id('n')}>Characters kept (default 4)</label>
          <input
            id={id('n')}
            value={d.n}
            inputMode="numeric"
            aria-invalid={nProblem ? true : undefined}
            aria-describedby={nProblem ? `${id('n')}-problem` : undefined}
            onInput={(e) => set({ ...d, n: e.currentTarget.value })}
          />
          {nProblem && (
            <span class="field-error" id={`${id('n')}-problem`}>
              {nProblem}
            </span>
          )}
        </div>
      )}
      <button type="button" class="secondary" onClick={remove} aria-label={`Remove masked column ${i + 1}`}>
        Remove
      </button>
    </fieldset>
  );
}

const draftsOf = (p: ToolPolicy | null | undefined): MaskDraft[] =>
  (p?.masked_columns ?? []).map((m) => ({ column: m.column, mask: m.mask, text: m.text ?? '', n: m.n === undefined ? '' : String(m.n) }));

/** A saved tool's page: it has no policy of its own; the policies of the tables its statement reads govern it. */
export function SavedPolicyNote() {
  return (
    <section aria-labelledby="policy-title">
      <h2 id="policy-title">Policy</h2>
      <p class="hint" data-testid="policy-scope">
        A saved tool has no policy of its own: its statement is governed by the policy of every table it reads, set on each table's tool. Saving a statement
        never widens what those policies allow.
      </p>
    </section>
  );
}

/** The tool page's "Policy" section; the REST refuses others than admins (403), so only admins see it. */
export function PolicySection({ tool, orgId, onDone }: { tool: Tool; orgId: string; onDone: () => void }) {
  const [hidden, setHidden] = useState((tool.policy?.hidden_columns ?? []).join(', '));
  const [masks, setMasks] = useState<MaskDraft[]>(draftsOf(tool.policy));
  const [filter, setFilter] = useState(tool.policy?.row_filter ?? '');
  const action = useAction();
  const filterProblem = schemaError(FILTER, filter.trim());
  // Some types apply hidden columns only (ToolPolicy's `x-toolgate-types` in openapi.yaml).
  const full = fullPolicy(tool.connector_type);
  const send = (policy: ToolPolicy | null, done: string) =>
    action.run(() => call(rest.updateToolMetadata({ client, path: { orgId, toolId: tool.id }, body: { policy } })), done).then((ok) => ok && onDone());
  const save = (e: Event) => {
    e.preventDefault();
    if (filterProblem || masks.some((m) => !m.column.trim())) return;
    send(policyOf(hidden, masks, filter), `Saved the policy of ${tool.name}`);
  };
  return (
    <section aria-labelledby="policy-title">
      <h2 id="policy-title">Policy</h2>
      <p class="hint" data-testid="policy-scope">
        This policy applies to this table in every tool and join: through this tool, in any statement of the connector that reads the table (joins, subqueries,
        CTEs) and in every saved tool.
      </p>
      <p class="hint">
        Hidden columns cannot be read; masked columns come back transformed; the row filter limits every read. A statement reading a table with a policy only
        reads.
      </p>
      <form class="card" aria-label={`Policy of ${tool.name}`} noValidate onSubmit={save}>
        <div class="field">
          <label for="p-hidden">Hidden columns (comma-separated)</label>
          <input id="p-hidden" value={hidden} autoComplete="off" onInput={(e) => setHidden(e.currentTarget.value)} />
        </div>
        {full && (
          <>
            {masks.map((m, i) => (
              <MaskRow
                key={i}
                i={i}
                d={m}
                set={(x) => setMasks(masks.map((y, j) => (j === i ? x : y)))}
                remove={() => setMasks(masks.filter((_, j) => j !== i))}
              />
            ))}
            <div class="field">
              <label for="p-filter">Row filter (SQL condition, e.g. region = :caller.region)</label>
              <textarea
                id="p-filter"
                value={filter}
                aria-invalid={filterProblem ? true : undefined}
                aria-describedby={filterProblem ? 'p-filter-problem' : undefined}
                onInput={(e) => setFilter(e.currentTarget.value)}
              />
              {filterProblem && (
                <span class="field-error" id="p-filter-problem">
                  {filterProblem}
                </span>
              )}
            </div>
          </>
        )}
        <ErrorBox error={action.error} />
        <div class="buttons">
          {full && (
            <button type="button" class="secondary" onClick={() => setMasks([...masks, { column: '', mask: 'fixed', text: '', n: '' }])}>
              Add masked column
            </button>
          )}
          <button type="submit" disabled={action.pending}>
            Save policy
          </button>
          {tool.policy && (
            <button type="button" class="danger" onClick={() => send(null, `Removed the policy of ${tool.name}`)}>
              Remove policy
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
