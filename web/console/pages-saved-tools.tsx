/**
 * A database connector's saved-statement tools (issue 30): the list, the form that defines one (statement and a
 * parameter editor drawn from the contract's SavedToolParameter), a new version on edit, delete, and the versions.
 */
import { useState } from 'preact/hooks';
import { schemas } from '../../generated/contract-schemas.ts';
import { call, client, rest, type Connector, type SavedTool, type SavedToolParameter } from './api.ts';
import { DataTable, Empty, SchemaInput, schemaError, type Column, type FieldSchema } from './controls.tsx';
import { ErrorBox, useAction, useLoad, when } from './kit.tsx';

const R = schemas.SavedToolRequest.properties;
const P = schemas.SavedToolParameter.properties as unknown as Record<string, FieldSchema & { enum?: readonly string[] }>;
const TYPES = P.type!.enum as readonly SavedToolParameter['type'][];
const SCALARS = TYPES.filter((t) => t !== 'array');

/** One parameter row as typed: every constraint is text until the form is sent. */
interface ParamDraft {
  name: string;
  type: SavedToolParameter['type'];
  description: string;
  fallback: string;
  min: string;
  max: string;
  pattern: string;
  values: string;
  itemType: SavedToolParameter['type'];
  maxItems: string;
}
const emptyParam = (): ParamDraft => ({
  name: '',
  type: 'string',
  description: '',
  fallback: '',
  min: '',
  max: '',
  pattern: '',
  values: '',
  itemType: 'string',
  maxItems: '',
});
const numeric = (t: string) => t === 'integer' || t === 'number';
const csv = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function draftOfParam(p: SavedToolParameter): ParamDraft {
  const text = (v: unknown) => (v === undefined ? '' : String(v));
  return {
    name: p.name,
    type: p.type,
    description: p.description,
    fallback: p.default === undefined ? '' : typeof p.default === 'string' ? p.default : JSON.stringify(p.default),
    min: text(numeric(p.type) ? p.minimum : p.minLength),
    max: text(numeric(p.type) ? p.maximum : p.maxLength),
    pattern: p.pattern ?? '',
    values: (p.values ?? p.items?.values ?? []).join(', '),
    itemType: p.items?.type ?? 'string',
    maxItems: text(p.maxItems),
  };
}

/** The value of a default as typed, for the parameter's type (array: JSON or comma-separated). */
function defaultOf(d: ParamDraft): unknown {
  const t = d.fallback.trim();
  const scalar = (type: string, v: string) => (numeric(type) ? Number(v) : type === 'boolean' ? v === 'true' : v);
  if (d.type !== 'array') return scalar(d.type, t);
  if (t.startsWith('[')) return JSON.parse(t);
  return csv(t).map((v) => scalar(d.itemType, v));
}

/** The constraints of a scalar type from the row's text. */
function bounds(type: string, d: ParamDraft): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const num = (v: string) => (v.trim() === '' ? undefined : Number(v));
  if (numeric(type)) Object.assign(out, { minimum: num(d.min), maximum: num(d.max) });
  if (type === 'string') Object.assign(out, { minLength: num(d.min), maxLength: num(d.max), pattern: d.pattern.trim() || undefined });
  if (type === 'enum') out.values = csv(d.values);
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

function paramOf(d: ParamDraft): SavedToolParameter {
  const p: Record<string, unknown> = { name: d.name.trim(), type: d.type, description: d.description.trim() };
  if (d.type === 'array') {
    p.items = { type: d.itemType, ...bounds(d.itemType, d) };
    if (d.maxItems.trim()) p.maxItems = Number(d.maxItems);
  } else Object.assign(p, bounds(d.type, d));
  if (d.fallback.trim()) p.default = defaultOf(d);
  return p as unknown as SavedToolParameter;
}

/** Why a row cannot be sent, by field (the contract's name pattern; a default that does not parse). */
function paramProblems(d: ParamDraft): Record<string, string> {
  const problems: Record<string, string> = {};
  if (!d.name.trim()) problems.name = 'Required.';
  else {
    const bad = schemaError(P.name, d.name.trim());
    if (bad) problems.name = bad;
  }
  if (!d.description.trim()) problems.description = 'Required.';
  if (d.fallback.trim() && d.type === 'array' && d.fallback.trim().startsWith('['))
    try {
      JSON.parse(d.fallback);
    } catch {
      problems.fallback = 'Not valid JSON.';
    }
  return problems;
}

function ParamRow({ i, d, set, remove, touched }: { i: number; d: ParamDraft; set: (d: ParamDraft) => void; remove: () => void; touched: boolean }) {
  const id = (f: string) => `sp-${i}-${f}`;
  const problems = touched ? paramProblems(d) : {};
  const kind = d.type === 'array' ? d.itemType : d.type;
  const text = (f: keyof ParamDraft, label: string, hint?: string) => (
    <div class="field inline">
      <label for={id(f)}>{label}</label>
      <input
        id={id(f)}
        value={d[f]}
        autoComplete="off"
        aria-invalid={problems[f] ? true : undefined}
        aria-describedby={problems[f] ? `${id(f)}-problem` : undefined}
        title={hint}
        onInput={(e) => set({ ...d, [f]: e.currentTarget.value })}
      />
      {problems[f] && (
        <span class="field-error" id={`${id(f)}-problem`}>
          {problems[f]}
        </span>
      )}
    </div>
  );
  const typeSelect = (f: 'type' | 'itemType', label: string, options: readonly string[]) => (
    <div class="field inline">
      <label for={id(f)}>{label}</label>
      <select id={id(f)} value={d[f]} onChange={(e) => set({ ...d, [f]: e.currentTarget.value as ParamDraft['type'] })}>
        {options.map((t) => (
          <option value={t}>{t}</option>
        ))}
      </select>
    </div>
  );
  return (
    <fieldset class="card param-row" data-testid={`param-${i}`}>
      <legend>Parameter {i + 1}</legend>
      {text('name', 'Parameter name')}
      {typeSelect('type', 'Type', TYPES)}
      {d.type === 'array' && typeSelect('itemType', 'Element type', SCALARS)}
      {text('description', 'Parameter description')}
      {text('fallback', 'Default (optional)', 'Without a default the parameter is required')}
      {(numeric(kind) || kind === 'string') && text('min', numeric(kind) ? 'Minimum' : 'Min length')}
      {(numeric(kind) || kind === 'string') && text('max', numeric(kind) ? 'Maximum' : 'Max length')}
      {kind === 'string' && text('pattern', 'Pattern (regular expression)')}
      {kind === 'enum' && text('values', 'Values (comma-separated)')}
      {d.type === 'array' && text('maxItems', 'At most (elements)')}
      <button type="button" class="secondary" onClick={remove} aria-label={`Remove parameter ${i + 1}`}>
        Remove
      </button>
    </fieldset>
  );
}

interface ToolDraft {
  name: string;
  description: string;
  statement: string;
  params: ParamDraft[];
}

function SavedToolForm({ connector, editing, onDone }: { connector: Connector; editing: SavedTool | null; onDone: () => void }) {
  const [d, setD] = useState<ToolDraft>(
    editing
      ? { name: editing.name, description: editing.description, statement: editing.statement, params: editing.parameters.map(draftOfParam) }
      : { name: '', description: '', statement: '', params: [] },
  );
  const [touched, setTouched] = useState(false);
  const action = useAction();
  const valid = d.name.trim() && d.description.trim() && d.statement.trim() && d.params.every((p) => Object.keys(paramProblems(p)).length === 0);
  const setParam = (i: number, p: ParamDraft) => setD({ ...d, params: d.params.map((x, j) => (j === i ? p : x)) });
  const submit = (e: Event) => {
    e.preventDefault();
    setTouched(true);
    if (!valid || schemaError(schemas.ToolName, d.name.trim())) return;
    const body = { name: d.name.trim(), description: d.description.trim(), statement: d.statement.trim(), parameters: d.params.map(paramOf) };
    const path = { connectorId: connector.id };
    action
      .run(
        () => call(editing ? rest.updateSavedTool({ client, path: { ...path, toolId: editing.id }, body }) : rest.createSavedTool({ client, path, body })),
        editing ? `Saved ${body.name} (new version)` : `Created ${body.name}`,
      )
      .then((ok) => ok && onDone());
  };
  return (
    <form class="card" aria-label={editing ? `Edit saved tool ${editing.name}` : 'New saved tool'} noValidate onSubmit={submit}>
      <SchemaInput id="st-name" label="Tool name" schema={schemas.ToolName} value={d.name} onInput={(name) => setD({ ...d, name })} required />
      {touched && !d.name.trim() && <span class="field-error">Required.</span>}
      <div class="field">
        <label for="st-desc">Description</label>
        <textarea id="st-desc" maxLength={R.description.maxLength} value={d.description} onInput={(e) => setD({ ...d, description: e.currentTarget.value })} />
        {touched && !d.description.trim() && <span class="field-error">Required.</span>}
      </div>
      <div class="field">
        <label for="st-statement">Statement (with :name placeholders)</label>
        <textarea id="st-statement" maxLength={R.statement.maxLength} value={d.statement} onInput={(e) => setD({ ...d, statement: e.currentTarget.value })} />
        {touched && !d.statement.trim() && <span class="field-error">Required.</span>}
      </div>
      {d.params.map((p, i) => (
        <ParamRow key={i} i={i} d={p} touched={touched} set={(x) => setParam(i, x)} remove={() => setD({ ...d, params: d.params.filter((_, j) => j !== i) })} />
      ))}
      <ErrorBox error={action.error} />
      <div class="buttons">
        <button
          type="button"
          class="secondary"
          onClick={() => setD({ ...d, params: [...d.params, emptyParam()] })}
          disabled={d.params.length >= R.parameters.maxItems}
        >
          Add parameter
        </button>
        <button type="submit" disabled={action.pending}>
          {action.pending ? 'Saving…' : editing ? 'Save as new version' : 'Create saved tool'}
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Versions({ connector, tool }: { connector: Connector; tool: SavedTool }) {
  const versions = useLoad(() => call(rest.listSavedToolVersions({ client, path: { connectorId: connector.id, toolId: tool.id } })), [tool.id, tool.version]);
  const columns: Column<NonNullable<typeof versions.data>['versions'][number]>[] = [
    { key: 'version', label: 'Version', value: (v) => v.version },
    { key: 'statement', label: 'Statement', value: (v) => v.statement, render: (v) => <code>{v.statement}</code> },
    { key: 'params', label: 'Parameters', value: (v) => v.parameters.map((p) => `${p.name}: ${p.type}`).join(', ') },
    { key: 'actor', label: 'Saved by', value: (v) => v.actor },
    { key: 'at', label: 'Saved', value: (v) => v.created_at, render: (v) => when(v.created_at) },
  ];
  return (
    <>
      <ErrorBox error={versions.error} />
      {versions.data && <DataTable caption={`Versions of ${tool.name}`} columns={columns} rows={versions.data.versions} rowKey={(v) => String(v.version)} />}
    </>
  );
}

function savedColumns(act: (t: SavedTool, what: 'edit' | 'versions' | 'delete') => void): Column<SavedTool>[] {
  return [
    { key: 'name', label: 'Name', value: (t) => t.name, render: (t) => <a href={`#/tools/${t.id}`}>{t.name}</a> },
    { key: 'table', label: 'Table', value: (t) => `${t.table.schema}.${t.table.name}` },
    { key: 'version', label: 'Version', value: (t) => t.version },
    { key: 'writes', label: 'Writes', value: (t) => (t.writes ? 'yes' : 'no') },
    { key: 'enabled', label: 'Enabled', value: (t) => (t.enabled ? 'yes' : 'no') },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (t) => (
        <div class="buttons">
          <button type="button" class="secondary" onClick={() => act(t, 'edit')} aria-label={`Edit ${t.name}`}>
            Edit
          </button>
          <button type="button" class="secondary" onClick={() => act(t, 'versions')} aria-label={`Versions of ${t.name}`}>
            Versions
          </button>
          <button type="button" class="danger" onClick={() => act(t, 'delete')} aria-label={`Delete ${t.name}`}>
            Delete
          </button>
        </div>
      ),
    },
  ];
}

/** The connector page's "Saved tools" section (database connectors). */
export function SavedTools({ connector }: { connector: Connector }) {
  const listed = useLoad(() => call(rest.listSavedTools({ client, path: { connectorId: connector.id } })), [connector.id]);
  const [form, setForm] = useState<{ editing: SavedTool | null } | null>(null);
  const [shown, setShown] = useState<SavedTool | null>(null);
  const action = useAction();
  const tools = listed.data?.saved_tools ?? [];
  const act = (t: SavedTool, what: 'edit' | 'versions' | 'delete') => {
    if (what === 'edit') setForm({ editing: t });
    else if (what === 'versions') setShown(shown?.id === t.id ? null : t);
    else if (confirm(`Delete the saved tool ${t.name}? Its versions stay in the store.`))
      action.run(() => call(rest.deleteSavedTool({ client, path: { connectorId: connector.id, toolId: t.id } })), `Deleted ${t.name}`).then(listed.reload);
  };
  return (
    <section aria-labelledby="saved-title">
      <div class="page-header">
        <h2 id="saved-title">Saved tools</h2>
        {!form && (
          <button type="button" onClick={() => setForm({ editing: null })}>
            New saved tool
          </button>
        )}
      </div>
      {form && <SavedToolForm key={form.editing?.id ?? 'new'} connector={connector} editing={form.editing} onDone={() => (setForm(null), listed.reload())} />}
      <ErrorBox error={listed.error ?? action.error} />
      {listed.data && tools.length === 0 && !form && (
        <Empty>No saved tools. A saved tool is a fixed statement with typed parameters, which agents call by name.</Empty>
      )}
      {tools.length > 0 && (
        <DataTable caption="Saved tools" columns={savedColumns(act)} rows={tools} rowKey={(t) => t.id} rowTestId={(t) => `saved-${t.name}`} />
      )}
      {shown && <Versions connector={connector} tool={shown} />}
    </section>
  );
}
