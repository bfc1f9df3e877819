/** Pages for running the org: the approvals inbox, the audit log, API keys and OAuth clients. */
import { useState } from 'preact/hooks';
import { call, client, rest, type ApiKey, type Approval, type AuditEvent, type OAuthClient, type SessionInfo } from './api.ts';
import { ErrorBox, Loading, Page, SecretOnce, useAction, useLoad, when } from './kit.tsx';

const ORDER: Record<string, number> = { pending: 0, executing: 1 };

export function ApprovalsPage() {
  // Refreshes while open: a held call shows up without a reload.
  const list = useLoad(() => call(rest.listApprovals({ client, query: { limit: 100 } })), [], 3000);
  const [results, setResults] = useState<Record<string, string>>({});
  const action = useAction();
  const decide = (a: Approval, approve: boolean) =>
    action
      .run(async () => {
        const fn = approve ? rest.approveApproval : rest.rejectApproval;
        const decision = await call(fn({ client, path: { approvalId: a.id } }));
        setResults((r) => ({ ...r, [a.id]: JSON.stringify(decision, null, 2) }));
      })
      .then(list.reload);
  const approvals = [...(list.data?.approvals ?? [])].sort(
    (a, b) => (ORDER[a.status] ?? 2) - (ORDER[b.status] ?? 2) || b.created_at.localeCompare(a.created_at),
  );
  return (
    <Page title="Approvals">
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && approvals.length === 0 && <p>No approvals. Calls to tools that require approval appear here.</p>}
      <ul class="approvals">
        {approvals.map((a) => (
          <li key={a.id} class={`card approval-${a.status}`} data-testid={`approval-${a.id}`}>
            <h2>
              {a.tool_name} <span class={`status status-${a.status}`}>{a.status}</span>
            </h2>
            <p>
              Requested by {a.requested_by} at {when(a.created_at)}; expires {when(a.expires_at)}
              {a.decided_by && `; decided by ${a.decided_by} at ${when(a.decided_at)}`}
            </p>
            <h3>Arguments</h3>
            <pre>{JSON.stringify(a.arguments, null, 2)}</pre>
            {a.reason && <p class="reason">{a.reason}</p>}
            {a.status === 'pending' && (
              <div class="buttons">
                <button type="button" disabled={action.pending} onClick={() => decide(a, true)}>
                  Approve and run
                </button>
                <button type="button" class="danger" disabled={action.pending} onClick={() => decide(a, false)}>
                  Reject
                </button>
              </div>
            )}
            {results[a.id] && (
              <>
                <h3>Result</h3>
                <pre data-testid="approval-result">{results[a.id]}</pre>
              </>
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}

function download(name: string, value: unknown) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Exports the filtered events, redacted, as a JSON download (admins). */
function ExportButton({ filter, exporting }: { filter: { action: string; days: number }; exporting: ReturnType<typeof useAction> }) {
  return (
    <button
      type="button"
      class="secondary"
      disabled={exporting.pending}
      onClick={() =>
        exporting.run(async () => {
          const exported = await call(
            rest.exportAuditEvents({ client, query: { redact: true, days: filter.days, ...(filter.action ? { action: filter.action } : {}) } }),
          );
          download(`audit-${new Date().toISOString().slice(0, 10)}.json`, exported);
        })
      }
    >
      Export (redacted)
    </button>
  );
}

function AuditTable({ events }: { events: AuditEvent[] }) {
  return (
    <table>
      <caption class="sr-only">Audit events</caption>
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">When</th>
          <th scope="col">Action</th>
          <th scope="col">Actor</th>
          <th scope="col">Target</th>
          <th scope="col">Outcome</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <td>{e.seq}</td>
            <td>{when(e.created_at)}</td>
            <td>{e.action}</td>
            <td>
              {e.actor.type}
              {e.actor.id ? `: ${e.actor.id}` : ''}
            </td>
            <td>{e.target_type ? `${e.target_type} ${e.target_id ?? ''}` : '—'}</td>
            <td>{e.outcome}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AuditPage({ session }: { session: SessionInfo }) {
  const [action, setAction] = useState('');
  const [days, setDays] = useState('7');
  const [filter, setFilter] = useState({ action: '', days: 7 });
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    () =>
      call(
        rest.listAuditEvents({
          client,
          query: { limit: 25, days: filter.days, ...(filter.action ? { action: filter.action } : {}), ...(cursor ? { cursor } : {}) },
        }),
      ),
    [filter, cursor],
  );
  const exporting = useAction();
  const admin = session.org_level || session.roles.includes('admin');
  const events: AuditEvent[] = page.data?.events ?? [];
  return (
    <Page title="Audit">
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([]);
          setFilter({ action: action.trim(), days: Number(days) || 7 });
        }}
      >
        <div class="field inline">
          <label for="a-action">Action</label>
          <input id="a-action" placeholder="e.g. tool.called" value={action} onInput={(e) => setAction(e.currentTarget.value)} />
        </div>
        <div class="field inline">
          <label for="a-days">Days</label>
          <input id="a-days" inputMode="numeric" value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        </div>
        <button type="submit">Filter</button>
        {admin && <ExportButton filter={filter} exporting={exporting} />}
      </form>
      <ErrorBox error={page.error ?? exporting.error} />
      <Loading loading={page.loading} />
      <AuditTable events={events} />
      <div class="buttons">
        <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button type="button" class="secondary" disabled={!page.data?.next_cursor} onClick={() => setCursors([...cursors, page.data!.next_cursor!])}>
          Older
        </button>
      </div>
    </Page>
  );
}

type Revoke = (id: string, name: string) => unknown;

function ApiKeysTable({ keys, onRevoke }: { keys: ApiKey[]; onRevoke: Revoke }) {
  return (
    <table>
      <caption class="sr-only">API keys</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Prefix</th>
          <th scope="col">Created</th>
          <th scope="col">State</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {keys.map((k) => (
          <tr key={k.id} data-testid={`key-${k.name}`}>
            <td>{k.name}</td>
            <td>
              <code>{k.prefix}…</code>
            </td>
            <td>{when(k.created_at)}</td>
            <td>{k.revoked_at ? `revoked ${when(k.revoked_at)}` : 'active'}</td>
            <td>
              {!k.revoked_at && (
                <button type="button" class="danger" onClick={() => onRevoke(k.id, k.name)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function OAuthClientsTable({ clients, onRevoke }: { clients: OAuthClient[]; onRevoke: Revoke }) {
  return (
    <table>
      <caption class="sr-only">OAuth clients</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Client id</th>
          <th scope="col">Scopes</th>
          <th scope="col">State</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {clients.map((c) => (
          <tr key={c.id}>
            <td>{c.name}</td>
            <td>
              <code>{c.client_id}</code>
            </td>
            <td>{c.scopes.join(' ')}</td>
            <td>{c.revoked_at ? `revoked ${when(c.revoked_at)}` : 'active'}</td>
            <td>
              {!c.revoked_at && (
                <button type="button" class="danger" onClick={() => onRevoke(c.client_id, c.name)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function CredentialsPage() {
  const keys = useLoad(() => call(rest.listApiKeys({ client })));
  const clients = useLoad(() => call(rest.listOAuthClients({ client })));
  const [keyName, setKeyName] = useState('');
  const [clientName, setClientName] = useState('');
  const [scopes, setScopes] = useState({ manage: false, mcp: true });
  const [secret, setSecret] = useState<{ label: string; value: string; extra?: string } | null>(null);
  const action = useAction();
  const createKey = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createApiKey({ client, body: { name: keyName } }));
      setSecret({ label: 'API key', value: created.key });
      setKeyName('');
      keys.reload();
    });
  };
  const createClient = (e: Event) => {
    e.preventDefault();
    const wanted = [...(scopes.mcp ? ['mcp:call'] : []), ...(scopes.manage ? ['org:manage'] : [])];
    action.run(async () => {
      const created = await call(rest.createOAuthClient({ client, body: { name: clientName, scopes: wanted } }));
      setSecret({ label: 'Client secret', value: created.client_secret, extra: `Client id: ${created.client_id}` });
      setClientName('');
      clients.reload();
    });
  };
  const revokeKey = (id: string, name: string) =>
    confirm(`Revoke the API key ${name}? Calls with it fail at once.`) &&
    action.run(() => call(rest.revokeApiKey({ client, path: { keyId: id } }))).then(keys.reload);
  const revokeClient = (id: string, name: string) =>
    confirm(`Revoke the OAuth client ${name}? Its tokens stop working at once.`) &&
    action.run(() => call(rest.revokeOAuthClient({ client, path: { clientId: id } }))).then(clients.reload);
  return (
    <Page title="API keys & OAuth clients">
      {secret && (
        <>
          {secret.extra && <p>{secret.extra}</p>}
          <SecretOnce label={secret.label} value={secret.value} onDone={() => setSecret(null)} />
        </>
      )}
      <ErrorBox error={action.error ?? keys.error ?? clients.error} />
      <h2>API keys</h2>
      <form class="inline-form" onSubmit={createKey}>
        <label for="key-name">Name of the new key</label>
        <input id="key-name" required value={keyName} onInput={(e) => setKeyName(e.currentTarget.value)} />
        <button type="submit" disabled={action.pending}>
          Create API key
        </button>
      </form>
      <Loading loading={keys.loading && !keys.data} />
      <ApiKeysTable keys={keys.data?.api_keys ?? []} onRevoke={revokeKey} />
      <h2>OAuth clients</h2>
      <form class="inline-form" onSubmit={createClient}>
        <label for="client-name">Name of the new client</label>
        <input id="client-name" required value={clientName} onInput={(e) => setClientName(e.currentTarget.value)} />
        <span class="check">
          <input id="scope-mcp" type="checkbox" checked={scopes.mcp} onChange={(e) => setScopes({ ...scopes, mcp: e.currentTarget.checked })} />
          <label for="scope-mcp">mcp:call</label>
        </span>
        <span class="check">
          <input id="scope-manage" type="checkbox" checked={scopes.manage} onChange={(e) => setScopes({ ...scopes, manage: e.currentTarget.checked })} />
          <label for="scope-manage">org:manage</label>
        </span>
        <button type="submit" disabled={action.pending}>
          Create OAuth client
        </button>
      </form>
      <OAuthClientsTable clients={clients.data?.oauth_clients ?? []} onRevoke={revokeClient} />
    </Page>
  );
}
