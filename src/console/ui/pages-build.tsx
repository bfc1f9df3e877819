/** Pages for building the org's MCP server: overview, connectors, tools. */
import { useState } from 'preact/hooks';
import { call, client, rest, type Connector, type ConnectorType, type SessionInfo, type Tool } from './api.ts';
import { can, CopyButton, ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

export function OverviewPage({ session }: { session: SessionInfo }) {
  const status = useLoad(() => call(rest.getProvisioningStatus({ client, path: { orgId: session.org_id } })));
  const org = useLoad(() => call(rest.getOrg({ client })));
  const limits = useLoad(() => (can(session, 'finance') ? call(rest.getLimits({ client })) : Promise.resolve(null)));
  const provision = useAction();
  const s = status.data;
  const l = limits.data;
  return (
    <Page title="Overview">
      <Loading loading={status.loading && !s} />
      <ErrorBox error={status.error ?? org.error ?? limits.error} />
      {s && (
        <dl class="facts">
          <dt>Org</dt>
          <dd>{org.data ? `${org.data.name} (${org.data.slug}), plan ${org.data.plan}` : '…'}</dd>
          <dt>Provisioning</dt>
          <dd data-testid="provision-status">
            {s.status === 'provisioned' ? 'Provisioned' : 'Not provisioned'}
            {s.status !== 'provisioned' && (
              <button type="button" disabled={provision.pending} onClick={() => provision.run(() => call(rest.provisionOrg({ client, path: { orgId: session.org_id } }))).then(status.reload)}>
                Provision the MCP server
              </button>
            )}
          </dd>
          <dt>MCP endpoint</dt>
          <dd>
            <code data-testid="mcp-endpoint">{s.endpoint}</code> <CopyButton text={s.endpoint} label="Copy endpoint URL" />
          </dd>
          <dt>Tools</dt>
          <dd data-testid="tool-count">{s.toolCount}</dd>
          <dt>Usage this month</dt>
          <dd>{l ? `${l.tool_calls_used} of ${l.monthly_tool_calls ?? 'unlimited'} tool calls` : org.data ? `quota ${org.data.monthly_tool_calls ?? 'unlimited'} tool calls (usage: finance role)` : '…'}</dd>
          <dt>Burst limit</dt>
          <dd>{l?.burst_limit_per_second ?? org.data?.burst_limit_per_second ?? '…'} calls per second</dd>
          {l && (
            <>
              <dt>Connectors</dt>
              <dd>
                {l.connectors_used} of {l.connectors_max ?? 'unlimited'}
              </dd>
            </>
          )}
        </dl>
      )}
      <ErrorBox error={provision.error} />
    </Page>
  );
}

const TYPES: ConnectorType[] = ['postgresql', 'mysql', 'mcp'];

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

const emptyDraft = (): ConnectorDraft => ({ name: '', type: 'postgresql', host: '', port: '', database: '', user: '', tls: 'require', schemas: '', url: '', headers: '', credential: '', allowWrite: false });

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
  const schemas = d.schemas.split(',').map((s) => s.trim()).filter(Boolean);
  return { host: d.host, ...(d.port ? { port: Number(d.port) } : {}), database: d.database, user: d.user, tls: d.tls, ...(schemas.length ? { schemas } : {}) };
}

/** The type's own form: database fields for SQL types, URL and headers for an MCP server. */
function ConnectorForm({ initial, editing, onSave, onCancel }: { initial: ConnectorDraft; editing: boolean; onSave: (d: ConnectorDraft) => Promise<unknown>; onCancel: () => void }) {
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
          {d.type === 'postgresql' && field('schemas', 'Schemas (comma-separated, optional)')}
          <div class="field check">
            <input id="c-write" type="checkbox" checked={d.allowWrite} onChange={(e) => set({ allowWrite: e.currentTarget.checked })} />
            <label for="c-write">Allow write tools (insert/update)</label>
          </div>
        </>
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

export function ConnectorsPage() {
  const list = useLoad(() => call(rest.listConnectors({ client })), [], 3000);
  const [form, setForm] = useState<{ editing: Connector | null } | null>(null);
  const action = useAction();
  const connectors = list.data?.connectors ?? [];
  const save = async (d: ConnectorDraft) => {
    const common = { name: d.name, config: configOf(d) as never, ...(d.credential ? { credential: d.credential } : {}), ...(d.type !== 'mcp' ? { allow_write: d.allowWrite } : {}) };
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
      {form && <ConnectorForm key={form.editing?.id ?? 'new'} initial={form.editing ? draftOf(form.editing) : emptyDraft()} editing={!!form.editing} onSave={save} onCancel={() => setForm(null)} />}
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && connectors.length === 0 && <p>No connectors yet.</p>}
      {connectors.length > 0 && (
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
                <td>
                  <span class={`status status-${c.status}`} data-testid="connector-status">
                    {c.status}
                  </span>
                  {c.status_reason && <p class="reason">{c.status_reason}</p>}
                </td>
                <td>{when(c.updated_at)}</td>
                <td class="buttons">
                  <button type="button" class="secondary" onClick={() => action.run(() => call(rest.revalidateConnector({ client, path: { connectorId: c.id } }))).then(list.reload)}>
                    Revalidate
                  </button>
                  <button type="button" class="secondary" onClick={() => setForm({ editing: c })}>
                    Edit
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => confirm(`Archive the connector ${c.name}? Its tools disappear from the MCP server.`) && action.run(() => call(rest.archiveConnector({ client, path: { connectorId: c.id } }))).then(list.reload)}
                  >
                    Archive
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}

function ToolEditor({ tool, orgId, onDone }: { tool: Tool; orgId: string; onDone: () => void }) {
  const [name, setName] = useState(tool.tool_name_override ?? '');
  const [description, setDescription] = useState(tool.tool_description_override ?? '');
  const [emails, setEmails] = useState(tool.approval_emails.join(', '));
  const [ttl, setTtl] = useState(String(tool.approval_ttl_seconds));
  const action = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    const body = {
      tool_name_override: name.trim() || null,
      tool_description_override: description.trim() || null,
      approval_emails: emails.split(',').map((s) => s.trim()).filter(Boolean),
      approval_ttl_seconds: Number(ttl),
    };
    action.run(() => call(rest.updateToolMetadata({ client, path: { orgId, toolId: tool.id }, body }))).then((ok) => ok && onDone());
  };
  return (
    <form class="card" aria-label={`Edit ${tool.name}`} onSubmit={save}>
      <div class="field">
        <label for="t-name">Name override (empty: {tool.tool_name})</label>
        <input id="t-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="t-desc">Description override</label>
        <textarea id="t-desc" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="t-emails">Approvers (e-mail addresses, comma-separated)</label>
        <input id="t-emails" value={emails} onInput={(e) => setEmails(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="t-ttl">Approval expires after (seconds)</label>
        <input id="t-ttl" inputMode="numeric" value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} />
      </div>
      <ErrorBox error={action.error} />
      <div class="buttons">
        <button type="submit" disabled={action.pending}>
          Save
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function ToolsPage({ session }: { session: SessionInfo }) {
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const [connectorId, setConnectorId] = useState('');
  const tools = useLoad(() => call(rest.listTools({ client, path: { orgId: session.org_id }, query: connectorId ? { connector_id: connectorId } : {} })), [connectorId]);
  const [editing, setEditing] = useState<string | null>(null);
  const action = useAction();
  const patch = (tool: Tool, body: Record<string, unknown>) => action.run(() => call(rest.updateToolMetadata({ client, path: { orgId: session.org_id, toolId: tool.id }, body }))).then(tools.reload);
  const list = tools.data?.tools ?? [];
  return (
    <Page title="Tools">
      <div class="field inline">
        <label for="tool-filter">Connector</label>
        <select id="tool-filter" value={connectorId} onChange={(e) => setConnectorId(e.currentTarget.value)}>
          <option value="">All connectors</option>
          {(connectors.data?.connectors ?? []).map((c) => (
            <option value={c.id}>{c.name}</option>
          ))}
        </select>
      </div>
      <Loading loading={tools.loading && !tools.data} />
      <ErrorBox error={tools.error ?? action.error} />
      {tools.data && list.length === 0 && <p>No tools. Tools appear when a connector becomes active.</p>}
      {list.length > 0 && (
        <table>
          <caption class="sr-only">Tools</caption>
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Connector</th>
              <th scope="col">Enabled</th>
              <th scope="col">Approval</th>
              <th scope="col">Read-only</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <>
                <tr key={t.id} data-testid={`tool-${t.tool_name}`}>
                  <td>
                    <strong>{t.name}</strong>
                    <p class="reason">{t.description}</p>
                  </td>
                  <td>{t.connector_name}</td>
                  <td>
                    <button type="button" class="secondary" aria-pressed={t.enabled} onClick={() => patch(t, { enabled: !t.enabled })}>
                      {t.enabled ? 'Enabled: disable' : 'Disabled: enable'}
                    </button>
                  </td>
                  <td>
                    <button type="button" class="secondary" aria-pressed={t.requires_approval} onClick={() => patch(t, { requires_approval: !t.requires_approval })}>
                      {t.requires_approval ? 'Held for approval: stop' : 'Not held: require approval'}
                    </button>
                  </td>
                  <td>
                    <button type="button" class="secondary" aria-pressed={t.read_only} onClick={() => patch(t, { read_only: !t.read_only })}>
                      {t.read_only ? 'Read-only' : 'Writable'}
                    </button>
                  </td>
                  <td>
                    <button type="button" class="secondary" onClick={() => setEditing(editing === t.id ? null : t.id)}>
                      Edit
                    </button>
                  </td>
                </tr>
                {editing === t.id && (
                  <tr>
                    <td colSpan={6}>
                      <ToolEditor tool={t} orgId={session.org_id} onDone={() => (setEditing(null), tools.reload())} />
                    </td>
                  </tr>
                )}
              </>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
