/**
 * Connectors: the list, a connector's page (status history, its tools), and the create/edit form, whose fields are
 * drawn from the type's config schema in openapi.yaml (DatabaseConfig for the five database types, with the
 * `x-toolgate-types` of a field that only some take, and McpConfig), with a connection test before saving.
 */
import { useState } from 'preact/hooks';
import { CONNECTOR_TYPES, configSchemaOf, isDatabaseType, takesLayout, typeWrites } from './connector-types.ts';
import { call, client, rest, type ConnectionTest, type Connector, type ConnectorType } from './api.ts';
import { CallsTable } from './pages-build.tsx';
import { DataTable, Empty, schemaError, Switch, toast, type Column, type FieldSchema } from './controls.tsx';
import { loadDirectory } from './directory.tsx';
import { SavedTools } from './pages-saved-tools.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when, type PageProps } from './kit.tsx';
import { emptyScope, ScopeFacts, ScopeFields, scopeBody, scopeOf, scopeProblem, type ScopeDraft } from './connector-scope.tsx';

interface PropertySchema extends FieldSchema {
  description?: string;
  items?: FieldSchema;
  'x-toolgate-types'?: readonly string[];
}
type ConfigSchema = { required: readonly string[]; properties: Record<string, PropertySchema> };

const configSchema = (type: ConnectorType) => configSchemaOf(type) as unknown as ConfigSchema;

/** The fields of a type, in the schema's order, without those meant for other types. */
const fieldsOf = (type: ConnectorType) =>
  Object.entries(configSchema(type).properties).filter(([, p]) => !p['x-toolgate-types'] || p['x-toolgate-types'].includes(type));

const LABELS: Record<string, string> = {
  host: 'Host',
  port: 'Port',
  database: 'Database',
  user: 'User',
  tls: 'TLS',
  schemas: 'Schemas (comma-separated, optional)',
  auth_source: 'Auth source (the database holding the user)',
  url: 'Server URL (https)',
  headers: 'Extra headers (one "Name: value" per line)',
};
/** What the form preselects for TLS: the API's default too (decisions 0139, 0280), what a managed cloud database expects. */
const TLS_DEFAULT = 'require';

interface Draft {
  name: string;
  type: ConnectorType;
  fields: Record<string, string>;
  credential: string;
  allowWrite: boolean;
  /** Description and table patterns (connector-scope.tsx). */
  scope: ScopeDraft;
}

const emptyDraft = (): Draft => ({ name: '', type: CONNECTOR_TYPES[0]!, fields: { tls: TLS_DEFAULT }, credential: '', allowWrite: false, scope: emptyScope() });

function draftOf(c: Connector): Draft {
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(c.config as Record<string, unknown>)) {
    if (Array.isArray(value)) fields[key] = value.join(', ');
    else if (value && typeof value === 'object')
      fields[key] = Object.entries(value)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n');
    else fields[key] = String(value);
  }
  return { name: c.name, type: c.type, fields, credential: '', allowWrite: c.allow_write, scope: scopeOf(c) };
}

const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The config the schema describes, from the typed text; also every field's problem (empty when none). */
function configOf(d: Draft): { config: Record<string, unknown>; problems: Record<string, string> } {
  const config: Record<string, unknown> = {};
  const problems: Record<string, string> = {};
  const { required } = configSchema(d.type);
  for (const [key, p] of fieldsOf(d.type)) {
    const text = (d.fields[key] ?? '').trim();
    if (!text) {
      if (required.includes(key)) problems[key] = 'Required.';
      continue;
    }
    if (p.type === 'array') {
      const items = list(text);
      const bad = items.map((i) => schemaError(p.items, i)).find(Boolean);
      if (bad) problems[key] = bad;
      config[key] = items;
    } else if (p.type === 'object') {
      const headers: Record<string, string> = {};
      for (const line of text.split('\n')) {
        const at = line.indexOf(':');
        if (at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
        else if (line.trim()) problems[key] = `Write "Name: value" (line "${line.trim()}").`;
      }
      config[key] = headers;
    } else {
      const bad = schemaError(p, text);
      if (bad) problems[key] = bad;
      config[key] = p.type === 'integer' ? Number(text) : text;
    }
  }
  return { config, problems };
}

function ConfigField({ name, p, d, set, problem }: { name: string; p: PropertySchema; d: Draft; set: (v: string) => void; problem?: string }) {
  const id = `c-${name}`;
  const value = d.fields[name] ?? '';
  const described = problem ? `${id}-problem` : p.description ? `${id}-hint` : undefined;
  const common = { id, 'aria-invalid': problem ? true : undefined, 'aria-describedby': described };
  return (
    <div class="field">
      <label for={id}>{LABELS[name] ?? name}</label>
      {p.enum ? (
        <select {...common} value={value} onChange={(e) => set(e.currentTarget.value)}>
          {p.enum.map((v) => (
            <option value={String(v)}>{String(v)}</option>
          ))}
        </select>
      ) : p.type === 'object' ? (
        <textarea {...common} value={value} onInput={(e) => set(e.currentTarget.value)} />
      ) : (
        <input
          {...common}
          value={value}
          inputMode={p.type === 'integer' ? 'numeric' : undefined}
          onInput={(e) => set(e.currentTarget.value)}
          autoComplete="off"
        />
      )}
      {problem ? (
        <span class="field-error" id={`${id}-problem`}>
          {problem}
        </span>
      ) : (
        p.description && (
          <span class="hint" id={`${id}-hint`}>
            {p.description}
          </span>
        )
      )}
    </div>
  );
}

function TestResult({ result }: { result: ConnectionTest | null }) {
  if (!result) return null;
  return (
    <p class={result.ok ? 'ok-box' : 'error'} role="status" data-testid="connection-test">
      {result.ok ? `Connected: ${result.tools} tools would be served.` : `Connection failed: ${result.reason}`}
    </p>
  );
}

/** The name and the type (fixed once saved). */
function NameAndType({ d, setD, touched, editing }: { d: Draft; setD: (d: Draft) => void; touched: boolean; editing: boolean }) {
  return (
    <>
      <div class="field">
        <label for="c-name">Name</label>
        <input
          id="c-name"
          required
          value={d.name}
          onInput={(e) => setD({ ...d, name: e.currentTarget.value })}
          aria-invalid={touched && !d.name.trim() ? true : undefined}
        />
        {touched && !d.name.trim() && <span class="field-error">Required.</span>}
      </div>
      <div class="field">
        <label for="c-type">Type</label>
        <select id="c-type" value={d.type} disabled={editing} onChange={(e) => setD({ ...d, type: e.currentTarget.value as ConnectorType })}>
          {CONNECTOR_TYPES.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </div>
    </>
  );
}

/** The type's own form, drawn from its config schema; "Test connection" tries it without saving. */
function ConnectorForm({
  initial,
  editing,
  onSave,
  onCancel,
}: {
  initial: Draft;
  editing: Connector | null;
  onSave: (d: Draft, config: Record<string, unknown>) => Promise<unknown>;
  onCancel: () => void;
}) {
  const [d, setD] = useState(initial);
  const [touched, setTouched] = useState(false);
  const [tested, setTested] = useState<ConnectionTest | null>(null);
  const action = useAction();
  const testing = useAction();
  const { config, problems } = configOf(d);
  const shown = touched ? problems : Object.fromEntries(Object.entries(problems).filter(([k]) => k !== 'host' && (d.fields[k] ?? '') !== ''));
  const scopeOk = !isDatabaseType(d.type) || (scopeProblem(d.scope.include) === null && scopeProblem(d.scope.exclude) === null);
  const valid = Object.keys(problems).length === 0 && d.name.trim() !== '' && scopeOk;
  const test = () =>
    testing.run(async () => {
      setTested(null);
      const body = {
        type: d.type,
        config: config as never,
        ...(d.credential ? { credential: d.credential } : {}),
        ...(editing ? { connector_id: editing.id } : {}),
      };
      const result = await call(rest.testConnector({ client, body }));
      setTested(result);
      toast(result.ok ? 'ok' : 'error', result.ok ? `Connection works (${result.tools} tools)` : 'Connection failed');
    });
  return (
    <form
      class="card"
      aria-label={editing ? 'Edit connector' : 'New connector'}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (valid) action.run(() => onSave(d, config), editing ? `Saved ${d.name}` : `Created ${d.name}; validating`);
      }}
    >
      <NameAndType d={d} setD={setD} touched={touched} editing={!!editing} />
      <ScopeFields d={d.scope} set={(scope) => setD({ ...d, scope })} database={isDatabaseType(d.type)} />
      {fieldsOf(d.type).map(([name, p]) => (
        <ConfigField key={`${d.type}-${name}`} name={name} p={p} d={d} problem={shown[name]} set={(v) => setD({ ...d, fields: { ...d.fields, [name]: v } })} />
      ))}
      <div class="field">
        <label for="c-credential">
          {isDatabaseType(d.type) ? 'Password' : 'Bearer token'}
          {editing ? ' (leave empty to keep)' : isDatabaseType(d.type) ? '' : ' (optional)'}
        </label>
        <input id="c-credential" type="password" autoComplete="off" value={d.credential} onInput={(e) => setD({ ...d, credential: e.currentTarget.value })} />
      </div>
      {typeWrites(d.type) && (
        <div class="field check">
          <input id="c-write" type="checkbox" checked={d.allowWrite} onChange={(e) => setD({ ...d, allowWrite: e.currentTarget.checked })} />
          <label for="c-write">Allow write tools (insert/update)</label>
        </div>
      )}
      <TestResult result={tested} />
      <ErrorBox error={action.error ?? testing.error} />
      <div class="buttons">
        <button type="submit" disabled={action.pending}>
          {action.pending ? 'Saving…' : editing ? 'Save changes' : 'Create connector'}
        </button>
        <button type="button" class="secondary" disabled={testing.pending || Object.keys(problems).length > 0} onClick={test}>
          {testing.pending ? 'Testing…' : 'Test connection'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A connector's status, its reason, whether its source answers now, and the upstream tools it does not serve (with why). */
function Status({ c }: { c: Connector }) {
  return (
    <>
      <span class={`status status-${c.status}`} data-testid="connector-status">
        {c.status}
      </span>{' '}
      {c.health !== 'unknown' && (
        <span
          class={`status health-${c.health}`}
          data-testid="connector-health"
          title={c.health_changed_at ? `since ${new Date(c.health_changed_at).toLocaleString()}` : undefined}
        >
          {c.health === 'healthy' ? 'reachable' : 'unreachable'}
        </span>
      )}
      {c.status_reason && <p class="reason">{c.status_reason}</p>}
      {c.health === 'unhealthy' && c.health_reason && c.health_reason !== c.status_reason && (
        <p class="reason" data-testid="connector-health-reason">
          {c.health_reason}
        </p>
      )}
      {c.skipped_tools.length > 0 && (
        <details class="reason" data-testid="connector-skipped">
          <summary>{c.skipped_tools.length} upstream tools not served</summary>
          <ul>
            {c.skipped_tools.map((s, i) => (
              <li key={i}>
                <code>{s.name}</code>: {s.reason}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
}

function useConnectorActions(reload: () => void) {
  const action = useAction();
  return {
    action,
    revalidate: (c: Connector) =>
      action.run(() => call(rest.revalidateConnector({ client, path: { connectorId: c.id } })), `Validating ${c.name}`).then(reload),
    archive: (c: Connector) =>
      confirm(`Archive the connector ${c.name}? Its tools disappear from the MCP server.`) &&
      action.run(() => call(rest.archiveConnector({ client, path: { connectorId: c.id } })), `Archived ${c.name}`).then(reload),
    setWrite: (c: Connector, on: boolean) =>
      action
        .run(
          () => call(rest.updateConnector({ client, path: { connectorId: c.id }, body: { allow_write: on } })),
          `${c.name}: writes ${on ? 'allowed' : 'off'}`,
        )
        .then(reload),
    setFreeSql: (c: Connector, on: boolean) =>
      action
        .run(
          () => call(rest.updateConnector({ client, path: { connectorId: c.id }, body: { free_sql: on } })),
          `${c.name}: free SQL tools ${on ? 'served' : 'off (saved tools only)'}`,
        )
        .then(reload),
    setSingle: (c: Connector, on: boolean) =>
      action
        .run(
          () => call(rest.updateConnector({ client, path: { connectorId: c.id }, body: { tool_layout: on ? 'single' : 'per_table' } })),
          `${c.name}: ${on ? 'one SQL tool for the whole connector' : 'one SQL tool per table'}`,
        )
        .then(reload),
  };
}

function ConnectorsTable({ connectors, onEdit, reload }: { connectors: Connector[]; onEdit: (c: Connector) => void; reload: () => void }) {
  const { action, revalidate, archive } = useConnectorActions(reload);
  const columns: Column<Connector>[] = [
    { key: 'name', label: 'Name', value: (c) => c.name, render: (c) => <a href={`#/connectors/${c.id}`}>{c.name}</a> },
    { key: 'type', label: 'Type', value: (c) => c.type },
    { key: 'status', label: 'Status', value: (c) => c.status, render: (c) => <Status c={c} /> },
    { key: 'updated', label: 'Updated', value: (c) => c.updated_at, render: (c) => when(c.updated_at) },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (c) => (
        <div class="buttons">
          <button type="button" class="secondary" onClick={() => revalidate(c)} aria-label={`Revalidate ${c.name}`}>
            Revalidate
          </button>
          <button type="button" class="secondary" onClick={() => onEdit(c)} aria-label={`Edit ${c.name}`}>
            Edit
          </button>
          <button type="button" class="danger" onClick={() => archive(c)} aria-label={`Archive ${c.name}`}>
            Archive
          </button>
        </div>
      ),
    },
  ];
  return (
    <>
      <ErrorBox error={action.error} />
      <DataTable
        caption="Connectors"
        columns={columns}
        rows={connectors}
        rowKey={(c) => c.id}
        rowTestId={(c) => `connector-${c.name}`}
        rowClass={(c) => (c.status === 'failed' || c.health === 'unhealthy' ? 'row-failed' : undefined)}
      />
    </>
  );
}

async function saveConnector(editing: Connector | null, d: Draft, config: Record<string, unknown>) {
  const common = {
    name: d.name.trim(),
    config: config as never,
    ...(d.credential ? { credential: d.credential } : {}),
    ...(typeWrites(d.type) ? { allow_write: d.allowWrite } : {}),
    ...scopeBody(d.scope, isDatabaseType(d.type), editing),
  };
  if (editing) await call(rest.updateConnector({ client, path: { connectorId: editing.id }, body: common }));
  else await call(rest.createConnector({ client, body: { ...common, type: d.type } }));
  loadDirectory(true);
}

function ConnectorList() {
  const listed = useLoad(() => call(rest.listConnectors({ client })), [], 3000);
  const [form, setForm] = useState<{ editing: Connector | null } | null>(null);
  const connectors = listed.data?.connectors ?? [];
  return (
    <Page
      title="Connectors"
      actions={
        !form && (
          <button type="button" onClick={() => setForm({ editing: null })}>
            New connector
          </button>
        )
      }
    >
      {form && (
        <ConnectorForm
          key={form.editing?.id ?? 'new'}
          initial={form.editing ? draftOf(form.editing) : emptyDraft()}
          editing={form.editing}
          onSave={(d, config) => saveConnector(form.editing, d, config).then(() => (setForm(null), listed.reload()))}
          onCancel={() => setForm(null)}
        />
      )}
      <Loading loading={listed.loading && !listed.data} />
      <ErrorBox error={listed.error} />
      {listed.data && connectors.length === 0 && !form && (
        <Empty>
          No connectors yet. A connector makes a database's tables, or another MCP server's tools, into tools agents can call.{' '}
          <button type="button" onClick={() => setForm({ editing: null })}>
            Add the first connector
          </button>
        </Empty>
      )}
      {connectors.length > 0 && <ConnectorsTable connectors={connectors} onEdit={(c) => setForm({ editing: c })} reload={listed.reload} />}
    </Page>
  );
}

/** A connector's facts, with its write and free-SQL switches. */
function ConnectorFacts({
  c,
  setWrite,
  setFreeSql,
  setSingle,
}: {
  c: Connector;
  setWrite: (c: Connector, on: boolean) => unknown;
  setFreeSql: (c: Connector, on: boolean) => unknown;
  setSingle: (c: Connector, on: boolean) => unknown;
}) {
  return (
    <dl class="facts">
      <dt>Type</dt>
      <dd>{c.type}</dd>
      <dt>Status</dt>
      <dd>
        <Status c={c} />
      </dd>
      <dt>Settings</dt>
      <dd>
        <code>{JSON.stringify(c.config)}</code>
      </dd>
      <dt>Credential</dt>
      <dd>{c.has_credential ? 'stored (write-only)' : 'none'}</dd>
      <ScopeFacts c={c} />
      {typeWrites(c.type) && (
        <>
          <dt>Write tools</dt>
          <dd>
            <Switch label={`Allow write tools on ${c.name}`} on={c.allow_write} onChange={(on) => setWrite(c, on)} />
          </dd>
        </>
      )}
      {isDatabaseType(c.type) && (
        <>
          <dt>Free SQL tools</dt>
          <dd>
            <Switch
              label={`Serve a free-SQL tool per table of ${c.name}`}
              hint="Off: agents get only this connector's saved tools"
              on={c.free_sql}
              onChange={(on) => setFreeSql(c, on)}
            />
          </dd>
        </>
      )}
      {takesLayout(c.type) && (
        <>
          <dt>Tool layout</dt>
          <dd>
            <Switch
              label={`One SQL tool for the whole of ${c.name}`}
              hint="On: agents get one query tool for every table (each table's tool still governs it: enabled, policy, approval); off: one tool per table"
              on={c.tool_layout === 'single'}
              onChange={(on) => setSingle(c, on)}
            />
          </dd>
        </>
      )}
      <dt>Created</dt>
      <dd>{when(c.created_at)}</dd>
    </dl>
  );
}

function ConnectorDetail({ session, id }: PageProps & { id: string }) {
  const one = useLoad(() => call(rest.getConnector({ client, path: { connectorId: id } })), [id], 3000);
  const tools = useLoad(() => call(rest.listTools({ client, path: { orgId: session.org_id }, query: { connector_id: id } })), [id, one.data?.status]);
  const history = useLoad(() => call(rest.listAuditEvents({ client, query: { target_id: id, limit: 50 } })), [id, one.data?.updated_at]);
  const [editing, setEditing] = useState(false);
  const c = one.data;
  const { action, revalidate, archive, setWrite, setFreeSql, setSingle } = useConnectorActions(one.reload);
  return (
    <Page title={c ? `Connector ${c.name}` : 'Connector'} actions={<a href="#/connectors">All connectors</a>}>
      <Loading loading={one.loading && !c} />
      <ErrorBox error={one.error ?? action.error} />
      {c && (
        <>
          <ConnectorFacts c={c} setWrite={setWrite} setFreeSql={setFreeSql} setSingle={setSingle} />
          <div class="buttons">
            <button type="button" class="secondary" onClick={() => revalidate(c)}>
              Revalidate
            </button>
            <button type="button" class="secondary" onClick={() => setEditing(!editing)}>
              Edit
            </button>
            <button type="button" class="danger" onClick={() => archive(c) && (location.hash = '#/connectors')}>
              Archive
            </button>
          </div>
          {editing && (
            <ConnectorForm
              initial={draftOf(c)}
              editing={c}
              onSave={(d, config) => saveConnector(c, d, config).then(() => (setEditing(false), one.reload()))}
              onCancel={() => setEditing(false)}
            />
          )}
          <h2>Tools</h2>
          {tools.data && tools.data.tools.length === 0 && <Empty>No tools: they appear when the connector is active.</Empty>}
          <ul class="tool-links" data-testid="connector-tools">
            {(tools.data?.tools ?? []).map((t) => (
              <li key={t.id} class={t.enabled ? undefined : 'row-disabled'}>
                <a href={`#/tools/${t.id}`}>{t.name}</a> {t.enabled ? '' : '(disabled)'}
                {t.requires_approval ? ' (held for approval)' : ''}
              </li>
            ))}
          </ul>
          {isDatabaseType(c.type) && <SavedTools connector={c} />}
          <h2>Status history</h2>
          {history.data && <CallsTable events={history.data.events} caption="Status history" />}
        </>
      )}
    </Page>
  );
}

export function ConnectorsPage(props: PageProps) {
  return props.id ? <ConnectorDetail {...props} id={props.id} /> : <ConnectorList />;
}
