/**
 * The audit filters that select exactly the rows a figure of the insights counts (GET /api/insights, GET
 * /api/insights/fingerprints; decisions 0358, 0390): every count on the Overview and a tool's page links to the audit
 * page with these, from the window's `since`. Pure, so test/insights-agents.test.ts lists the same rows through REST.
 *  - calls: `tool.called` rows with outcome success, error or held; errors and held: that one outcome;
 *  - refusals: `tool.call_refused` rows (outcome denied) and refused `tool.called` rows;
 *  - refusals of a reason class: refused `tool.called` rows of that class; the class-less figure: `tool.call_refused`;
 *  - a fingerprint: refused `tool.called` rows of that fingerprint id (of the tool, on a tool's page);
 *  - narrowed to a connector, a tool or an agent (`actor`) for the figures of its row.
 */
export type Counted = 'calls' | 'refusals' | 'errors' | 'held';
export type AuditFilter = Record<string, string>;

const COUNTED: Record<Counted, { action: string; outcome: string }> = {
  calls: { action: 'tool.called', outcome: 'success,error,held' },
  refusals: { action: 'tool.', outcome: 'refused,denied' },
  errors: { action: 'tool.called', outcome: 'error' },
  held: { action: 'tool.called', outcome: 'held' },
};

/** What narrows a figure to its row: a connector, a tool, an agent (`<type>:<id>`). */
export interface Narrowing {
  connector_id?: string | null;
  tool?: string;
  actor?: string | null;
}

const defined = (narrowing: Narrowing): AuditFilter =>
  Object.fromEntries(Object.entries(narrowing).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));

export function countFilter(what: Counted, since: string, narrowing: Narrowing = {}): AuditFilter {
  return { ...COUNTED[what], from: since, ...defined(narrowing) };
}

/** Agents the audit's actor filter can select (an actor with an id of a filterable type); null for the others. */
export function agentActor(agent: { type: string; id: string | null }): string | null {
  return agent.id !== null && ['api_key', 'oauth_client', 'user', 'operator'].includes(agent.type) ? `${agent.type}:${agent.id}` : null;
}

export function reasonFilter(since: string, reasonClass: string | null): AuditFilter {
  return reasonClass === null
    ? { action: 'tool.call_refused', from: since }
    : { action: 'tool.called', outcome: 'refused', reason_class: reasonClass, from: since };
}

export function fingerprintFilter(since: string, fingerprintId: string, tool?: string | null): AuditFilter {
  return { action: 'tool.called', outcome: 'refused', fingerprint_id: fingerprintId, from: since, ...defined({ tool: tool ?? undefined }) };
}
