// What the console needs from REST (issue 31): names by id (directory, usage by connector), insights computed from the
// audit trail (calls, refusals, p50/p95 per tool and over time), the audit log by target, and a connection test that
// writes nothing and names TLS when TLS is the cause.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const pgUp = await serviceAvailable('postgres');
if (!pgUp) console.warn('[skip] PostgreSQL is not reachable: console-rest is skipped');

let g: TestGateway;
let t: Targets;
let org: Onboarded;
let client: ReturnType<typeof sdkFor>['client'];
let connectorId: string;

beforeAll(async () => {
  if (!pgUp) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_crest', 'pg')]);
  org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  client = sdkFor(g, token).client;
  connectorId = (await createConnector(g, token, { name: 'shop', type: 'postgresql', config: t.pgConfig })).id;
});
afterAll(async () => {
  await g?.close();
  await t?.drop();
});

test.skipIf(!pgUp)('insights count calls, errors and refusals per tool, with latency percentiles and every bucket', async () => {
  const agent = { apiKey: org.apiKey };
  for (let i = 0; i < 4; i++)
    expect((await callTool(g, org.slug, agent, 'query_postgresql_items', { sql: 'SELECT name FROM items' })).body.result.isError).toBeFalsy();
  expect((await callTool(g, org.slug, agent, 'query_postgresql_items', { sql: 'SELECT nope FROM items' })).body.result.isError).toBe(true);
  await callTool(g, org.slug, agent, 'query_postgresql_nothing', { sql: 'SELECT 1' });
  let insights = (await sdk.getInsights({ client, throwOnError: true })).data;
  for (let i = 0; i < 50 && insights.totals.calls + insights.totals.refusals < 6; i++) {
    await Bun.sleep(100);
    insights = (await sdk.getInsights({ client, throwOnError: true })).data;
  }
  expect(insights.bucket).toBe('hour');
  expect(insights.series).toHaveLength(24);
  expect(insights.series.reduce((n, s) => n + s.calls, 0)).toBe(5);
  expect(insights.totals).toMatchObject({ calls: 5, errors: 1, refusals: 1, held: 0 });
  expect(insights.totals.p50_ms).toBeGreaterThan(0);
  expect(insights.totals.p95_ms!).toBeGreaterThanOrEqual(insights.totals.p50_ms!);
  const items = insights.by_tool.find((r) => r.tool_name === 'query_postgresql_items')!;
  expect(items).toMatchObject({ connector_id: connectorId, calls: 5, errors: 1, refusals: 0 });
  expect(insights.by_tool.find((r) => r.tool_name === 'query_postgresql_nothing')).toMatchObject({ calls: 0, refusals: 1, connector_id: null });
  // Per connector: its own calls and percentiles; the refusal of an unknown tool has no connector.
  expect(insights.by_connector.find((r) => r.connector_id === connectorId)).toMatchObject({ calls: 5, errors: 1, refusals: 0 });
  expect(insights.by_connector.find((r) => r.connector_id === connectorId)!.p50_ms).toBeGreaterThan(0);
  expect(insights.by_connector.find((r) => r.connector_id === null)).toMatchObject({ calls: 0, refusals: 1 });
  const week = (await sdk.getInsights({ client, throwOnError: true, query: { days: 7 } })).data;
  expect(week.bucket).toBe('day');
  expect(week.series).toHaveLength(7);
  expect(week.totals.calls).toBe(5);
  // The contract's schema refuses what is not a number of days.
  const bad = await sdk.getInsights({ client, query: { days: 'abc' as never } });
  expect(bad.response.status).toBe(400);
  // The audit log by target: the tool's calls only.
  const byTool = (await sdk.listAuditEvents({ client, throwOnError: true, query: { target_id: 'query_postgresql_items', limit: 50 } })).data;
  expect(byTool.events.length).toBe(5);
  expect(new Set(byTool.events.map((e) => e.target_id))).toEqual(new Set(['query_postgresql_items']));
});

test.skipIf(!pgUp)('the directory names credentials, connectors and tools; usage by connector carries the name', async () => {
  const dir = (await sdk.getOrgDirectory({ client, throwOnError: true })).data;
  expect(dir.org.slug).toBe(org.slug);
  expect(dir.connectors).toContainEqual({ id: connectorId, name: 'shop', type: 'postgresql', archived: false });
  expect(dir.api_keys.map((k) => k.name)).toContain('default');
  expect(dir.oauth_clients.find((c) => c.client_id === org.clientId)).toBeDefined();
  expect(dir.tools.filter((x) => x.connector_id === connectorId).map((x) => x.name)).toContain('query_postgresql_items');
  expect(JSON.stringify(dir)).not.toMatch(/tgk_|tgs_|secret/);
  const usage = (await sdk.getUsage({ client, throwOnError: true })).data;
  expect(usage.by_connector).toEqual([{ connector_id: connectorId, connector_name: 'shop', tool_calls: 4 + 1 }]);
});

test.skipIf(!pgUp)('test connection: ok with the tool count, TLS named when TLS is the cause, nothing written', async () => {
  const before = (await sdk.listConnectors({ client, throwOnError: true })).data.connectors.length;
  const ok = await sdk.testConnector({ client, throwOnError: true, body: { type: 'postgresql', config: t.pgConfig } });
  expect(ok.data).toEqual({ ok: true, reason: null, tools: expect.any(Number) });
  expect(ok.data.tools!).toBeGreaterThanOrEqual(2);
  const { tls: _tls, ...noTls } = t.pgConfig;
  const tls = (await sdk.testConnector({ client, throwOnError: true, body: { type: 'postgresql', config: noTls } })).data;
  expect(tls.ok).toBe(false);
  expect(tls.reason).toContain('does not accept TLS (tls is "require")');
  // The saved connector's credential is used when none is sent (here: none stored, the server trusts the user).
  const saved = (await sdk.testConnector({ client, throwOnError: true, body: { type: 'postgresql', config: t.pgConfig, connector_id: connectorId } })).data;
  expect(saved.ok).toBe(true);
  const invalid = await sdk.testConnector({ client, body: { type: 'postgresql', config: { host: 'x' } as never } });
  expect(invalid.response.status).toBe(400);
  expect((await sdk.listConnectors({ client, throwOnError: true })).data.connectors.length).toBe(before);
});
