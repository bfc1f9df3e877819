/** A credential's page (#/credentials/<key id or client id>): what it may do, when it was made and last used. */
import { call, client, rest, type ApiKey, type Connector, type OAuthClient } from './api.ts';
import { Named } from './controls.tsx';
import { AttributesEditor, AttributesList } from './attributes.tsx';
import { ErrorBox, Loading, Page, useAction, useLoad, when } from './kit.tsx';

/** "never" or the time, with how coarse it is (decision 0282). */
export function lastUse(at: string | null): string {
  return at ? when(at) : 'never';
}

const connectorName = (connectors: Connector[], id: string) => connectors.find((c) => c.id === id)?.name ?? `${id.slice(0, 8)}…`;

function Limits({ ids, connectors }: { ids: string[] | null; connectors: Connector[] }) {
  if (ids === null) return <>every connector</>;
  return (
    <ul class="plain" data-testid="credential-connectors">
      {ids.map((id) => (
        <li key={id}>
          <Named name={connectorName(connectors, id)} id={id} />
        </li>
      ))}
    </ul>
  );
}

function Common({ created, lastUsed, revoked }: { created: string; lastUsed: string | null; revoked: string | null }) {
  return (
    <>
      <dt>Created</dt>
      <dd>{when(created)}</dd>
      <dt>Last used</dt>
      <dd>
        <span data-testid="credential-last-used">{lastUse(lastUsed)}</span>
        <span class="hint"> (recorded to the minute)</span>
      </dd>
      <dt>State</dt>
      <dd data-testid="credential-state">{revoked ? `revoked ${when(revoked)}` : 'active'}</dd>
    </>
  );
}

function KeyFacts({ k, connectors }: { k: ApiKey; connectors: Connector[] }) {
  return (
    <dl class="facts">
      <dt>Name</dt>
      <dd>
        <Named name={k.name} id={k.id} />
      </dd>
      <dt>Prefix</dt>
      <dd>
        <code>{k.prefix}…</code>
      </dd>
      <dt>Scopes</dt>
      <dd>calls tools on the MCP endpoint (an API key has no REST access)</dd>
      <dt>Connectors</dt>
      <dd>
        <Limits ids={k.connector_ids} connectors={connectors} />
      </dd>
      <dt>Attributes</dt>
      <dd>
        <AttributesList attributes={k.attributes} />
      </dd>
      <Common created={k.created_at} lastUsed={k.last_used_at} revoked={k.revoked_at} />
    </dl>
  );
}

function ClientFacts({ c, connectors }: { c: OAuthClient; connectors: Connector[] }) {
  const limited = c.scopes.filter((s) => s.startsWith('mcp:call:')).map((s) => s.slice(9));
  const calls = c.scopes.includes('mcp:call') ? null : limited;
  return (
    <dl class="facts">
      <dt>Name</dt>
      <dd>
        <Named name={c.name} id={c.id} />
      </dd>
      <dt>Client id</dt>
      <dd>
        <code>{c.client_id}</code>
      </dd>
      <dt>Scopes</dt>
      <dd>
        <ul class="plain" data-testid="credential-scopes">
          {c.scopes.map((s) => (
            <li key={s}>
              <code>{s.startsWith('mcp:call:') ? 'mcp:call:…' : s}</code>
              {s.startsWith('mcp:call:') && ` on ${connectorName(connectors, s.slice(9))}`}
              {s === 'org:manage' && ' (the REST interface and this console)'}
              {s === 'mcp:call' && ' (call tools)'}
            </li>
          ))}
        </ul>
      </dd>
      <dt>Connectors</dt>
      <dd>{calls !== null && calls.length === 0 ? 'none (no tool calls)' : <Limits ids={calls} connectors={connectors} />}</dd>
      <dt>Attributes</dt>
      <dd>
        <AttributesList attributes={c.attributes} />
      </dd>
      <Common created={c.created_at} lastUsed={c.last_used_at} revoked={c.revoked_at} />
    </dl>
  );
}

export function CredentialDetail({ id }: { id: string }) {
  const keys = useLoad(() => call(rest.listApiKeys({ client })));
  const clients = useLoad(() => call(rest.listOAuthClients({ client })));
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const action = useAction();
  const key = keys.data?.api_keys.find((k) => k.id === id);
  const oauth = clients.data?.oauth_clients.find((c) => c.client_id === id);
  const all = connectors.data?.connectors ?? [];
  const loaded = keys.data && clients.data && connectors.data;
  const revoke = () => {
    if (key && confirm(`Revoke the API key ${key.name}? Calls with it fail at once.`))
      action.run(() => call(rest.revokeApiKey({ client, path: { keyId: key.id } })), `Revoked ${key.name}`).then(keys.reload);
    if (oauth && confirm(`Revoke the OAuth client ${oauth.name}? Its tokens stop working at once.`))
      action.run(() => call(rest.revokeOAuthClient({ client, path: { clientId: oauth.client_id } })), `Revoked ${oauth.name}`).then(clients.reload);
  };
  const saveAttributes = (attributes: Record<string, string>) => {
    if (key)
      action
        .run(() => call(rest.updateApiKey({ client, path: { keyId: key.id }, body: { attributes } })), `Saved the attributes of ${key.name}`)
        .then(keys.reload);
    if (oauth)
      action
        .run(() => call(rest.updateOAuthClient({ client, path: { clientId: oauth.client_id }, body: { attributes } })), `Saved the attributes of ${oauth.name}`)
        .then(clients.reload);
  };
  const title = key ? `API key ${key.name}` : oauth ? `OAuth client ${oauth.name}` : 'Credential';
  const revoked = key ? key.revoked_at : oauth?.revoked_at;
  return (
    <Page title={title} actions={<a href="#/credentials">All credentials</a>}>
      <Loading loading={!loaded && !keys.error && !clients.error} />
      <ErrorBox error={keys.error ?? clients.error ?? connectors.error ?? action.error} />
      {loaded && !key && !oauth && <p class="error">No such API key or OAuth client.</p>}
      {loaded && key && <KeyFacts k={key} connectors={all} />}
      {loaded && oauth && <ClientFacts c={oauth} connectors={all} />}
      {loaded && (key || oauth) && !revoked && (
        <AttributesEditor
          key={JSON.stringify((key ?? oauth)!.attributes ?? {})}
          attributes={(key ?? oauth)!.attributes}
          pending={action.pending}
          onSave={saveAttributes}
        />
      )}
      {loaded && (key || oauth) && !revoked && (
        <button type="button" class="danger" onClick={revoke}>
          Revoke
        </button>
      )}
    </Page>
  );
}
