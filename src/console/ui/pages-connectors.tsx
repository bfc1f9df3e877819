/** The connectors page: list with status and reason, the type's own create/edit form, revalidate, archive. */
import { useState } from 'preact/hooks';
import { call, client, rest, type Connector, type ConnectorType } from './api.ts';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

/**
 * What the form shows for each type of the contract's ConnectorType enum: `satisfies` makes a type added to (or
 * dropped from) openapi.yaml fail the typecheck here, so the list cannot fall behind the contract. `schemas`: the
 * config's schema list; `writes`: the allow-write setting (the read-only types never write, decision 0116).
 */
const TYPE_FORMS = {
  postgresql: { schemas: true, writes: true },
  mysql: { schemas: false, writes: true },
  mongodb: { schemas: false, writes: false },
  mssql: { schemas: true, writes: false },
  oracle: { schemas: true, writes: false },
  mcp: { schemas: false, writes: false },
} as const satisfies Record<ConnectorType, { schemas: boolean; writes: boolean }>;
const TYPES = Object.keys(TYPE_FORMS) as ConnectorType[];

interface ConnectorDraft {
  name: string;
  type: ConnectorType;
  host: string;
  port: string;
  database: string;
  user: string;
  tls: 'disable' | 'require' | 'verify-full';
  schemas: string;
  url: string;
  headers: string;
  credential: string;
  allowWrite: boolean;
}

const emptyDraft = (): ConnectorDraft => ({
  name: '',
  type: 'postgresql',
  host: '',
  port: '',
  database: '',
  user: '',
  tls: 'require',
  schemas: '',
  url: '',
  headers: '',
  credential: '',
  allowWrite: false,
});

function draftOf(c: Connector): ConnectorDraft {
  const config = c.config as Record<string, unknown>;
  return {
    ...emptyDraft(),
    name: c.name,
    type: c.type,
    host: String(config.host ?? ''),
    port: config.port ? String(config.port) : '',
    database: String(config.database ?? ''),
    user: String(config.user ?? ''),
    tls: (config.tls as ConnectorDraft['tls']) ?? 'require',
    schemas: Array.isArray(config.schemas) ? config.schemas.join(', ') : '',
    url: String(config.url ?? ''),
    headers: config.headers ? Object.keys(config.headers as object).join(', ') : '',
    allowWrite: c.allow_write,
  };
}

function configOf(d: ConnectorDraft) {
  if (d.type === 'mcp') {
    const headers: Record<string, string> = {};
    for (const line of d.headers.split('\n')) {
      const at = line.indexOf(':');
      if (at > 0) headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    return { url: d.url, ...(Object.keys(headers).length ? { headers } : {}) };
  }
  const schemas = (TYPE_FORMS[d.type].schemas ? d.schemas : '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return { host: d.host, ...(d.port ? { port: Number(d.port) } : {}), database: d.database, user: d.user, tls: d.tls, ...(schemas.length ? { schemas } : {}) };
}

type Field = (key: keyof ConnectorDraft, label: string, props?: Record<string, unknown>) => preact.JSX.Element;

/** A SQL type's fields: where the database is, who signs in, TLS, schemas, and whether write tools are made. */
function SqlFields({ d, set, field, editing }: { d: ConnectorDraft; set: (patch: Partial<ConnectorDraft>) => void; field: Field; editing: boolean }) {
  return (
    <>
      {field('host', 'Host', { required: true })}
      {field('port', 'Port', { inputMode: 'numeric', pattern: '[0-9]*' })}
      {field('database', 'Database', { required: true })}
      {field('user', 'User', { required: true })}
      {field('credential', editing ? 'Password (leave empty to keep)' : 'Password', { type: 'password', autoComplete: 'off' })}
      <div class="field">
        <label for="c-tls">TLS</label>
        <select id="c-tls" value={d.tls} onChange={(e) => set({ tls: e.currentTarget.value as ConnectorDraft['tls'] })}>
          <option value="disable">disable</option>
          <option value="require">require</option>
          <option value="verify-full">verify-full</option>
        </select>
      </div>
      {TYPE_FORMS[d.type].schemas && field('schemas', 'Schemas (comma-separated, optional)')}
      {TYPE_FORMS[d.type].writes && (
        <div class="field check">
          <input id="c-write" type="checkbox" checked={d.allowWrite} onChange={(e) => set({ allowWrite: e.currentTarget.checked })} />
          <label for="c-write">Allow write tools (insert/update)</label>
        </div>
      )}
    </>
  );
}

/** The type's own form: database fields for SQL types, URL and headers for an MCP server. */
function ConnectorForm({
  initial,
  editing,
  onSave,
  onCancel,
}: {
  initial: ConnectorDraft;
  editing: boolean;
  onSave: (d: ConnectorDraft) => Promise<unknown>;
  onCancel: () => void;
}) {
  const [d, setD] = useState(initial);
  const action = useAction();
  const set = (patch: Partial<ConnectorDraft>) => setD({ ...d, ...patch });
  const field = (key: keyof ConnectorDraft, label: string, props: Record<string, unknown> = {}) => (
    <div class="field">
      <label for={`c-${key}`}>{label}</label>
      <input id={`c-${key}`} value={d[key] as string} onInput={(e) => set({ [key]: e.currentTarget.value })} {...props} />
    </div>
  );
  return (
    <form
      class="card"
      aria-label={editing ? 'Edit connector' : 'New connector'}
      onSubmit={(e) => {
        e.preventDefault();
        action.run(() => onSave(d));
      }}
    >
      {field('name', 'Name', { required: true })}
      <div class="field">
        <label for="c-type">Type</label>
        <select id="c-type" value={d.type} disabled={editing} onChange={(e) => set({ type: e.currentTarget.value as ConnectorType })}>
          {TYPES.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </div>
      {d.type === 'mcp' ? (
        <>
          {field('url', 'Server URL (https)', { required: true, type: 'url' })}
          <div class="field">
            <label for="c-headers">Extra headers (one "Name: value" per line)</label>
            <textarea id="c-headers" value={d.headers} onInput={(e) => set({ headers: e.currentTarget.value })} />
          </div>
          {field('credential', editing ? 'Bearer token (leave empty to keep)' : 'Bearer token (optional)', { type: 'password', autoComplete: 'off' })}
        </>
      ) : (
        <SqlFields d={d} set={set} field={field} editing={editing} />
      )}
      <ErrorBox error={action.error} />
      <div class="buttons">
        <button type="submit" disabled={action.pending}>
          {action.pending ? 'Saving…' : editing ? 'Save changes' : 'Create connector'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** A connector's status, its reason, and the upstream tools it does not serve (with why). */
function ConnectorStatus({ c }: { c: Connector }) {
  return (
    <td>
      <span class={`status status-${c.status}`} data-testid="connector-status">
        {c.status}
      </span>
      {c.status_reason && <p class="reason">{c.status_reason}</p>}
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
    </td>
  );
}

type OnConnector = (c: Connector) => unknown;

function ConnectorsTable({
  connectors,
  onRevalidate,
  onEdit,
  onArchive,
}: {
  connectors: Connector[];
  onRevalidate: OnConnector;
  onEdit: OnConnector;
  onArchive: OnConnector;
}) {
  return (
    <table>
      <caption class="sr-only">Connectors</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Type</th>
          <th scope="col">Status</th>
          <th scope="col">Updated</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {connectors.map((c) => (
          <tr key={c.id} data-testid={`connector-${c.name}`}>
            <td>{c.name}</td>
            <td>{c.type}</td>
            <ConnectorStatus c={c} />
            <td>{when(c.updated_at)}</td>
            <td class="buttons">
              <button type="button" class="secondary" onClick={() => onRevalidate(c)}>
                Revalidate
              </button>
              <button type="button" class="secondary" onClick={() => onEdit(c)}>
                Edit
              </button>
              <button type="button" class="danger" onClick={() => onArchive(c)}>
                Archive
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ConnectorsPage() {
  const list = useLoad(() => call(rest.listConnectors({ client })), [], 3000);
  const [form, setForm] = useState<{ editing: Connector | null } | null>(null);
  const action = useAction();
  const connectors = list.data?.connectors ?? [];
  const save = async (d: ConnectorDraft) => {
    const common = {
      name: d.name,
      config: configOf(d) as never,
      ...(d.credential ? { credential: d.credential } : {}),
      ...(d.type !== 'mcp' ? { allow_write: d.allowWrite } : {}),
    };
    if (form?.editing) await call(rest.updateConnector({ client, path: { connectorId: form.editing.id }, body: common }));
    else await call(rest.createConnector({ client, body: { ...common, type: d.type } }));
    setForm(null);
    list.reload();
  };
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
          editing={!!form.editing}
          onSave={save}
          onCancel={() => setForm(null)}
        />
      )}
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && connectors.length === 0 && <p>No connectors yet.</p>}
      {connectors.length > 0 && (
        <ConnectorsTable
          connectors={connectors}
          onRevalidate={(c) => action.run(() => call(rest.revalidateConnector({ client, path: { connectorId: c.id } }))).then(list.reload)}
          onEdit={(c) => setForm({ editing: c })}
          onArchive={(c) =>
            confirm(`Archive the connector ${c.name}? Its tools disappear from the MCP server.`) &&
            action.run(() => call(rest.archiveConnector({ client, path: { connectorId: c.id } }))).then(list.reload)
          }
        />
      )}
    </Page>
  );
}
