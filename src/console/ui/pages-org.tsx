/** Org settings pages: the identity provider, webhooks, billing. */
import { useState } from 'preact/hooks';
import { ApiError, call, client, rest, type IdpConfig, type Webhook, type WebhookEventType } from './api.ts';
import { ErrorBox, Loading, Page, SecretOnce, useAction, useLoad, when } from './kit.tsx';

function IdpForm({ current, onSaved }: { current: IdpConfig | null; onSaved: () => void }) {
  const [v, setV] = useState({
    issuer: current?.issuer ?? '',
    jwks_uri: current?.jwks_uri ?? '',
    audience: current?.audience ?? '',
    role_claim: current?.role_claim ?? 'role',
    email_claim: current?.email_claim ?? 'email',
    default_role: current?.default_role ?? '',
    console_client_id: current?.console_client_id ?? '',
    console_client_secret: '',
  });
  const action = useAction();
  const field = (key: keyof typeof v, label: string, props: Record<string, unknown> = {}) => (
    <div class="field">
      <label for={`idp-${key}`}>{label}</label>
      <input id={`idp-${key}`} value={v[key]} onInput={(e) => setV({ ...v, [key]: e.currentTarget.value })} {...props} />
    </div>
  );
  const save = (e: Event) => {
    e.preventDefault();
    const body = {
      issuer: v.issuer,
      jwks_uri: v.jwks_uri,
      audience: v.audience,
      role_claim: v.role_claim,
      email_claim: v.email_claim,
      default_role: (v.default_role || null) as IdpConfig['default_role'],
      console_client_id: v.console_client_id.trim() || null,
      // Left empty, the stored secret is kept (for the same client id).
      ...(v.console_client_secret ? { console_client_secret: v.console_client_secret } : {}),
    };
    action.run(() => call(rest.setIdpConfig({ client, body }))).then((ok) => ok && onSaved());
  };
  return (
    <form class="card" aria-label="Identity provider settings" onSubmit={save}>
      {field('issuer', 'Issuer (iss)', { required: true, type: 'url' })}
      {field('jwks_uri', 'JWKS URI', { required: true, type: 'url' })}
      {field('audience', 'Audience of access tokens (aud)', { required: true })}
      {field('role_claim', 'Role claim')}
      {field('email_claim', 'E-mail claim')}
      <div class="field">
        <label for="idp-default-role">Role when the token has no role claim</label>
        <select id="idp-default-role" value={v.default_role} onChange={(e) => setV({ ...v, default_role: e.currentTarget.value })}>
          <option value="">none (no REST access)</option>
          <option value="contributor">contributor</option>
          <option value="finance">finance</option>
          <option value="admin">admin</option>
        </select>
      </div>
      <h2>Console sign-in</h2>
      <p class="hint">
        Register <code>{location.origin}/console/auth/callback</code> as a redirect URI of this client at the IdP.
      </p>
      {field('console_client_id', 'Console client id (empty: no IdP sign-in to the console)')}
      {field(
        'console_client_secret',
        current?.console_client_secret_set ? 'Console client secret (stored; type to replace)' : 'Console client secret (optional)',
        { type: 'password', autoComplete: 'off' },
      )}
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.pending}>
        Save
      </button>
    </form>
  );
}

export function IdpPage() {
  const idp = useLoad(() => call(rest.getIdpConfig({ client })).catch((err) => (err instanceof ApiError && err.status === 404 ? null : Promise.reject(err))));
  const action = useAction();
  return (
    <Page title="Identity provider">
      <Loading loading={idp.loading && idp.data === undefined} />
      <ErrorBox error={idp.error ?? action.error} />
      {idp.data !== undefined && (
        <>
          <p>
            {idp.data
              ? `Tokens from ${idp.data.issuer} are accepted (updated ${when(idp.data.updated_at)}).`
              : 'No identity provider is configured: only API keys and OAuth clients sign in.'}
          </p>
          <IdpForm key={idp.data?.updated_at ?? 'none'} current={idp.data} onSaved={idp.reload} />
          {idp.data && (
            <button
              type="button"
              class="danger"
              onClick={() =>
                confirm('Remove the identity provider? Its tokens stop working at once.') &&
                action.run(() => call(rest.deleteIdpConfig({ client }))).then(idp.reload)
              }
            >
              Remove the identity provider
            </button>
          )}
        </>
      )}
    </Page>
  );
}

const EVENTS: WebhookEventType[] = ['tool.called', 'approval.requested', 'approval.decided'];

function Deliveries({ webhook }: { webhook: Webhook }) {
  const list = useLoad(() => call(rest.listWebhookDeliveries({ client, path: { webhookId: webhook.id } })));
  const action = useAction();
  return (
    <div class="card">
      <h3>Deliveries to {webhook.url}</h3>
      <Loading loading={list.loading} />
      <ErrorBox error={list.error ?? action.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Status</th>
            <th scope="col">Delivery</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.deliveries ?? []).map((d) => (
            <tr key={d.id}>
              <td>{when(d.attempted_at)}</td>
              <td>{d.event_type}</td>
              <td>{d.attempt}</td>
              <td>{d.status_code ?? d.error ?? '—'}</td>
              <td>{d.delivery_status}</td>
              <td>
                <button
                  type="button"
                  class="secondary"
                  onClick={() =>
                    action.run(() => call(rest.resendWebhookEvent({ client, path: { webhookId: webhook.id, eventId: d.event_id } }))).then(list.reload)
                  }
                >
                  Resend
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

type OnWebhook = (w: Webhook) => unknown;

function WebhooksTable({
  webhooks,
  onDeliveries,
  onToggle,
  onDelete,
}: {
  webhooks: Webhook[];
  onDeliveries: OnWebhook;
  onToggle: OnWebhook;
  onDelete: OnWebhook;
}) {
  return (
    <table>
      <caption class="sr-only">Webhooks</caption>
      <thead>
        <tr>
          <th scope="col">URL</th>
          <th scope="col">Events</th>
          <th scope="col">State</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {webhooks.map((w) => (
          <tr key={w.id}>
            <td>{w.url}</td>
            <td>{w.events.join(', ')}</td>
            <td>{w.enabled ? 'enabled' : `disabled${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`}</td>
            <td class="buttons">
              <button type="button" class="secondary" onClick={() => onDeliveries(w)}>
                Deliveries
              </button>
              <button type="button" class="secondary" onClick={() => onToggle(w)}>
                {w.enabled ? 'Disable' : 'Enable'}
              </button>
              <button type="button" class="danger" onClick={() => onDelete(w)}>
                Delete
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function WebhooksPage() {
  const list = useLoad(() => call(rest.listWebhooks({ client })));
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(['approval.requested']);
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const action = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createWebhook({ client, body: { url, events } }));
      setSecret(created.secret);
      setUrl('');
      list.reload();
    });
  };
  return (
    <Page title="Webhooks">
      {secret && <SecretOnce label="Signing secret" value={secret} onDone={() => setSecret(null)} />}
      <form class="card" aria-label="New webhook" onSubmit={create}>
        <div class="field">
          <label for="wh-url">Endpoint URL (https)</label>
          <input id="wh-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </div>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <span class="check">
              <input
                id={`wh-${ev}`}
                type="checkbox"
                checked={events.includes(ev)}
                onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
              />
              <label for={`wh-${ev}`}>{ev}</label>
            </span>
          ))}
        </fieldset>
        <button type="submit" disabled={action.pending}>
          Add webhook
        </button>
      </form>
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      <WebhooksTable
        webhooks={list.data?.webhooks ?? []}
        onDeliveries={(w) => setOpen(open === w.id ? null : w.id)}
        onToggle={(w) => action.run(() => call(rest.updateWebhook({ client, path: { webhookId: w.id }, body: { enabled: !w.enabled } }))).then(list.reload)}
        onDelete={(w) =>
          confirm(`Delete the webhook to ${w.url}?`) && action.run(() => call(rest.deleteWebhook({ client, path: { webhookId: w.id } }))).then(list.reload)
        }
      />
      {open && list.data?.webhooks.find((w) => w.id === open) && <Deliveries webhook={list.data.webhooks.find((w) => w.id === open)!} />}
    </Page>
  );
}

export function BillingPage() {
  const subscription = useLoad(() => call(rest.getSubscription({ client })));
  const usage = useLoad(() => call(rest.getUsage({ client })));
  const limits = useLoad(() => call(rest.getLimits({ client })));
  const s = subscription.data;
  const u = usage.data;
  const l = limits.data;
  return (
    <Page title="Billing">
      <Loading loading={subscription.loading && !s} />
      <ErrorBox error={subscription.error ?? usage.error ?? limits.error} />
      <dl class="facts">
        <dt>Plan</dt>
        <dd>{s?.plan ?? '…'}</dd>
        <dt>Subscription</dt>
        <dd>
          {s?.status ?? '…'}
          {s?.trial_expires_at ? `, trial ends ${when(s.trial_expires_at)}` : ''}
        </dd>
        <dt>Usage this period</dt>
        <dd>{u ? `${u.tool_calls} tool calls (${when(u.period_start)} to ${when(u.period_end)})` : '…'}</dd>
        <dt>Monthly quota</dt>
        <dd>{l ? `${l.tool_calls_used} of ${l.monthly_tool_calls ?? 'unlimited'}` : '…'}</dd>
        <dt>Connectors</dt>
        <dd>{l ? `${l.connectors_used} of ${l.connectors_max ?? 'unlimited'}` : '…'}</dd>
        <dt>Burst limit</dt>
        <dd>{l ? `${l.burst_limit_per_second} calls per second` : '…'}</dd>
      </dl>
      {u && u.by_connector.length > 0 && (
        <table>
          <caption>Tool calls by connector</caption>
          <thead>
            <tr>
              <th scope="col">Connector</th>
              <th scope="col">Tool calls</th>
            </tr>
          </thead>
          <tbody>
            {u.by_connector.map((c) => (
              <tr key={c.connector_id ?? 'none'}>
                <td>{c.connector_id ?? '(archived or none)'}</td>
                <td>{c.tool_calls}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
