/** Pages for building the org's MCP server: overview (with insight from the audit trail), tools and a tool's page. */
import { BulkBar, selectColumn, useSelection } from './tools-bulk.tsx';
import { useState } from 'preact/hooks';
import { call, client, rest, type AuditEvent, type Connector, type Insights, type Tool } from './api.ts';
import { CallsChart } from './charts.tsx';
import { DataTable, Empty, Named, SchemaInput, Switch, type Column } from './controls.tsx';
import { Actor, connectorName, Target, useDirectory } from './directory.tsx';
import { can, CopyButton, ErrorBox, Loading, Page, useAction, useLoad, when, type PageProps } from './kit.tsx';
import { schemas } from '../../generated/contract-schemas.ts';
import { PolicySection, SavedPolicyNote } from './pages-policy.tsx';
import { countFilter, type Counted } from './insight-links.ts';
import { AgentsTable, CountLink as Linked, FingerprintsTable, ReasonsTable } from './insights-tables.tsx';
import { isDatabaseType, takesPolicy } from './connector-types.ts';

/** What a tool row governs, as the tools page words it (decisions 0313, 0315). */
const KIND_LABELS: Record<string, string> = {
  tool: 'tool',
  schema: 'schema tool',
  resource: 'resource',
  resource_template: 'resource template',
  prompt: 'prompt',
};

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);

/** A count of the insights as a link to the audit rows it counts (insight-links.ts), narrowed to a connector or a tool. */
function CountLink({ i, what, n, connector, tool }: { i: Insights; what: Counted; n: number; connector?: string | null; tool?: string }) {
  return <Linked filter={countFilter(what, i.since, { connector_id: connector, tool })} n={n} what={what} />;
}

function Stats({ i }: { i: Insights }) {
  const tiles: [string, string | number | preact.JSX.Element][] = [
    ['Calls', <CountLink i={i} what="calls" n={i.totals.calls} />],
    ['Refusals', <CountLink i={i} what="refusals" n={i.totals.refusals} />],
    ['Errors', <CountLink i={i} what="errors" n={i.totals.errors} />],
    ['Held for approval', <CountLink i={i} what="held" n={i.totals.held} />],
    ['p50 latency', ms(i.totals.p50_ms)],
    ['p95 latency', ms(i.totals.p95_ms)],
  ];
  return (
    <dl class="tiles" data-testid="insight-totals">
      {tiles.map(([k, v]) => (
        <div class="tile" key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The figures per connector (its percentiles over its own calls); a row without one holds refusals before a tool was known. */
function connectorColumns(i: Insights, dir: ReturnType<typeof useDirectory>): Column<Insights['by_connector'][number]>[] {
  // Refusals before a tool was resolved name no connector: no filter selects exactly them, so that row has no links.
  const count = (what: Counted) => (r: Insights['by_connector'][number]) =>
    r.connector_id ? <CountLink i={i} what={what} n={r[what]} connector={r.connector_id} /> : r[what];
  return [
    {
      key: 'connector',
      label: 'Connector',
      value: (r) => (r.connector_id ? connectorName(dir, r.connector_id) : '(no tool resolved)'),
      render: (r) => (r.connector_id ? <Named name={connectorName(dir, r.connector_id)} id={r.connector_id} /> : '(no tool resolved)'),
    },
    { key: 'calls', label: 'Calls', value: (r) => r.calls, render: count('calls') },
    { key: 'refusals', label: 'Refusals', value: (r) => r.refusals, render: count('refusals') },
    { key: 'errors', label: 'Errors', value: (r) => r.errors, render: count('errors') },
    { key: 'p50', label: 'p50', value: (r) => r.p50_ms ?? -1, render: (r) => ms(r.p50_ms) },
    { key: 'p95', label: 'p95', value: (r) => r.p95_ms ?? -1, render: (r) => ms(r.p95_ms) },
  ];
}

function InsightsPanel() {
  const [days, setDays] = useState(1);
  const insights = useLoad(() => call(rest.getInsights({ client, query: { days } })), [days], 15_000);
  const dir = useDirectory();
  const i = insights.data;
  const columns: Column<Insights['by_tool'][number]>[] = [
    { key: 'tool', label: 'Tool', value: (r) => r.tool_name },
    {
      key: 'connector',
      label: 'Connector',
      value: (r) => connectorName(dir, r.connector_id),
      render: (r) => <Named name={connectorName(dir, r.connector_id)} id={r.connector_id} />,
    },
    {
      key: 'calls',
      label: 'Calls',
      value: (r) => r.calls,
      render: (r) => <CountLink i={i!} what="calls" n={r.calls} connector={r.connector_id} tool={r.tool_name} />,
    },
    {
      key: 'refusals',
      label: 'Refusals',
      value: (r) => r.refusals,
      render: (r) => <CountLink i={i!} what="refusals" n={r.refusals} connector={r.connector_id} tool={r.tool_name} />,
    },
    {
      key: 'errors',
      label: 'Errors',
      value: (r) => r.errors,
      render: (r) => <CountLink i={i!} what="errors" n={r.errors} connector={r.connector_id} tool={r.tool_name} />,
    },
    { key: 'p50', label: 'p50', value: (r) => r.p50_ms ?? -1, render: (r) => ms(r.p50_ms) },
    { key: 'p95', label: 'p95', value: (r) => r.p95_ms ?? -1, render: (r) => ms(r.p95_ms) },
  ];
  return (
    <section aria-labelledby="insights-title">
      <div class="page-header">
        <h2 id="insights-title">Activity</h2>
        <fieldset class="segmented">
          <legend class="sr-only">Window</legend>
          {[1, 7].map((d) => (
            <button type="button" key={d} class={days === d ? '' : 'secondary'} aria-pressed={days === d} onClick={() => setDays(d)}>
              {d === 1 ? 'Last 24 hours' : 'Last 7 days'}
            </button>
          ))}
        </fieldset>
      </div>
      <ErrorBox error={insights.error} />
      {!i ? (
        <Loading loading={insights.loading} />
      ) : (
        <>
          <Stats i={i} />
          <CallsChart insights={i} />
          {i.by_tool.length === 0 ? (
            <Empty>
              No tool calls in this window. <a href="#/connect">Connect an agent</a> or try a tool in the <a href="#/playground">playground</a>.
            </Empty>
          ) : (
            <>
              <DataTable caption="Calls by connector" columns={connectorColumns(i, dir)} rows={i.by_connector} rowKey={(r) => r.connector_id ?? 'none'} />
              <DataTable caption="Calls by tool" columns={columns} rows={i.by_tool} rowKey={(r) => `${r.tool_name}:${r.connector_id}`} />
            </>
          )}
          <AgentsTable i={i} />
          <ReasonsTable i={i} />
          <FingerprintsTable days={days} caption="Most refused statements" />
        </>
      )}
    </section>
  );
}

function RecentActivity() {
  const recent = useLoad(() => call(rest.listAuditEvents({ client, query: { limit: 8 } })), [], 10_000);
  const dir = useDirectory();
  const events = recent.data?.events ?? [];
  return (
    <section aria-labelledby="recent-title">
      <h2 id="recent-title">Recent activity</h2>
      <ErrorBox error={recent.error} />
      {recent.data && events.length === 0 && <Empty>Nothing recorded yet.</Empty>}
      <ul class="activity" data-testid="recent-activity">
        {events.map((e) => (
          <li key={e.id}>
            <time dateTime={e.created_at}>{when(e.created_at)}</time> <strong>{e.action}</strong> by <Actor dir={dir} actor={e.actor} />
            {e.target_type && (
              <>
                {' '}
                on <Target dir={dir} type={e.target_type} id={e.target_id} />
              </>
            )}{' '}
            <span class={`status status-${e.outcome}`}>{e.outcome}</span>
          </li>
        ))}
      </ul>
      <a href="#/audit">The whole audit log</a>
    </section>
  );
}

function OrgFacts({ session }: PageProps) {
  const status = useLoad(() => call(rest.getProvisioningStatus({ client, path: { orgId: session.org_id } })));
  const org = useLoad(() => call(rest.getOrg({ client })));
  const finance = can(session, 'finance');
  const limits = useLoad(() => (finance ? call(rest.getLimits({ client })) : Promise.resolve(null)));
  const provision = useAction();
  const s = status.data;
  const l = limits.data;
  const o = org.data;
  return (
    <>
      <ErrorBox error={status.error ?? org.error ?? limits.error} />
      <Loading loading={!s || !o || (finance && !l)} />
      {s && o && (!finance || l) && (
        <dl class="facts">
          <dt>Org</dt>
          <dd>
            <Named name={`${o.name} (${o.slug})`} id={o.id} />, plan {o.plan}
            {o.trial_expires_at && `, trial ends ${when(o.trial_expires_at)}`}
          </dd>
          <dt>Provisioning</dt>
          <dd data-testid="provision-status">
            {s.status === 'provisioned' ? 'Provisioned' : 'Not provisioned'}
            {s.status !== 'provisioned' && (
              <button
                type="button"
                disabled={provision.pending}
                onClick={() => provision.run(() => call(rest.provisionOrg({ client, path: { orgId: session.org_id } })), 'Provisioned').then(status.reload)}
              >
                Provision the MCP server
              </button>
            )}
          </dd>
          <dt>MCP endpoint</dt>
          <dd>
            <code data-testid="mcp-endpoint">{s.endpoint}</code> <CopyButton text={s.endpoint} label="Copy endpoint URL" />{' '}
            <a href="#/connect">Connect an agent</a>
          </dd>
          <dt>Tools</dt>
          <dd data-testid="tool-count">{s.toolCount}</dd>
          <dt>Usage this month</dt>
          <dd data-testid="usage">
            {l
              ? `${l.tool_calls_used} of ${l.monthly_tool_calls ?? 'unlimited'} tool calls`
              : `quota ${o.monthly_tool_calls ?? 'unlimited'} tool calls a month`}
          </dd>
          <dt>Burst limit</dt>
          <dd>{l?.burst_limit_per_second ?? o.burst_limit_per_second} calls per second</dd>
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
    </>
  );
}

function PendingApprovals() {
  const pending = useLoad(() => call(rest.listApprovals({ client, query: { status: 'pending', limit: 500 } })), [], 5000);
  const n = pending.data?.approvals.length;
  if (n === undefined) return null;
  return (
    <p class={n ? 'card callout' : 'hint'} data-testid="approvals-waiting">
      {n ? (
        <>
          <strong>{n}</strong> approval{n === 1 ? '' : 's'} waiting. <a href="#/approvals">Open the inbox</a>
        </>
      ) : (
        'No approvals waiting.'
      )}
    </p>
  );
}

export function OverviewPage(props: PageProps) {
  const contributor = can(props.session, 'contributor');
  return (
    <Page title="Overview">
      <OrgFacts {...props} />
      {contributor && <PendingApprovals />}
      {contributor && <InsightsPanel />}
      {contributor && <RecentActivity />}
    </Page>
  );
}

const T = schemas.UpdateToolRequest.properties;

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
      approval_emails: emails
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      approval_ttl_seconds: Number(ttl),
    };
    action.run(() => call(rest.updateToolMetadata({ client, path: { orgId, toolId: tool.id }, body })), `Saved ${tool.name}`).then((ok) => ok && onDone());
  };
  return (
    <form class="card" aria-label={`Edit ${tool.name}`} onSubmit={save}>
      <SchemaInput id="t-name" label={`Name override (empty: ${tool.tool_name})`} schema={schemas.ToolName} value={name} onInput={setName} />
      <div class="field">
        <label for="t-desc">Description override</label>
        <textarea id="t-desc" maxLength={T.tool_description_override.maxLength} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="t-emails">Approvers (e-mail addresses, comma-separated)</label>
        <input id="t-emails" value={emails} onInput={(e) => setEmails(e.currentTarget.value)} />
      </div>
      <SchemaInput id="t-ttl" label="Approval expires after (seconds)" schema={T.approval_ttl_seconds} value={ttl} onInput={setTtl} required />
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

/** A connector whose tools cannot write: its type only reads, or writes are not allowed on it. */
const readOnlyConnector = (c: Connector | undefined) => !!c && isDatabaseType(c.type) && !c.allow_write;

type Patch = (tool: Tool, body: Record<string, unknown>, done: string) => unknown;

function toolColumns(connectors: Connector[], patch: Patch, onEdit: (t: Tool) => void): Column<Tool>[] {
  const byId = new Map(connectors.map((c) => [c.id, c]));
  return [
    {
      key: 'tool',
      label: 'Tool',
      value: (t) => t.name,
      render: (t) => (
        <>
          <a href={`#/tools/${t.id}`}>
            <strong>{t.name}</strong>
          </a>
          <p class="reason">{t.description}</p>
        </>
      ),
    },
    { key: 'kind', label: 'Kind', value: (t) => KIND_LABELS[t.kind] ?? t.kind },
    { key: 'connector', label: 'Connector', value: (t) => t.connector_name, render: (t) => <a href={`#/connectors/${t.connector_id}`}>{t.connector_name}</a> },
    {
      key: 'enabled',
      label: 'Enabled',
      value: (t) => (t.enabled ? 1 : 0),
      render: (t) => (
        <Switch label={`Enabled: ${t.name}`} on={t.enabled} onChange={(on) => patch(t, { enabled: on }, `${t.name} ${on ? 'enabled' : 'disabled'}`)} />
      ),
    },
    {
      key: 'approval',
      label: 'Requires approval',
      value: (t) => (t.requires_approval ? 1 : 0),
      render: (t) => (
        <Switch
          label={`Requires approval: ${t.name}`}
          on={t.requires_approval}
          onChange={(on) => patch(t, { requires_approval: on }, `${t.name}: ${on ? 'calls are held for approval' : 'calls run at once'}`)}
        />
      ),
    },
    {
      key: 'read_only',
      label: 'Read-only',
      value: (t) => (t.read_only || readOnlyConnector(byId.get(t.connector_id)) ? 1 : 0),
      render: (t) =>
        readOnlyConnector(byId.get(t.connector_id)) ? (
          <span class="locked" title="The connector does not allow writes">
            Read-only (connector)
          </span>
        ) : (
          <Switch
            label={`Read-only: ${t.name}`}
            on={t.read_only}
            onChange={(on) => patch(t, { read_only: on }, `${t.name}: ${on ? 'read-only' : 'may write'}`)}
          />
        ),
    },
    {
      key: 'actions',
      label: 'Actions',
      value: () => '',
      render: (t) => (
        <button type="button" class="secondary" onClick={() => onEdit(t)} aria-label={`Edit ${t.name}`}>
          Edit
        </button>
      ),
    },
  ];
}

function ToolList({ session }: PageProps) {
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const [connectorId, setConnectorId] = useState('');
  const tools = useLoad(
    () => call(rest.listTools({ client, path: { orgId: session.org_id }, query: connectorId ? { connector_id: connectorId } : {} })),
    [connectorId],
  );
  const [editing, setEditing] = useState<string | null>(null);
  const action = useAction();
  const selection = useSelection();
  const patch: Patch = (tool, body, done) =>
    action.run(() => call(rest.updateToolMetadata({ client, path: { orgId: session.org_id, toolId: tool.id }, body })), done).then(tools.reload);
  const list = tools.data?.tools ?? [];
  const all = connectors.data?.connectors ?? [];
  return (
    <Page title="Tools">
      <div class="field inline">
        <label for="tool-filter">Connector</label>
        <select id="tool-filter" value={connectorId} onChange={(e) => setConnectorId(e.currentTarget.value)}>
          <option value="">All connectors</option>
          {all.map((c) => (
            <option value={c.id}>{c.name}</option>
          ))}
        </select>
      </div>
      <Loading loading={tools.loading && !tools.data} />
      <ErrorBox error={tools.error ?? action.error} />
      {tools.data && list.length === 0 && (
        <Empty>
          No tools yet. Tools appear when a connector becomes active: <a href="#/connectors">add a connector</a>.
        </Empty>
      )}
      {list.length > 0 && <BulkBar orgId={session.org_id} listed={list} selection={selection} run={action.run} done={tools.reload} />}
      {list.length > 0 && (
        <DataTable
          caption="Tools"
          columns={[selectColumn(selection), ...toolColumns(all, patch, (t) => setEditing(editing === t.id ? null : t.id))]}
          rows={list}
          rowKey={(t) => t.id}
          rowTestId={(t) => `tool-${t.tool_name}`}
          rowClass={(t) => (t.enabled ? undefined : 'row-disabled')}
          after={(t) => editing === t.id && <ToolEditor tool={t} orgId={session.org_id} onDone={() => (setEditing(null), tools.reload())} />}
        />
      )}
    </Page>
  );
}

/** The calls of one tool (the audit log by target), newest first. */
export function CallsTable({ events, caption }: { events: AuditEvent[]; caption: string }) {
  const dir = useDirectory();
  const columns: Column<AuditEvent>[] = [
    { key: 'when', label: 'When', value: (e) => e.created_at, render: (e) => when(e.created_at) },
    { key: 'action', label: 'Action', value: (e) => e.action },
    { key: 'by', label: 'By', value: (e) => e.actor.id ?? e.actor.type, render: (e) => <Actor dir={dir} actor={e.actor} /> },
    { key: 'outcome', label: 'Outcome', value: (e) => e.outcome, render: (e) => <span class={`status status-${e.outcome}`}>{e.outcome}</span> },
    {
      key: 'duration',
      label: 'Duration',
      value: (e) => Number(e.details.duration_ms ?? -1),
      render: (e) => (e.details.duration_ms === undefined ? '—' : `${e.details.duration_ms} ms`),
    },
    { key: 'rows', label: 'Rows', value: (e) => Number(e.details.row_count ?? -1), render: (e) => String(e.details.row_count ?? '—') },
    { key: 'reason', label: 'Reason', value: (e) => String(e.details.reason ?? ''), render: (e) => String(e.details.reason ?? '') },
  ];
  return <DataTable caption={caption} columns={columns} rows={events} rowKey={(e) => e.id} />;
}

function ToolDetail({ session, id }: PageProps & { id: string }) {
  const tools = useLoad(() => call(rest.listTools({ client, path: { orgId: session.org_id } })));
  const tool = tools.data?.tools.find((t) => t.id === id);
  const calls = useLoad(
    () => (tool ? call(rest.listAuditEvents({ client, query: { target_id: tool.name, limit: 50 } })) : Promise.resolve(null)),
    [tool?.name],
    5000,
  );
  return (
    <Page title={tool ? `Tool ${tool.name}` : 'Tool'} actions={<a href="#/tools">All tools</a>}>
      <Loading loading={tools.loading && !tools.data} />
      <ErrorBox error={tools.error ?? calls.error} />
      {tools.data && !tool && <p class="error">No such tool.</p>}
      {tool && (
        <>
          <p>{tool.description}</p>
          <dl class="facts">
            <dt>Connector</dt>
            <dd>
              <a href={`#/connectors/${tool.connector_id}`}>{tool.connector_name}</a> ({tool.connector_type})
            </dd>
            <dt>Enabled</dt>
            <dd>{tool.enabled ? 'yes' : 'no'}</dd>
            <dt>Requires approval</dt>
            <dd>{tool.requires_approval ? `yes, by ${tool.approval_emails.join(', ') || 'any admin'}, expires after ${tool.approval_ttl_seconds} s` : 'no'}</dd>
            <dt>Read-only</dt>
            <dd>{tool.read_only ? 'yes' : 'no'}</dd>
            <dt>Id</dt>
            <dd>
              <code>{tool.id}</code>
            </dd>
          </dl>
          <ToolEditor key={tool.id} tool={tool} orgId={session.org_id} onDone={tools.reload} />
          {takesPolicy(tool.connector_type) && tool.saved && <SavedPolicyNote />}
          {takesPolicy(tool.connector_type) && !tool.saved && can(session, 'admin') && (
            <PolicySection key={`p-${tool.id}`} tool={tool} orgId={session.org_id} onDone={tools.reload} />
          )}
          <h2>Refused statements (last 7 days)</h2>
          <FingerprintsTable days={7} tool={tool.name} caption="Refused statements" />
          <h2>Recent calls</h2>
          {calls.data && calls.data.events.length === 0 && (
            <Empty>
              No calls yet. Try it in the <a href="#/playground">playground</a>.
            </Empty>
          )}
          {calls.data && calls.data.events.length > 0 && <CallsTable events={calls.data.events} caption="Recent calls" />}
        </>
      )}
    </Page>
  );
}

export function ToolsPage(props: PageProps) {
  return props.id ? <ToolDetail {...props} id={props.id} /> : <ToolList {...props} />;
}
