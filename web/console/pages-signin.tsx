/**
 * "Signed-in agents": the people who signed in through MCP clients (grants) with revoke, the registered and
 * pre-registered clients with revoke and a form to pre-register one, and the org's switch for dynamic registration.
 * A client is named by what can be checked (the host of its client_id URL, or the registration) before its own name,
 * which is only its claim.
 */
import { useState } from 'preact/hooks';
import { call, client, rest, type Connector, type McpClient, type McpGrant } from './api.ts';
import { DataTable, Empty, Named, SchemaInput, Switch, type Column } from './controls.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

const KIND: Record<McpGrant['client_kind'], string> = {
  metadata_document: 'metadata document',
  registered: 'registered itself',
  preregistered: 'pre-registered',
};

/** The checkable part of a client's name: the host of a metadata-document URL, else the registration's id. */
function clientHost(clientId: string, kind: McpGrant['client_kind']): string {
  if (kind !== 'metadata_document') return KIND[kind];
  try {
    return new URL(clientId).host;
  } catch {
    return clientId;
  }
}

function ClientCell({ g }: { g: McpGrant }) {
  return (
    <span>
      <Named name={clientHost(g.client_id, g.client_kind)} id={g.client_id} />
      <br />
      <span class="hint">{g.client_name ? `calls itself “${g.client_name}”` : 'gave no name'}</span>
    </span>
  );
}

/** Scopes with connector names instead of ids: `mcp:call` is every connector. */
function scopeText(scopes: string[], connectors: Connector[]): string {
  return scopes
    .map((s) => {
      if (s === 'mcp:call') return 'all connectors';
      const id = s.startsWith('mcp:call:') ? s.slice('mcp:call:'.length) : null;
      return id ? (connectors.find((c) => c.id === id)?.name ?? `a removed connector (${id.slice(0, 8)})`) : s;
    })
    .join(', ');
}

const grantState = (g: McpGrant) => (g.revoked_at ? `revoked (${g.revoked_reason ?? 'revoked'})` : 'active');

function GrantsTable({ grants, connectors, onRevoke }: { grants: McpGrant[]; connectors: Connector[]; onRevoke: (g: McpGrant) => void }) {
  const person = (g: McpGrant) => g.email ?? g.subject;
  const columns: Column<McpGrant>[] = [
    { key: 'person', label: 'Person', value: person, render: (g) => <Named name={person(g)} id={g.subject} /> },
    { key: 'client', label: 'Client', value: (g) => `${clientHost(g.client_id, g.client_kind)} ${g.client_name ?? ''}`, render: (g) => <ClientCell g={g} /> },
    { key: 'scopes', label: 'May call', value: (g) => scopeText(g.scopes, connectors) },
    { key: 'roles', label: 'Roles at sign-in', value: (g) => g.roles.join(', ') || '—' },
    { key: 'created', label: 'Signed in', value: (g) => g.created_at, render: (g) => when(g.created_at) },
    { key: 'used', label: 'Last refresh', value: (g) => g.last_used_at ?? '', render: (g) => when(g.last_used_at) },
    {
      key: 'state',
      label: 'State',
      value: grantState,
      render: (g) => <span class={`status status-${g.revoked_at ? 'revoked' : 'active'}`}>{grantState(g)}</span>,
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (g) =>
        g.revoked_at ? (
          '—'
        ) : (
          <button
            type="button"
            class="danger"
            onClick={() => onRevoke(g)}
            aria-label={`Revoke the sign-in of ${person(g)} in ${clientHost(g.client_id, g.client_kind)}`}
          >
            Revoke
          </button>
        ),
    },
  ];
  return (
    <DataTable
      caption="Sign-ins"
      columns={columns}
      rows={grants}
      rowKey={(g) => g.id}
      rowTestId={(g) => `grant-${g.id}`}
      rowClass={(g) => (g.revoked_at ? 'row-disabled' : undefined)}
    />
  );
}

function ClientsTable({ clients, onRevoke }: { clients: McpClient[]; onRevoke: (c: McpClient) => void }) {
  const name = (c: McpClient) => c.client_name ?? 'no name';
  const columns: Column<McpClient>[] = [
    { key: 'name', label: 'Name (its claim)', value: name, render: (c) => <Named name={name(c)} id={c.client_id} /> },
    { key: 'kind', label: 'How', value: (c) => KIND[c.kind] },
    { key: 'redirects', label: 'Redirect URIs', value: (c) => c.redirect_uris.join(' '), render: (c) => c.redirect_uris.map((u) => <code key={u}>{u} </code>) },
    { key: 'created', label: 'Created', value: (c) => c.created_at, render: (c) => when(c.created_at) },
    {
      key: 'state',
      label: 'State',
      value: (c) => (c.revoked_at ? 'revoked' : 'active'),
      render: (c) => <span class={`status status-${c.revoked_at ? 'revoked' : 'active'}`}>{c.revoked_at ? 'revoked' : 'active'}</span>,
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (c) =>
        c.revoked_at ? (
          '—'
        ) : (
          <button type="button" class="danger" onClick={() => onRevoke(c)} aria-label={`Revoke the client ${name(c)}`}>
            Revoke
          </button>
        ),
    },
  ];
  return (
    <DataTable
      caption="Registered clients"
      columns={columns}
      rows={clients}
      rowKey={(c) => c.client_id}
      rowTestId={(c) => `mcp-client-${c.client_id}`}
      rowClass={(c) => (c.revoked_at ? 'row-disabled' : undefined)}
    />
  );
}

/** As the contract's createMcpClient body has it. */
const NAME_SCHEMA = { type: 'string', minLength: 1, maxLength: 100 };

function PreregisterForm({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [uris, setUris] = useState('');
  const action = useAction();
  const list = uris
    .split(/\s+/)
    .map((u) => u.trim())
    .filter(Boolean);
  const submit = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createMcpClient({ client, body: { client_name: name.trim(), redirect_uris: list } }));
      setName('');
      setUris('');
      onCreated();
      return created;
    }, `Pre-registered ${name.trim()}: give its client id to the agent`);
  };
  return (
    <form class="card" aria-label="Pre-register a client" onSubmit={submit}>
      <SchemaInput id="mcp-client-name" label="Client name" schema={NAME_SCHEMA} value={name} onInput={setName} required />
      <div class="field">
        <label for="mcp-client-redirects">Redirect URIs (one a line; https, or http on localhost)</label>
        <textarea id="mcp-client-redirects" required rows={2} value={uris} onInput={(e) => setUris(e.currentTarget.value)} />
      </div>
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.pending || !name.trim() || list.length === 0}>
        Pre-register
      </button>
    </form>
  );
}

export function SignedInAgentsPage() {
  const grants = useLoad(() => call(rest.listMcpGrants({ client })));
  const clients = useLoad(() => call(rest.listMcpClients({ client })));
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const action = useAction();
  const revokeGrant = (g: McpGrant) =>
    confirm(`Revoke the sign-in of ${g.email ?? g.subject}? The agent's tokens stop working at the next request.`) &&
    action.run(() => call(rest.revokeMcpGrant({ client, path: { grantId: g.id } })), `Revoked the sign-in of ${g.email ?? g.subject}`).then(grants.reload);
  const revokeClient = (c: McpClient) =>
    confirm(`Revoke the client ${c.client_name ?? c.client_id}? Every sign-in through it ends too.`) &&
    action
      .run(() => call(rest.revokeMcpClient({ client, path: { clientId: c.client_id } })), `Revoked the client ${c.client_name ?? c.client_id}`)
      .then(() => (clients.reload(), grants.reload()));
  const setRegistration = (on: boolean) =>
    action
      .run(() => call(rest.setMcpSignInSettings({ client, body: { registration_enabled: on } })), `Dynamic registration ${on ? 'opened' : 'closed'}`)
      .then(clients.reload);
  const rows = grants.data?.grants ?? [];
  const registered = clients.data?.clients ?? [];
  return (
    <Page title="Signed-in agents">
      <p class="hint">
        People sign in here from MCP clients that take only the URL (<a href="#/connect">Connect an agent</a>). A client is named by the host of its metadata
        document or by its registration; the name it gives itself is its claim.
      </p>
      <ErrorBox error={action.error ?? grants.error ?? clients.error} />
      <h2>Sign-ins</h2>
      <Loading loading={grants.loading && !grants.data} />
      {grants.data && rows.length === 0 && <Empty>No one has signed in from an MCP client yet. Sign-ins appear here once a person allows a client.</Empty>}
      {rows.length > 0 && <GrantsTable grants={rows} connectors={connectors.data?.connectors ?? []} onRevoke={revokeGrant} />}
      <h2>Clients</h2>
      {clients.data && (
        <div class="field inline">
          <span id="dcr-label">Dynamic client registration</span>
          <Switch
            label="Dynamic client registration"
            on={clients.data.registration_enabled}
            onChange={setRegistration}
            disabled={action.pending}
            hint="Clients without a metadata document register themselves (RFC 7591); off: only metadata documents and pre-registered clients"
          />
        </div>
      )}
      <PreregisterForm onCreated={clients.reload} />
      <Loading loading={clients.loading && !clients.data} />
      {clients.data && registered.length === 0 && (
        <Empty>No registered clients. Clients with a metadata document need none; pre-register one above for a client that has neither.</Empty>
      )}
      {registered.length > 0 && <ClientsTable clients={registered} onRevoke={revokeClient} />}
    </Page>
  );
}
