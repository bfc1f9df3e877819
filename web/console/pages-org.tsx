/** Org settings pages: the identity provider, webhooks, billing. */
import { AgentUsage, Charges, PlanPrice } from './billing-parts.tsx';
import { useState } from 'preact/hooks';
import { schemas } from '../../generated/contract-schemas.ts';
import { ApiError, call, client, rest, type IdpConfig, type Webhook, type WebhookAttempt, type WebhookEventType } from './api.ts';
import { DataTable, Empty, Named, SchemaInput, Switch, type Column } from './controls.tsx';
import { ErrorBox, Loading, Page, SecretOnce, useAction, useLoad, when, type PageProps } from './kit.tsx';

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
    action.run(() => call(rest.setIdpConfig({ client, body })), 'Identity provider saved').then((ok) => ok && onSaved());
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
                action.run(() => call(rest.deleteIdpConfig({ client })), 'Identity provider removed').then(idp.reload)
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

/** Headers as a definition list (name: value). */
function Headers({ headers, testId }: { headers: Record<string, string>; testId: string }) {
  return (
    <dl class="facts headers" data-testid={testId}>
      {Object.entries(headers).map(([name, value]) => (
        <>
          <dt key={`${name}-k`}>
            <code>{name}</code>
          </dt>
          <dd key={`${name}-v`}>
            <code>{value}</code>
          </dd>
        </>
      ))}
    </dl>
  );
}

/** What one attempt sent and what came back (decision 0283). */
function Exchange({ d }: { d: WebhookAttempt }) {
  if (!d.request_headers) return <p class="hint">This attempt was recorded before requests and responses were kept.</p>;
  let body = d.request_body ?? '';
  try {
    body = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // Shown as sent.
  }
  return (
    <div class="exchange" data-testid={`exchange-${d.attempt}-${d.event_id}`}>
      <div>
        <h3>Request of attempt {d.attempt}</h3>
        <Headers headers={d.request_headers} testId="request-headers" />
        <pre data-testid="request-body">{body}</pre>
      </div>
      <div>
        <h3>Response</h3>
        {d.response_headers ? (
          <>
            <p>
              HTTP {d.status_code}
              {d.response_truncated && <span class="hint"> (body cut at 4 KB)</span>}
            </p>
            <Headers headers={d.response_headers} testId="response-headers" />
            <pre data-testid="response-body">{d.response_body || '(empty body)'}</pre>
          </>
        ) : (
          <p>No answer came{d.error ? `: ${d.error}` : '.'}</p>
        )}
      </div>
    </div>
  );
}

const PAGE_SIZE = 20;

function deliveryColumns(open: string | null, setOpen: (id: string | null) => void, resend: (d: WebhookAttempt) => void): Column<WebhookAttempt>[] {
  return [
    { key: 'when', label: 'When', value: (d) => d.attempted_at, render: (d) => when(d.attempted_at) },
    { key: 'event', label: 'Event', value: (d) => d.event_type, render: (d) => <Named name={d.event_type} id={d.event_id} /> },
    { key: 'attempt', label: 'Attempt', value: (d) => d.attempt },
    { key: 'response', label: 'Response', value: (d) => d.status_code ?? -1, render: (d) => (d.status_code ? `HTTP ${d.status_code}` : 'no answer') },
    { key: 'latency', label: 'Latency', value: (d) => d.latency_ms, render: (d) => `${d.latency_ms} ms` },
    { key: 'error', label: 'Error', value: (d) => d.error ?? '', render: (d) => d.error ?? '—' },
    {
      key: 'delivery',
      label: 'Delivery',
      value: (d) => d.delivery_status,
      render: (d) => <span class={`status status-${d.delivery_status}`}>{d.delivery_status}</span>,
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (d) => (
        <span class="buttons">
          <button type="button" class="secondary" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
            {open === d.id ? 'Hide' : 'Show'}
            <span class="sr-only">
              {' '}
              request and response of attempt {d.attempt} of {d.event_type}
            </span>
          </button>
          <button type="button" class="secondary" onClick={() => resend(d)}>
            Resend
          </button>
        </span>
      ),
    },
  ];
}

function Deliveries({ webhook }: { webhook: Webhook }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const list = useLoad(
    () => call(rest.listWebhookDeliveries({ client, path: { webhookId: webhook.id }, query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } })),
    [webhook.id, cursor],
    5000,
  );
  const [open, setOpen] = useState<string | null>(null);
  const action = useAction();
  const resend = (d: WebhookAttempt) =>
    action.run(() => call(rest.resendWebhookEvent({ client, path: { webhookId: webhook.id, eventId: d.event_id } })), 'Queued again').then(list.reload);
  const rows = list.data?.deliveries ?? [];
  return (
    <>
      <h2>Deliveries</h2>
      <p class="hint">
        Each attempt keeps the headers it sent (the signatures are per attempt; the secret is never sent), the event's body, and what came back: the status, the
        response headers and the first 4 KB of the response body. Show opens them.
      </p>
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && rows.length === 0 && cursors.length === 0 && <Empty>No deliveries yet: they appear when a subscribed event happens.</Empty>}
      {rows.length > 0 && (
        <DataTable
          caption="Deliveries"
          columns={deliveryColumns(open, setOpen, resend)}
          rows={rows}
          rowKey={(d) => d.id}
          rowTestId={(d) => `attempt-${d.attempt}-${d.event_id}`}
          after={(d) => open === d.id && <Exchange d={d} />}
        />
      )}
      <div class="buttons">
        <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer
        </button>
        <button type="button" class="secondary" disabled={!list.data?.next_cursor} onClick={() => setCursors([...cursors, list.data!.next_cursor!])}>
          Older
        </button>
      </div>
    </>
  );
}

function useWebhookActions(reload: () => void) {
  const action = useAction();
  return {
    action,
    toggle: (w: Webhook, on: boolean) =>
      action
        .run(() => call(rest.updateWebhook({ client, path: { webhookId: w.id }, body: { enabled: on } })), `Webhook ${on ? 'enabled' : 'disabled'}`)
        .then(reload),
    remove: (w: Webhook) =>
      confirm(`Delete the webhook to ${w.url}?`) &&
      action.run(() => call(rest.deleteWebhook({ client, path: { webhookId: w.id } })), 'Webhook deleted').then(reload),
  };
}

function WebhooksTable({ webhooks, reload }: { webhooks: Webhook[]; reload: () => void }) {
  const { action, toggle, remove } = useWebhookActions(reload);
  const columns: Column<Webhook>[] = [
    { key: 'url', label: 'URL', value: (w) => w.url, render: (w) => <a href={`#/webhooks/${w.id}`}>{w.url}</a> },
    { key: 'events', label: 'Events', value: (w) => w.events.join(', ') },
    {
      key: 'enabled',
      label: 'Enabled',
      value: (w) => (w.enabled ? 1 : 0),
      render: (w) => (
        <>
          <Switch label={`Enabled: ${w.url}`} on={w.enabled} onChange={(on) => toggle(w, on)} />
          {w.disabled_reason && <p class="reason">{w.disabled_reason}</p>}
        </>
      ),
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (w) => (
        <button type="button" class="danger" onClick={() => remove(w)} aria-label={`Delete the webhook to ${w.url}`}>
          Delete
        </button>
      ),
    },
  ];
  return (
    <>
      <ErrorBox error={action.error} />
      <DataTable caption="Webhooks" columns={columns} rows={webhooks} rowKey={(w) => w.id} rowClass={(w) => (w.enabled ? undefined : 'row-disabled')} />
    </>
  );
}

function NewWebhook({ disabled, onCreated }: { disabled: boolean; onCreated: (secret: string) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>(['approval.requested']);
  const action = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    action.run(async () => {
      const created = await call(rest.createWebhook({ client, body: { url: url.trim(), events } }));
      onCreated(created.secret);
      setUrl('');
    }, 'Webhook added');
  };
  return (
    <form class="card" aria-label="New webhook" onSubmit={create} noValidate>
      <SchemaInput id="wh-url" label="Endpoint URL (https)" schema={schemas.WebhookInput.properties.url} value={url} onInput={setUrl} required />
      <fieldset>
        <legend>Events</legend>
        {EVENTS.map((ev) => (
          <span class="check" key={ev}>
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
      {events.length === 0 && <p class="field-error">Pick at least one event.</p>}
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.pending || disabled || events.length === 0 || !url.trim()}>
        Add webhook
      </button>
    </form>
  );
}

function WebhookDetail({ id }: { id: string }) {
  const list = useLoad(() => call(rest.listWebhooks({ client })));
  const w = list.data?.webhooks.find((x) => x.id === id);
  const { action, toggle, remove } = useWebhookActions(list.reload);
  return (
    <Page title="Webhook" actions={<a href="#/webhooks">All webhooks</a>}>
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error ?? action.error} />
      {list.data && !w && <p class="error">No such webhook.</p>}
      {w && (
        <>
          <dl class="facts">
            <dt>URL</dt>
            <dd>
              <code>{w.url}</code>
            </dd>
            <dt>Events</dt>
            <dd>{w.events.join(', ')}</dd>
            <dt>Enabled</dt>
            <dd>
              <Switch label="Enabled" on={w.enabled} onChange={(on) => toggle(w, on)} />
              {w.disabled_reason && <span class="reason">{w.disabled_reason}</span>}
            </dd>
          </dl>
          <button type="button" class="danger" onClick={() => remove(w) && (location.hash = '#/webhooks')}>
            Delete
          </button>
          <Deliveries webhook={w} />
        </>
      )}
    </Page>
  );
}

export function WebhooksPage({ id }: PageProps) {
  const list = useLoad(() => call(rest.listWebhooks({ client })));
  const [secret, setSecret] = useState<string | null>(null);
  if (id) return <WebhookDetail id={id} />;
  const hooks = list.data?.webhooks ?? [];
  return (
    <Page title="Webhooks">
      {secret && <SecretOnce label="Signing secret" value={secret} onDone={() => setSecret(null)} />}
      <NewWebhook disabled={!!secret} onCreated={(value) => (setSecret(value), list.reload())} />
      <Loading loading={list.loading && !list.data} />
      <ErrorBox error={list.error} />
      {list.data && hooks.length === 0 && <Empty>No webhooks. Add one above to hear about held calls and decisions where your team works.</Empty>}
      {hooks.length > 0 && <WebhooksTable webhooks={hooks} reload={list.reload} />}
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
      <ErrorBox error={subscription.error ?? usage.error ?? limits.error} />
      <Loading loading={!s || !u || !l} />
      {s && u && l && (
        <>
          <dl class="facts">
            <dt>Plan</dt>
            <dd data-testid="plan">{s.plan}</dd>
            <dt>Price</dt>
            <dd data-testid="plan-price">
              <PlanPrice s={s} />
            </dd>
            <dt>Subscription</dt>
            <dd>
              {s.status}
              {s.trial_expires_at ? `, trial ends ${when(s.trial_expires_at)}` : ''}
            </dd>
            <dt>Usage this period</dt>
            <dd>{`${u.tool_calls} tool calls (${when(u.period_start)} to ${when(u.period_end)})`}</dd>
            <dt>Monthly quota</dt>
            <dd>{`${l.tool_calls_used} of ${l.monthly_tool_calls ?? 'unlimited'}`}</dd>
            <dt>Connectors</dt>
            <dd>{`${l.connectors_used} of ${l.connectors_max ?? 'unlimited'}`}</dd>
            <dt>Burst limit</dt>
            <dd>{`${l.burst_limit_per_second} calls per second`}</dd>
          </dl>
          <p class="card callout" data-testid="upgrade">
            To change the plan (more connectors, a larger quota, no trial end), ask the gateway's operator: they change it with{' '}
            <code>
              toolgate org set-plan --slug {'<org-slug>'} --plan {'<plan>'}
            </code>{' '}
            or <code>PATCH /operator/orgs/{'{slug}'}</code>, and it applies at once.
          </p>
          <Charges u={u} />
          <AgentUsage u={u} />
          {u.by_connector.length === 0 ? (
            <Empty>No counted tool calls this period.</Empty>
          ) : (
            <DataTable
              caption="Tool calls by connector"
              columns={[
                {
                  key: 'c',
                  label: 'Connector',
                  value: (c) => c.connector_name ?? '',
                  render: (c) => <Named name={c.connector_name ?? '(none)'} id={c.connector_id} />,
                },
                { key: 'n', label: 'Tool calls', value: (c) => c.tool_calls },
              ]}
              rows={u.by_connector}
              rowKey={(c) => c.connector_id ?? 'none'}
            />
          )}
        </>
      )}
    </Page>
  );
}
