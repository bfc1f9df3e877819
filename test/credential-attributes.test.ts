// Issue 38 item 6: the attributes of API keys and OAuth clients are set after creation (PATCH, admin only, audited),
// and a row filter binds them from the credential's next call: a key without the attribute is refused naming it,
// the same key once given the attribute reads its rows. Real PostgreSQL target, the generated client, the MCP endpoint.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const available = await serviceAvailable('postgres');

let g: TestGateway;
let t: Targets;
let org: Onboarded;
let client: ReturnType<typeof sdkFor>['client'];
let tool: string;

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_h5_attr', 'pg')]);
  await t.pg("CREATE TABLE people (id integer PRIMARY KEY, region text NOT NULL); INSERT INTO people VALUES (1, 'eu'), (2, 'eu'), (3, 'us')");
  org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  client = sdkFor(g, token).client;
  await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
  const people = (await sdk.listTools({ client, path: { orgId: org.orgId } })).data!.tools.find((x) => x.tool_name.includes('people'))!;
  const policy = { hidden_columns: [], masked_columns: [], row_filter: 'region = :caller.region' };
  expect((await sdk.updateToolMetadata({ client, path: { orgId: org.orgId, toolId: people.id }, body: { policy } })).response.status).toBe(200);
  tool = people.name;
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
});

const ids = (answer: Awaited<ReturnType<typeof callTool>>): number[] => answer.body.result.structuredContent.rows.map((r: { id: number }) => r.id);

describe.skipIf(!available)('credential attributes after creation', () => {
  test('an API key without the attribute is refused naming it; PATCH gives it one and its next call reads its rows', async () => {
    const made = await sdk.createApiKey({ client, body: { name: 'agent' } });
    expect(made.data!.attributes).toEqual({});
    const apiKey = made.data!.key;
    const sql = { sql: 'SELECT id FROM people ORDER BY id' };
    const before = await callTool(g, org.slug, { apiKey }, tool, sql);
    expect(before.body.result.isError).toBe(true);
    expect(before.body.result.content[0].text).toContain('needs the caller attribute "region", which this credential does not have');

    const patched = await sdk.updateApiKey({ client, path: { keyId: made.data!.id }, body: { attributes: { region: 'eu' } } });
    expect([patched.response.status, patched.data?.attributes]).toEqual([200, { region: 'eu' }]);
    expect(ids(await callTool(g, org.slug, { apiKey }, tool, sql))).toEqual([1, 2]);
    // The list shows what was set; a second PATCH replaces the whole set (us, and nothing of eu).
    const listed = (await sdk.listApiKeys({ client })).data!.api_keys.find((k) => k.id === made.data!.id)!;
    expect(listed.attributes).toEqual({ region: 'eu' });
    await sdk.updateApiKey({ client, path: { keyId: made.data!.id }, body: { attributes: { region: 'us', team: 'ops' } } });
    expect(ids(await callTool(g, org.slug, { apiKey }, tool, sql))).toEqual([3]);
    await sdk.updateApiKey({ client, path: { keyId: made.data!.id }, body: { attributes: {} } });
    expect((await callTool(g, org.slug, { apiKey }, tool, sql)).body.result.isError).toBe(true);

    // Audited with the attribute names (never their values).
    const audit = (await sdk.listAuditEvents({ client, query: { action: 'api_key.updated' } })).data as { events: Record<string, unknown>[] };
    const rows = audit.events.filter((e) => e.target_id === made.data!.id);
    expect(rows.map((e) => e.details)).toEqual([{ attributes: [] }, { attributes: ['region', 'team'] }, { attributes: ['region'] }]);
    expect(JSON.stringify(rows)).not.toContain('"eu"');
  });

  test('across a JOIN: read through a tool without a policy, the filtered table still needs the attribute, named with its table', async () => {
    const made = await sdk.createApiKey({ client, body: { name: 'joiner' } });
    const items = (await sdk.listTools({ client, path: { orgId: org.orgId } })).data!.tools.find((x) => x.tool_name.includes('items'))!.name;
    const sql = { sql: 'SELECT i.id, p.region FROM items i JOIN people p ON p.id = i.id ORDER BY i.id' };
    const refused = await callTool(g, org.slug, { apiKey: made.data!.key }, items, sql);
    expect(refused.body.result.isError).toBe(true);
    expect(refused.body.result.content[0].text).toStartWith('The row filter of public.people needs the caller attribute "region"');
    // The items table alone is read as before by the same key.
    expect(ids(await callTool(g, org.slug, { apiKey: made.data!.key }, items, { sql: 'SELECT id FROM items ORDER BY id' }))).toEqual([1, 2, 3]);
    await sdk.updateApiKey({ client, path: { keyId: made.data!.id }, body: { attributes: { region: 'eu' } } });
    const joined = (await callTool(g, org.slug, { apiKey: made.data!.key }, items, sql)).body.result;
    expect(joined.structuredContent.rows).toEqual([
      { id: 1, region: 'eu' },
      { id: 2, region: 'eu' },
    ]);
  });

  test("an OAuth client's attributes change for tokens it already holds", async () => {
    const made = await sdk.createOAuthClient({ client, body: { name: 'bot', scopes: ['mcp:call'] } });
    const bearer = await tokenFor(g, made.data!.client_id, made.data!.client_secret);
    const sql = { sql: 'SELECT id FROM people ORDER BY id' };
    expect((await callTool(g, org.slug, { token: bearer }, tool, sql)).body.result.content[0].text).toContain('"region"');
    const patched = await sdk.updateOAuthClient({ client, path: { clientId: made.data!.client_id }, body: { attributes: { region: 'us' } } });
    expect([patched.response.status, patched.data?.attributes]).toEqual([200, { region: 'us' }]);
    expect(ids(await callTool(g, org.slug, { token: bearer }, tool, sql))).toEqual([3]);
    const audit = (await sdk.listAuditEvents({ client, query: { action: 'oauth_client.updated' } })).data as { events: Record<string, unknown>[] };
    expect(audit.events.find((e) => e.target_id === made.data!.client_id)?.details).toEqual({ attributes: ['region'] });
  });

  test('refusals: a bad attribute name or value is 400, a revoked or unknown credential 404; nothing changes', async () => {
    const made = await sdk.createApiKey({ client, body: { name: 'x', attributes: { region: 'eu' } } });
    const keyId = made.data!.id;
    const bad = await sdk.updateApiKey({ client, path: { keyId }, body: { attributes: { 'no-dash': 'x' } } });
    expect(bad.response.status).toBe(400);
    const long = await sdk.updateApiKey({ client, path: { keyId }, body: { attributes: { region: 'x'.repeat(257) } } });
    expect(long.response.status).toBe(400);
    const missing = await sdk.updateApiKey({ client, path: { keyId }, body: {} as never });
    expect(missing.response.status).toBe(400);
    await sdk.revokeApiKey({ client, path: { keyId } });
    const revoked = await sdk.updateApiKey({ client, path: { keyId }, body: { attributes: { region: 'us' } } });
    expect([revoked.response.status, (revoked.error as { error: string }).error]).toEqual([404, 'api_key_not_found']);
    expect((await sdk.listApiKeys({ client })).data!.api_keys.find((k) => k.id === keyId)!.attributes).toEqual({ region: 'eu' });
    const unknown = await sdk.updateOAuthClient({ client, path: { clientId: 'tg_nope' }, body: { attributes: {} } });
    expect([unknown.response.status, (unknown.error as { error: string }).error]).toEqual([404, 'oauth_client_not_found']);
  });
});
