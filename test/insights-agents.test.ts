/**
 * Issue 41 item 3 through REST and the generated client: the Overview's figures per agent (an API key, an OAuth client,
 * a member), by reason class, by refused fingerprint (the org's and a tool's) and by connector equal the audit rows
 * their links select (web/console/insight-links.ts, the filters the console links with), listed through
 * GET /api/audit; p95 per agent equals the percentile of the listed rows' durations; the share of the quota is the
 * agent's counted calls over the plan's. Billing: the period's charges and usage per agent (named), for finance only;
 * insights for contributors only. Calls go through the real write path (tools/call on PostgreSQL and MariaDB).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { chargesFor } from '../src/billing/charges.ts';
import { PLAN_PRICES } from '../src/limits/plans.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { agentActor, countFilter, fingerprintFilter, reasonFilter, type AuditFilter } from '../web/console/insight-links.ts';
import { verifies } from './requirements.ts';
import { BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { callTool, createConnector, rpc } from './support/mcp.ts';
import { sdkAt, sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const up = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
if (!up) console.warn('insights-agents.test.ts: PostgreSQL or MariaDB is not reachable; the suite is skipped');

const PG_TOOL = 'query_postgresql_items';
const MY_TOOL = 'query_mysql_items';

/** percentile_cont over values, as PostgreSQL computes it. */
function percentile(values: number[], fraction: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = fraction * (sorted.length - 1);
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return Math.round((sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo)) * 10) / 10;
}

describe.skipIf(!up)('insights per agent, reason and fingerprint, and billing per agent, against the rows they count', () => {
  let g: TestGateway;
  let t: Targets;
  let org: Onboarded;
  let admin: sdk.Toolgate['client'];
  let pgId: string;
  let myId: string;
  let member: { cookie: string; csrf: string };
  const memberClient = (session: { cookie: string; csrf: string }) =>
    sdkAt(
      BASE,
      ((input: RequestInfo | URL, init?: RequestInit) => {
        const request = new Request(input, init);
        request.headers.delete('authorization');
        request.headers.set('cookie', session.cookie);
        request.headers.set('x-toolgate-csrf', session.csrf);
        return g.handle(request);
      }) as typeof fetch,
      'session',
    ).client;

  async function signIn(email: string, password: string, address: string) {
    const request = new Request(`${BASE}/console/auth/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ org: org.slug, email, password }),
    });
    notePeerAddress(request, address);
    const response = await g.handle(request);
    expect(response.status).toBe(200);
    const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
    const session = await g.handle(new Request(`${BASE}/console/session`, { headers: { cookie } }));
    return { cookie, csrf: ((await session.json()) as { csrf_token: string }).csrf_token };
  }

  beforeAll(async () => {
    t = await createTargets('tg_insights');
    g = await startTestGateway('postgres');
    // Growth: a monthly quota (50,000), so each agent has a share of it; a burst far above what the test sends.
    org = await onboard(g, undefined, 'growth', 100_000);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    admin = sdkFor(g, token).client;
    pgId = (await createConnector(g, token, { name: 'shop', type: 'postgresql', config: t.pgConfig })).id;
    myId = (await createConnector(g, token, { name: 'mart', type: 'mysql', config: t.myConfig })).id;
    await addMember(g, token, 'ann@org.example', 'ann password 0001', ['contributor']);
    await addMember(g, token, 'fin@org.example', 'fin password 0001', ['finance']);
    member = await signIn('ann@org.example', 'ann password 0001', '198.51.100.7');

    const key = { apiKey: org.apiKey };
    const oauth = { token };
    for (const q of ['SELECT name FROM items', 'SELECT id FROM items', 'SELECT price FROM items']) await callTool(g, org.slug, key, PG_TOOL, { sql: q });
    await callTool(g, org.slug, key, PG_TOOL, { sql: 'SELECT 1 / (id - id) FROM items' });
    await callTool(g, org.slug, key, PG_TOOL, { sql: "DELETE FROM items WHERE name = 'a'" });
    await callTool(g, org.slug, key, PG_TOOL, { sql: "DELETE FROM items WHERE name = 'b'" });
    await callTool(g, org.slug, key, PG_TOOL, { sql: 'SELECT name FROM items; DROP TABLE items' });
    await callTool(g, org.slug, key, 'query_postgresql_missing', { sql: 'SELECT 1' });
    await callTool(g, org.slug, oauth, MY_TOOL, { sql: 'SELECT name FROM items' });
    await callTool(g, org.slug, oauth, MY_TOOL, { sql: 'SELECT id FROM items' });
    await callTool(g, org.slug, oauth, MY_TOOL, { sql: 'SELECT 1 FROM items WHERE nope = 1' });
    await callTool(g, org.slug, oauth, MY_TOOL, { sql: "UPDATE items SET name = 'x' WHERE id = 1" });
    // The member calls with the console session as its credential (decision 0335).
    const headers = { cookie: member.cookie, 'x-toolgate-csrf': member.csrf };
    for (const args of [{ sql: 'SELECT name FROM items' }, { sql: "DELETE FROM items WHERE name = 'c'" }]) {
      const answer = await rpc(g, org.slug, null, 'tools/call', { name: PG_TOOL, arguments: args }, headers);
      expect(answer.status).toBe(200);
    }
    await g.deps.audit.drain();
  }, 120_000);

  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 30_000);

  /** Every row the audit list gives for a filter (every page), as the console's audit page lists them. */
  async function rowsOf(filter: AuditFilter) {
    const events: sdk.AuditEvent[] = [];
    let cursor: string | undefined;
    do {
      const page = (await sdk.listAuditEvents({ client: admin, throwOnError: true, query: { ...filter, limit: 200, ...(cursor ? { cursor } : {}) } })).data;
      events.push(...page.events);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return events;
  }

  test('per agent: calls, refusals, errors and p95 are the rows their links list; the quota share is the counted calls over the plan', async () => {
    const i = (await sdk.getInsights({ client: admin, throwOnError: true, query: { days: 1 } })).data;
    const byActor = new Map(i.by_agent.map((a) => [agentActor(a.agent), a]));
    const keyId = (await sdk.listApiKeys({ client: admin, throwOnError: true })).data.api_keys[0]!;
    expect(byActor.get(`api_key:${keyId.id}`)).toMatchObject({ agent: { name: keyId.name }, calls: 4, refusals: 4, errors: 1, period_tool_calls: 4 });
    expect(byActor.get(`oauth_client:${org.clientId}`)).toMatchObject({ calls: 3, refusals: 1, errors: 1, period_tool_calls: 3 });
    expect(byActor.get('user:ann@org.example')).toMatchObject({ agent: { name: 'ann@org.example' }, calls: 1, refusals: 1, errors: 0 });
    expect(i.by_agent).toHaveLength(3);
    const month = new Date();
    const periodStart = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1)).toISOString();
    for (const a of i.by_agent) {
      const actor = agentActor(a.agent)!;
      for (const what of ['calls', 'refusals', 'errors'] as const) expect((await rowsOf(countFilter(what, i.since, { actor }))).length).toBe(a[what]);
      const ran = (await rowsOf(countFilter('calls', i.since, { actor }))).filter((e) => e.outcome !== 'held').map((e) => Number(e.details.duration_ms));
      // Durations as the roll-ups keep them (decision 0412, audit_latency_bucket): 0.1 ms under 1 ms, above it the
      // middle of a logarithmic bucket (20 per decade) to 3 significant digits; so the p95 is that of the kept values,
      // and within 6% of the exact one.
      const kept = ran.map((d) => (d < 0.95 ? Math.round(d * 10) / 10 : Number((10 ** (Math.round(Math.log10(d) * 20) / 20)).toPrecision(3))));
      expect(a.p95_ms).toBe(percentile(kept, 0.95));
      expect(a.p50_ms).toBe(percentile(kept, 0.5));
      expect(Math.abs(a.p95_ms! - percentile(ran, 0.95)!)).toBeLessThanOrEqual(percentile(ran, 0.95)! * 0.06 + 0.1);
      const counted = (await rowsOf({ action: 'tool.called', actor, from: periodStart })).filter((e) => e.details.counted === true).length;
      expect([a.period_tool_calls, a.quota_share]).toEqual([counted, counted / 50_000]);
    }
  });

  test('by reason class, by fingerprint (the org and a tool) and errors by connector: each figure is the rows its link lists', async () => {
    const i = (await sdk.getInsights({ client: admin, throwOnError: true, query: { days: 1 } })).data;
    expect(i.refusals_by_reason).toEqual([
      { reason_class: 'write', refusals: 4 },
      { reason_class: 'multiple_statements', refusals: 1 },
      { reason_class: null, refusals: 1 },
    ]);
    for (const r of i.refusals_by_reason) expect((await rowsOf(reasonFilter(i.since, r.reason_class))).length).toBe(r.refusals);
    // Reasons add up to the refusals, and the connector's errors are its rows.
    expect(i.refusals_by_reason.reduce((n, r) => n + r.refusals, 0)).toBe(i.totals.refusals);
    for (const c of i.by_connector.filter((c) => c.connector_id)) {
      expect((await rowsOf(countFilter('errors', i.since, { connector_id: c.connector_id }))).length).toBe(c.errors);
    }
    expect(i.by_connector.find((c) => c.connector_id === myId)?.errors).toBe(1);
    expect(i.by_connector.find((c) => c.connector_id === pgId)?.errors).toBe(1);

    const top = (await sdk.listRefusedFingerprints({ client: admin, throwOnError: true, query: { days: 1 } })).data;
    expect(top.fingerprints[0]).toMatchObject({ fingerprint: 'delete from items where name = ?', reason_classes: ['write'], refusals: 3 });
    expect(top.fingerprints.map((f) => f.refusals)).toEqual([3, 1, 1]);
    for (const f of top.fingerprints) expect((await rowsOf(fingerprintFilter(top.since, f.fingerprint_id))).length).toBe(f.refusals);
    const ofTool = (await sdk.listRefusedFingerprints({ client: admin, throwOnError: true, query: { days: 7, tool: MY_TOOL } })).data;
    expect(ofTool.fingerprints).toEqual([expect.objectContaining({ fingerprint: 'update items set name = ? where id = ?', refusals: 1 })]);
    for (const f of ofTool.fingerprints) expect((await rowsOf(fingerprintFilter(ofTool.since, f.fingerprint_id, MY_TOOL))).length).toBe(f.refusals);
    // Once the org keeps no statement text, the latest row of a fingerprint has none: it is listed by id, with no text.
    await sdk.updateOrg({ client: admin, throwOnError: true, body: { audit_statements: 'none' } });
    await callTool(g, org.slug, { apiKey: org.apiKey }, MY_TOOL, { sql: "UPDATE items SET name = 'y' WHERE id = 2" });
    await g.deps.audit.drain();
    const hidden = (await sdk.listRefusedFingerprints({ client: admin, throwOnError: true, query: { tool: MY_TOOL } })).data.fingerprints;
    expect(hidden).toEqual([{ fingerprint_id: ofTool.fingerprints[0]!.fingerprint_id, fingerprint: null, reason_classes: ['write'], refusals: 2 }]);
    await sdk.updateOrg({ client: admin, throwOnError: true, body: { audit_statements: 'fingerprint' } });
  });

  test('roles: insights for contributors, not finance; billing for finance, not contributors', async () => {
    verifies('BILLING-ENDPOINTS');
    const finance = memberClient(await signIn('fin@org.example', 'fin password 0001', '198.51.100.8'));
    const contributor = memberClient(member);
    expect((await sdk.getInsights({ client: finance })).response.status).toBe(403);
    expect((await sdk.listRefusedFingerprints({ client: finance })).response.status).toBe(403);
    expect((await sdk.getInsights({ client: contributor })).response.status).toBe(200);
    expect((await sdk.getUsage({ client: contributor })).response.status).toBe(403);
    expect((await sdk.getSubscription({ client: contributor })).response.status).toBe(403);
    const usage = (await sdk.getUsage({ client: finance, throwOnError: true })).data;
    // Counted calls per agent, named for finance (who cannot read the directory), adding up to the counter.
    expect(usage.tool_calls).toBe(8);
    expect(usage.by_agent.map((a) => [a.agent.type, a.tool_calls])).toEqual([
      ['api_key', 4],
      ['oauth_client', 3],
      ['user', 1],
    ]);
    expect(usage.by_agent[1]!.agent.name).toBe((await sdk.listOAuthClients({ client: admin, throwOnError: true })).data.oauth_clients[0]!.name);
    // A trialing org is charged nothing yet; once active, the Growth base.
    expect(usage.charges).toMatchObject({ priced: true, currency: 'USD', amount: 0 });
    await g.deps.store.db.execute(sql`UPDATE orgs SET subscription_status = 'active' WHERE id = ${org.orgId}`);
    const active = (await sdk.getUsage({ client: finance, throwOnError: true })).data;
    expect(active.charges).toEqual({
      priced: true,
      currency: 'USD',
      amount: 14_900,
      line_items: [{ kind: 'base', description: 'Growth plan, monthly base', quantity: 1, unit_amount: 14_900, amount: 14_900 }],
    });
  });
});

describe('charges (unit)', () => {
  test('the base, the calls beyond the included ones per started block, credits; no list price for contract plans', () => {
    const scale = PLAN_PRICES.scale!;
    const over = (calls: number) => chargesFor('scale', 'active', calls);
    expect(over(scale.includedToolCalls).amount).toBe(scale.monthlyBase);
    expect(over(scale.includedToolCalls + 1).line_items[1]).toMatchObject({ kind: 'overage', quantity: 1, amount: scale.overagePerBlock });
    expect(over(scale.includedToolCalls + scale.overageBlock).line_items[1]).toMatchObject({ quantity: 1 });
    expect(over(scale.includedToolCalls + scale.overageBlock + 1).amount).toBe(scale.monthlyBase + 2 * scale.overagePerBlock);
    // Starter and Growth stop at their quota: no overage line whatever the count.
    expect(chargesFor('growth', 'active', 60_000).line_items).toHaveLength(1);
    for (const status of ['trialing', 'expired', 'canceled']) expect(chargesFor('scale', status, scale.includedToolCalls + 5000).amount).toBe(0);
    expect(chargesFor('scale', 'past_due', 0).amount).toBe(scale.monthlyBase);
    expect(chargesFor('enterprise', 'active', 10)).toEqual({ priced: false, currency: null, amount: null, line_items: [] });
    expect(chargesFor('standalone', 'active', 10).priced).toBe(false);
  });
});
