/**
 * The Overview's insight tables of issue 41 item 3: refusals by reason class, the most refused statements (also on a
 * tool's page), and the figures per agent. Every count links to the audit rows it counts (insight-links.ts).
 */
import { call, client, rest, type Agent, type Insights, type RefusedFingerprints } from './api.ts';
import { DataTable, Empty, Named, type Column } from './controls.tsx';
import { agentActor, countFilter, fingerprintFilter, reasonFilter, type AuditFilter, type Counted } from './insight-links.ts';
import { ErrorBox, Loading, useLoad } from './kit.tsx';
import { auditHref } from './pages-audit.tsx';

/** A count as a link to the audit page filtered to exactly its rows. */
export function CountLink({ filter, n, what }: { filter: AuditFilter; n: number; what: string }) {
  return (
    <a href={auditHref(filter)} data-count={what}>
      {n}
    </a>
  );
}

/** An agent as the console names it (the audit page's Actor column words it the same way). */
export function agentLabel(agent: Agent): string {
  if (agent.id === null) return agent.type === 'system' ? 'the gateway (approved calls)' : agent.type;
  if (agent.type === 'api_key') return `API key ${agent.name ?? agent.id.slice(0, 8)}`;
  if (agent.type === 'oauth_client') return `client ${agent.name ?? agent.id}`;
  return agent.name ?? agent.id;
}

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
const percent = (share: number | null) => (share === null ? 'no quota' : `${(share * 100).toFixed(share < 0.001 && share > 0 ? 3 : 1)}%`);

type AgentRow = Insights['by_agent'][number];

function agentColumns(since: string): Column<AgentRow>[] {
  // An agent the actor filter cannot select (the gateway's approved calls) has plain counts.
  const count = (what: Counted) => (r: AgentRow) => {
    const actor = agentActor(r.agent);
    return actor ? <CountLink filter={countFilter(what, since, { actor })} n={r[what as 'calls']} what={what} /> : r[what as 'calls'];
  };
  return [
    { key: 'agent', label: 'Agent', value: (r) => agentLabel(r.agent), render: (r) => <Named name={agentLabel(r.agent)} id={r.agent.id} /> },
    { key: 'calls', label: 'Calls', value: (r) => r.calls, render: count('calls') },
    { key: 'refusals', label: 'Refusals', value: (r) => r.refusals, render: count('refusals') },
    { key: 'errors', label: 'Errors', value: (r) => r.errors, render: count('errors') },
    { key: 'p95', label: 'p95', value: (r) => r.p95_ms ?? -1, render: (r) => ms(r.p95_ms) },
    {
      key: 'quota',
      label: 'Share of monthly quota',
      value: (r) => r.quota_share ?? -1,
      render: (r) => <span title={`${r.period_tool_calls} calls counted this month`}>{percent(r.quota_share)}</span>,
    },
  ];
}

export function AgentsTable({ i }: { i: Insights }) {
  if (i.by_agent.length === 0) return null;
  return <DataTable caption="Calls by agent" columns={agentColumns(i.since)} rows={i.by_agent} rowKey={(r) => `${r.agent.type}:${r.agent.id}`} />;
}

type ReasonRow = Insights['refusals_by_reason'][number];

export function ReasonsTable({ i }: { i: Insights }) {
  if (i.refusals_by_reason.length === 0) return null;
  const columns: Column<ReasonRow>[] = [
    {
      key: 'reason',
      label: 'Reason class',
      value: (r) => r.reason_class ?? '',
      render: (r) => (r.reason_class ? <code>{r.reason_class}</code> : 'refused before a statement ran (tool, scope, arguments, quota)'),
    },
    {
      key: 'refusals',
      label: 'Refusals',
      value: (r) => r.refusals,
      render: (r) => <CountLink filter={reasonFilter(i.since, r.reason_class)} n={r.refusals} what="reason" />,
    },
  ];
  return <DataTable caption="Refusals by reason" columns={columns} rows={i.refusals_by_reason} rowKey={(r) => r.reason_class ?? 'none'} />;
}

type FingerprintRow = RefusedFingerprints['fingerprints'][number];

/** The window's most refused statements (of one tool when `tool` is given), each linking to its refused rows. */
export function FingerprintsTable({ days, tool, caption }: { days: number; tool?: string; caption: string }) {
  const loaded = useLoad(() => call(rest.listRefusedFingerprints({ client, query: { days, ...(tool ? { tool } : {}) } })), [days, tool], 15_000);
  const f = loaded.data;
  const columns: Column<FingerprintRow>[] = [
    {
      key: 'statement',
      label: 'Statement (literals removed)',
      value: (r) => r.fingerprint ?? r.fingerprint_id,
      render: (r) => (r.fingerprint ? <code>{r.fingerprint}</code> : <span class="hint">{r.fingerprint_id} (text not kept)</span>),
    },
    { key: 'classes', label: 'Reason class', value: (r) => r.reason_classes.join(', ') },
    {
      key: 'refusals',
      label: 'Refusals',
      value: (r) => r.refusals,
      render: (r) => <CountLink filter={fingerprintFilter(f!.since, r.fingerprint_id, tool)} n={r.refusals} what="fingerprint" />,
    },
  ];
  return (
    <>
      <ErrorBox error={loaded.error} />
      <Loading loading={loaded.loading && !f} />
      {f && f.fingerprints.length === 0 && tool && <Empty>No refused statements in this window.</Empty>}
      {f && f.fingerprints.length > 0 && <DataTable caption={caption} columns={columns} rows={f.fingerprints} rowKey={(r) => r.fingerprint_id} />}
    </>
  );
}
