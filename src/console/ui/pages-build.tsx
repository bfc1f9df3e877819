/** Pages for building the org's MCP server: overview and tools (connectors are in pages-connectors.tsx). */
import { useState } from 'preact/hooks';
import { call, client, rest, type SessionInfo, type Tool } from './api.ts';
import { can, CopyButton, ErrorBox, Loading, Page, useAction, useLoad } from './kit.tsx';

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
              <button
                type="button"
                disabled={provision.pending}
                onClick={() => provision.run(() => call(rest.provisionOrg({ client, path: { orgId: session.org_id } }))).then(status.reload)}
              >
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
          <dd>
            {l
              ? `${l.tool_calls_used} of ${l.monthly_tool_calls ?? 'unlimited'} tool calls`
              : org.data
                ? `quota ${org.data.monthly_tool_calls ?? 'unlimited'} tool calls (usage: finance role)`
                : '…'}
          </dd>
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

/** A tool's row with its switches, and its editor below it while open. */
function ToolRows({
  tool: t,
  editing,
  orgId,
  patch,
  onEdit,
  onEdited,
}: {
  tool: Tool;
  editing: boolean;
  orgId: string;
  patch: (tool: Tool, body: Record<string, unknown>) => unknown;
  onEdit: () => void;
  onEdited: () => void;
}) {
  return (
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
          <button type="button" class="secondary" onClick={onEdit}>
            Edit
          </button>
        </td>
      </tr>
      {editing && (
        <tr>
          <td colSpan={6}>
            <ToolEditor tool={t} orgId={orgId} onDone={onEdited} />
          </td>
        </tr>
      )}
    </>
  );
}

export function ToolsPage({ session }: { session: SessionInfo }) {
  const connectors = useLoad(() => call(rest.listConnectors({ client })));
  const [connectorId, setConnectorId] = useState('');
  const tools = useLoad(
    () => call(rest.listTools({ client, path: { orgId: session.org_id }, query: connectorId ? { connector_id: connectorId } : {} })),
    [connectorId],
  );
  const [editing, setEditing] = useState<string | null>(null);
  const action = useAction();
  const patch = (tool: Tool, body: Record<string, unknown>) =>
    action.run(() => call(rest.updateToolMetadata({ client, path: { orgId: session.org_id, toolId: tool.id }, body }))).then(tools.reload);
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
              <ToolRows
                key={t.id}
                tool={t}
                editing={editing === t.id}
                orgId={session.org_id}
                patch={patch}
                onEdit={() => setEditing(editing === t.id ? null : t.id)}
                onEdited={() => (setEditing(null), tools.reload())}
              />
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
