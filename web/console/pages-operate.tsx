/** Pages for running the org: the approvals inbox and an approval's page, the audit log, API keys and OAuth clients. */
import { useState } from 'preact/hooks';
import { CredentialDetail, lastUse } from './pages-credential.tsx';
import { call, client, rest, type ApiKey, type Approval, type Connector, type OAuthClient, type OrgDirectory } from './api.ts';
import { DataTable, Empty, type Column } from './controls.tsx';
import { loadDirectory, Requester, useDirectory } from './directory.tsx';
import { ErrorBox, Loading, Page, SecretOnce, useAction, useLoad, when, type PageProps } from './kit.tsx';
import { CallsTable } from './pages-build.tsx';

const ORDER: Record<string, number> = { pending: 0, executing: 1 };

function ApprovalCard({
  a,
  dir,
  result,
  onDecide,
  pending,
  open,
}: {
  a: Approval;
  dir: OrgDirectory | null;
  result?: string;
  onDecide?: (approve: boolean) => void;
  pending: boolean;
  open?: boolean;
}) {
  return (
    <li class={`card approval-${a.status}`} data-testid={`approval-${a.id}`}>
      <h2>
        {open ? a.tool_name : <a href={`#/approvals/${a.id}`}>{a.tool_name}</a>} <span class={`status status-${a.status}`}>{a.status}</span>
      </h2>
      <p>
        Requested by <Requester dir={dir} value={a.requested_by} /> at {when(a.created_at)}; expires {when(a.expires_at)}
        {a.decided_by && (
          <>
            ; decided by <Requester dir={dir} value={a.decided_by} /> at {when(a.decided_at)}
          </>
        )}
      </p>
      <h3>Arguments</h3>
      <pre>{JSON.stringify(a.arguments, null, 2)}</pre>
      {a.reason && <p class="reason">{a.reason}</p>}
      {a.status === 'pending' && onDecide && (
        <div class="buttons">
          <button type="button" disabled={pending} onClick={() => onDecide(true)}>
            Approve and run
          </button>
          <button type="button" class="danger" disabled={pending} onClick={() => onDecide(false)}>
            Reject
          </button>
        </div>
      )}
      {result && (
        <>
          <h3>Result</h3>
          <pre data-testid="approval-result">{result}</pre>
        </>
      )}
    </li>
  );
}

export function ApprovalsPage({ id }: PageProps) {
  // Refreshes while open: a held call shows up without a reload.
  const list = useLoad(() => call(rest.listApprovals({ client, query: { limit: 100 } })), [], 3000);
  const [results, setResults] = useState<Record<string, string>>({});
  const dir = useDirectory();
  const action = useAction();
  const trail = useLoad(() => (id ? call(rest.listAuditEvents({ client, query: { target_id: id, limit: 50 } })) : Promise.resolve(null)), [id, list.data]);
  const decide = (a: Approval, approve: boolean) =>
    action
      .run(
        async () => {
          const fn = approve ? rest.approveApproval : rest.rejectApproval;
          const decision = await call(fn({ client, path: { approvalId: a.id } }));
          setResults((r) => ({ ...r, [a.id]: JSON.stringify(decision, null, 2) }));
        },
        approve ? `Approved ${a.tool_name}` : `Rejected ${a.tool_name}`,
      )
      .then(list.reload);
  const approvals = [...(list.data?.approvals ?? [])]
    .filter((a) => !id || a.id === id)
    .sort((a, b) => (ORDER[a.status] ?? 2) - (ORDER[b.status] ?? 2) || b.created_at.localeCompare(a.created_at));
  return (
    <Page title={id ? 'Approval' : 'Approvals'} actions={id && <a href="#/approvals">All approvals</a>}>
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && approvals.length === 0 && (
        <Empty>
          {id
            ? 'No such approval (the list holds the latest 100).'
            : 'No approvals. Calls to tools that require approval appear here: switch "Requires approval" on a tool in '}
          {!id && <a href="#/tools">Tools</a>}
        </Empty>
      )}
      <ul class="approvals">
        {approvals.map((a) => (
          <ApprovalCard key={a.id} a={a} dir={dir} result={results[a.id]} pending={action.pending} onDecide={(ok) => decide(a, ok)} open={!!id} />
        ))}
      </ul>
      {id && trail.data && (
        <>
          <h2>Decision trail</h2>
          <CallsTable events={trail.data.events} caption="Decision trail" />
        </>
      )}
    </Page>
  );
}

type Revoke = (id: string, name: string) => unknown;

function ApiKeysTable({ keys, connectors, onRevoke }: { keys: ApiKey[]; connectors: Connector[]; onRevoke: Revoke }) {
  const name = (id: string) => connectors.find((c) => c.id === id)?.name ?? `${id.slice(0, 8)}…`;
  const columns: Column<ApiKey>[] = [
    {
      key: 'name',
      label: 'Name',
      value: (k) => k.name,
      render: (k) => (
        <a href={`#/credentials/${k.id}`} title={k.id}>
          {k.name}
        </a>
      ),
    },
    { key: 'prefix', label: 'Prefix', value: (k) => k.prefix, render: (k) => <code>{k.prefix}…</code> },
    {
      key: 'scope',
      label: 'Connectors',
      value: (k) => (k.connector_ids ? k.connector_ids.map(name).join(', ') : 'all'),
      render: (k) => (k.connector_ids ? k.connector_ids.map(name).join(', ') : 'all'),
    },
    { key: 'created', label: 'Created', value: (k) => k.created_at, render: (k) => when(k.created_at) },
    { key: 'used', label: 'Last used', value: (k) => k.last_used_at ?? '', render: (k) => lastUse(k.last_used_at) },
    {
      key: 'state',
      label: 'State',
      value: (k) => (k.revoked_at ? 'revoked' : 'active'),
      render: (k) => (k.revoked_at ? `revoked ${when(k.revoked_at)}` : 'active'),
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (k) =>
        !k.revoked_at && (
          <button type="button" class="danger" onClick={() => onRevoke(k.id, k.name)} aria-label={`Revoke ${k.name}`}>
            Revoke
          </button>
        ),
    },
  ];
  return (
    <DataTable
      caption="API keys"
      columns={columns}
      rows={keys}
      rowKey={(k) => k.id}
      rowTestId={(k) => `key-${k.name}`}
      rowClass={(k) => (k.revoked_at ? 'row-disabled' : undefined)}
    />
  );
}

function OAuthClientsTable({ clients, connectors, onRevoke }: { clients: OAuthClient[]; connectors: Connector[]; onRevoke: Revoke }) {
  const scopeText = (s: string) => (s.startsWith('mcp:call:') ? `mcp:call on ${connectors.find((c) => `mcp:call:${c.id}` === s)?.name ?? s.slice(9, 17)}` : s);
  const columns: Column<OAuthClient>[] = [
    { key: 'name', label: 'Name', value: (c) => c.name, render: (c) => <a href={`#/credentials/${c.client_id}`}>{c.name}</a> },
    { key: 'client', label: 'Client id', value: (c) => c.client_id, render: (c) => <code>{c.client_id}</code> },
    { key: 'scopes', label: 'Scopes', value: (c) => c.scopes.map(scopeText).join(', ') },
    { key: 'used', label: 'Last used', value: (c) => c.last_used_at ?? '', render: (c) => lastUse(c.last_used_at) },
    {
      key: 'state',
      label: 'State',
      value: (c) => (c.revoked_at ? 'revoked' : 'active'),
      render: (c) => (c.revoked_at ? `revoked ${when(c.revoked_at)}` : 'active'),
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (c) =>
        !c.revoked_at && (
          <button type="button" class="danger" onClick={() => onRevoke(c.client_id, c.name)} aria-label={`Revoke ${c.name}`}>
            Revoke
          </button>
        ),
    },
  ];
  return (
    <DataTable
      caption="OAuth clients"
      columns={columns}
      rows={clients}
      rowKey={(c) => c.id}
      rowTestId={(c) => `client-${c.name}`}
      rowClass={(c) => (c.revoked_at ? 'row-disabled' : undefined)}
    />
  );
}

/** Connector checkboxes: none ticked means every connector. */
function ConnectorScope({
  id,
  connectors,
  picked,
  onChange,
  legend,
}: {
  id: string;
  connectors: Connector[];
  picked: string[];
  onChange: (ids: string[]) => void;
  legend: string;
}) {
  if (connectors.length === 0) return null;
  return (
    <fieldset>
      <legend>{legend}</legend>
      {connectors.map((c) => (
        <span class="check" key={c.id}>
          <input
            id={`${id}-${c.id}`}
            type="checkbox"
            checked={picked.includes(c.id)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...picked, c.id] : picked.filter((x) => x !== c.id))}
          />
          <label for={`${id}-${c.id}`}>{c.name}</label>
        </span>
      ))}
    </fieldset>
  );
}

function NewKeyForm({ connectors, disabled, onCreated }: { connectors: Connector[]; disabled: boolean; onCreated: (secret: string) => void }) {
  const [name, setName] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createApiKey({ client, body: { name: name.trim(), ...(picked.length ? { connector_ids: picked } : {}) } }));
      onCreated(created.key);
      setName('');
      setPicked([]);
    }, `Created the API key ${name.trim()}`);
  };
  return (
    <form class="card" aria-label="New API key" onSubmit={submit}>
      <div class="field">
        <label for="key-name">Name of the new key</label>
        <input id="key-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <ConnectorScope id="key-conn" connectors={connectors} picked={picked} onChange={setPicked} legend="Limit to connectors (none ticked: all)" />
      <button type="submit" disabled={action.pending || disabled}>
        Create API key
      </button>
      {disabled && <span class="hint"> Store the secret above first.</span>}
    </form>
  );
}

function NewClientForm({
  connectors,
  disabled,
  onCreated,
}: {
  connectors: Connector[];
  disabled: boolean;
  onCreated: (secret: string, clientId: string) => void;
}) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState({ manage: false, mcp: true });
  const [picked, setPicked] = useState<string[]>([]);
  const action = useAction();
  const wanted = [...(scopes.mcp ? (picked.length ? picked.map((id) => `mcp:call:${id}`) : ['mcp:call']) : []), ...(scopes.manage ? ['org:manage'] : [])];
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createOAuthClient({ client, body: { name: name.trim(), scopes: wanted } }));
      onCreated(created.client_secret, created.client_id);
      setName('');
    }, `Created the OAuth client ${name.trim()}`);
  };
  return (
    <form class="card" aria-label="New OAuth client" onSubmit={submit}>
      <div class="field">
        <label for="client-name">Name of the new client</label>
        <input id="client-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <span class="check">
        <input id="scope-mcp" type="checkbox" checked={scopes.mcp} onChange={(e) => setScopes({ ...scopes, mcp: e.currentTarget.checked })} />
        <label for="scope-mcp">mcp:call (call tools)</label>
      </span>
      <span class="check">
        <input id="scope-manage" type="checkbox" checked={scopes.manage} onChange={(e) => setScopes({ ...scopes, manage: e.currentTarget.checked })} />
        <label for="scope-manage">org:manage (the REST interface and this console)</label>
      </span>
      {scopes.mcp && (
        <ConnectorScope
          id="client-conn"
          connectors={connectors}
          picked={picked}
          onChange={setPicked}
          legend="Tools of these connectors only (none ticked: all)"
        />
      )}
      {wanted.length === 0 && <p class="field-error">Pick at least one scope.</p>}
      <button type="submit" disabled={action.pending || disabled || wanted.length === 0}>
        Create OAuth client
      </button>
    </form>
  );
}

export function CredentialsPage({ id }: PageProps) {
  return id ? <CredentialDetail id={id} /> : <CredentialsList />;
}

function CredentialsList() {
  const keys = useLoad(() => call(rest.listApiKeys({ client })));
  const clients = useLoad(() => call(rest.listOAuthClients({ client })));
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const [secret, setSecret] = useState<{ label: string; value: string; extra?: string } | null>(null);
  const action = useAction();
  const all = connectors.data?.connectors ?? [];
  const revokeKey = (id: string, name: string) =>
    confirm(`Revoke the API key ${name}? Calls with it fail at once.`) &&
    action.run(() => call(rest.revokeApiKey({ client, path: { keyId: id } })), `Revoked ${name}`).then(keys.reload);
  const revokeClient = (id: string, name: string) =>
    confirm(`Revoke the OAuth client ${name}? Its tokens stop working at once.`) &&
    action.run(() => call(rest.revokeOAuthClient({ client, path: { clientId: id } })), `Revoked ${name}`).then(clients.reload);
  return (
    <Page title="API keys & OAuth clients">
      {secret && <SecretOnce label={secret.label} value={secret.value} extra={secret.extra} onDone={() => setSecret(null)} />}
      <ErrorBox error={action.error ?? keys.error ?? clients.error} />
      <h2>API keys</h2>
      <p class="hint">
        Agents send a key in the <code>X-API-Key</code> header. <a href="#/connect">Connect an agent</a> shows ready-made configurations.
      </p>
      <NewKeyForm connectors={all} disabled={!!secret} onCreated={(value) => (setSecret({ label: 'API key', value }), keys.reload(), loadDirectory(true))} />
      <Loading loading={keys.loading && !keys.data} />
      {keys.data && keys.data.api_keys.length === 0 && <Empty>No API keys. Create one above for an agent.</Empty>}
      {keys.data && keys.data.api_keys.length > 0 && <ApiKeysTable keys={keys.data.api_keys} connectors={all} onRevoke={revokeKey} />}
      <h2>OAuth clients</h2>
      <NewClientForm
        connectors={all}
        disabled={!!secret}
        onCreated={(value, clientId) => (setSecret({ label: 'Client secret', value, extra: `Client id: ${clientId}` }), clients.reload(), loadDirectory(true))}
      />
      {clients.data && <OAuthClientsTable clients={clients.data.oauth_clients} connectors={all} onRevoke={revokeClient} />}
    </Page>
  );
}
