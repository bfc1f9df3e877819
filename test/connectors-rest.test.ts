// The connector lifecycle over REST on a real gateway, with real PostgreSQL and MySQL targets: create, validate,
// list, patch, revalidate, archive, and what each step does to the tools on the MCP endpoint. Behaviour goes through
// the SDK (toolgate/client, every response checked against openapi.yaml); bodies the typed SDK cannot send stay raw HTTP.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { connectors } from '../src/store/schema.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, getConnector, listToolNames, restTools, rowsOf, type Credential } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, deadPort, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
const PASSWORD = 'PlainPw-4711!';

let g: TestGateway;
let org: Onboarded;
let token: string;
let key: Credential;
let t: Targets;
let client: sdk.Client;

beforeAll(async () => {
  if (!available) return;
  // Any port of 127.0.0.1 is allowed here: the suite points connectors at dead ports to see them fail.
  [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }), createTargets('tg_mcp_conn')]);
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  client = sdkFor(g, token).client;
  key = { apiKey: org.apiKey };
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
}, 60_000);

async function expectError(response: Response, status: number, code: string, messageIncludes?: string) {
  const text = await response.text();
  expect(response.status).toBe(status);
  const body = JSON.parse(text) as { error: string; message: string };
  expect(body.error).toBe(code);
  if (messageIncludes) expect(body.message).toContain(messageIncludes);
  return body;
}
/** An SDK result that failed: the status, and a ToolgateError carrying the REST {error, message}. */
function expectSdkError(result: { error?: unknown; response: Response }, status: number, code: string, messageIncludes?: string) {
  expect(result.response.status).toBe(status);
  expect(result.error).toBeInstanceOf(sdk.ToolgateError);
  const error = result.error as sdk.ToolgateError;
  expect(error.error).toBe(code);
  expect(error.body).toEqual({ error: code, message: error.message });
  if (messageIncludes) expect(error.message).toContain(messageIncludes);
  return error;
}
const listIds = async (status?: sdk.ConnectorStatus) =>
  (await sdk.listConnectors({ client, throwOnError: true, query: status ? { status } : undefined })).data.connectors.map((c) => c.id);
const toolCount = async () => (await sdk.getProvisioningStatus({ client, throwOnError: true, path: { orgId: org.orgId } })).data.toolCount;

describe.skipIf(!available)('create and validate', () => {
  test('POST answers 201 validating at once; the background job makes it active with tools', async () => {
    verifies('CONN-CREATE', 'TOOLS-NAMING');
    const { data, response } = await sdk.createConnector({ client, body: { name: 'pg', type: 'postgresql', config: t.pgConfig, credential: PASSWORD } });
    expect(response.status).toBe(201);
    const created = data as unknown as Record<string, unknown>;
    expect(created).toMatchObject({ name: 'pg', type: 'postgresql', status: 'validating', has_credential: true, allow_write: false, allow_ddl: false });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(created.created_at as string).toISOString()).toBe(created.created_at as string);
    expect(created).not.toHaveProperty('credential');
    await g.deps.jobs.idle();
    const active = await getConnector(g, token, created.id as string);
    expect(active).toMatchObject({ status: 'active', status_reason: null });
    expect((await restTools(g, token, org.orgId, active.id)).map((x) => x.tool_name).sort()).toEqual([
      'describe_pg',
      'query_postgresql_items',
      'query_postgresql_notes',
    ]);
    expect(await listToolNames(g, org.slug, key)).toContain('query_postgresql_items');
  });

  test('the credential is never returned and is encrypted at rest', async () => {
    verifies('CONN-CREDENTIAL-HIDDEN');
    const [row] = await g.deps.store.db.select().from(connectors).where(eq(connectors.orgId, org.orgId));
    expect(row!.credentialSealed).toBeTruthy();
    expect(row!.credentialSealed).not.toContain(PASSWORD);
    expect(Buffer.from(row!.credentialSealed!, 'base64').toString('latin1')).not.toContain(PASSWORD);
    const responses = [
      await sdk.listConnectors({ client, parseAs: 'text' }),
      await sdk.getConnector({ client, parseAs: 'text', path: { connectorId: row!.id } }),
      await sdk.listTools({ client, parseAs: 'text', path: { orgId: org.orgId } }),
      await sdk.updateConnector({ client, parseAs: 'text', path: { connectorId: row!.id }, body: { name: 'pg' } }),
    ];
    for (const { data, response } of responses) {
      expect(response.status).toBe(200);
      expect(typeof data).toBe('string');
      expect(data as unknown as string).not.toContain(PASSWORD);
    }
  });

  test('a type outside the contract is 400 (a contract type without a driver, 422: connectors/new-types-rest.test.ts)', async () => {
    verifies('CONN-TYPE-UNAVAILABLE');
    // Outside the contract's enum: the typed SDK cannot send it, so raw HTTP.
    await expectError(await api(g, 'POST', '/api/connectors', token, { name: 'r', type: 'redis', config: t.pgConfig }), 400, 'validation_error', 'body.type');
  });

  test('a bad config is 400 naming the field, and creates nothing', async () => {
    verifies('REST-400-FIELD');
    const before = await listIds();
    const { host: _host, ...noHost } = t.pgConfig;
    await expectError(await api(g, 'POST', '/api/connectors', token, { name: 'x', type: 'postgresql', config: noHost }), 400, 'validation_error', 'host');
    expectSdkError(
      await sdk.createConnector({ client, body: { name: 'x', type: 'mysql', config: { ...t.myConfig, port: 70000 } } }),
      400,
      'validation_error',
      'port',
    );
    expectSdkError(
      await sdk.createConnector({ client, body: { name: 'x', type: 'postgresql', config: { ...t.pgConfig, host: 'a/b' } } }),
      400,
      'validation_error',
      'host',
    );
    // Shapes the SDK's types rule out (a missing field, an unknown one) stay raw HTTP.
    await expectError(
      await api(g, 'POST', '/api/connectors', token, { name: 'x', type: 'postgresql', config: { ...t.pgConfig, dsn: 'x' } }),
      400,
      'validation_error',
      'dsn',
    );
    await expectError(await api(g, 'POST', '/api/connectors', token, { name: 'x', type: 'postgresql' }), 400, 'validation_error', 'body.config');
    expect(await listIds()).toEqual(before);
  });

  test('a database that cannot be reached: failed, with a human-readable reason and no password', async () => {
    verifies('CONN-CREDENTIAL-HIDDEN');
    const port = await deadPort();
    for (const type of ['postgresql', 'mysql'] as const) {
      const config = { ...(type === 'postgresql' ? t.pgConfig : t.myConfig), port };
      const failed = await createConnector(g, token, { name: `down ${type}`, type, config, credential: PASSWORD });
      expect(failed.status).toBe('failed');
      expect(failed.status_reason).toBe(`could not connect to 127.0.0.1:${port}: connection refused`);
      expect(JSON.stringify(failed)).not.toContain(PASSWORD);
      expect(await restTools(g, token, org.orgId, failed.id)).toEqual([]);
      expect(await listIds('failed')).toContain(failed.id);
      expect((await sdk.archiveConnector({ client, path: { connectorId: failed.id } })).response.status).toBe(200);
    }
    const wrongDb = await createConnector(g, token, { name: 'no db', type: 'postgresql', config: { ...t.pgConfig, database: 'tg_no_such_db_x' } });
    expect(wrongDb).toMatchObject({ status: 'failed', status_reason: 'database tg_no_such_db_x does not exist on 127.0.0.1:5432' });
    expect((await sdk.archiveConnector({ client, path: { connectorId: wrongDb.id } })).response.status).toBe(200);
  });
});

describe.skipIf(!available)('read, update, revalidate', () => {
  let my: { id: string };

  beforeAll(async () => {
    my = await createConnector(g, token, { name: 'shop', type: 'mysql', config: t.myConfig });
    expect((my as { status?: string }).status).toBe('active');
  });

  test('list (oldest first, status filter) and get', async () => {
    verifies('REST-404-NOT-FOUND');
    const ids = await listIds();
    expect(ids.at(-1)).toBe(my.id);
    expect(await listIds('active')).toContain(my.id);
    expect(await listIds('validating')).not.toContain(my.id);
    expect(await getConnector(g, token, my.id)).toMatchObject({
      id: my.id,
      name: 'shop',
      type: 'mysql',
      has_credential: false,
      config: { ...t.myConfig, tls: 'disable' },
    });
    expectSdkError(await sdk.getConnector({ client, path: { connectorId: randomUUID() } }), 404, 'connector_not_found');
  });

  test("another org's connector id is 404 on every operation, and nothing changes", async () => {
    verifies('REST-BOLA');
    const other = await onboard(g);
    const thief = sdkFor(g, await tokenFor(g, other.clientId, other.clientSecret)).client;
    const path = { connectorId: my.id };
    expectSdkError(await sdk.getConnector({ client: thief, path }), 404, 'connector_not_found');
    expectSdkError(await sdk.updateConnector({ client: thief, path, body: { name: 'stolen' } }), 404, 'connector_not_found');
    expectSdkError(await sdk.revalidateConnector({ client: thief, path }), 404, 'connector_not_found');
    expectSdkError(await sdk.archiveConnector({ client: thief, path }), 404, 'connector_not_found');
    expect(await getConnector(g, token, my.id)).toMatchObject({ name: 'shop', status: 'active' });
  });

  test('PATCH name keeps the connector active and renames it everywhere', async () => {
    const { data, response } = await sdk.updateConnector({ client, path: { connectorId: my.id }, body: { name: 'shop (renamed)' } });
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ name: 'shop (renamed)', status: 'active' });
    await g.deps.jobs.idle();
    expect((await restTools(g, token, org.orgId, my.id)).every((x) => x.connector_name === 'shop (renamed)')).toBe(true);
  });

  test('PATCH allow_write / allow_ddl changes what calls may do', async () => {
    verifies('CONN-PATCH-ALLOW-WRITE', 'SQL-SELECT-ONLY');
    const insert = (id: number) => callTool(g, org.slug, key, 'query_mysql_notes', { sql: `INSERT INTO notes VALUES (${id}, 'w')` });
    expect((await insert(60)).body.result.isError).toBe(true);
    const { data } = await sdk.updateConnector({ client, path: { connectorId: my.id }, body: { allow_write: true, allow_ddl: true } });
    expect(data).toMatchObject({ allow_write: true, allow_ddl: true, status: 'active' });
    expect((await insert(61)).body.result.structuredContent.rowCount).toBe(1);
    await sdk.updateConnector({ client, throwOnError: true, path: { connectorId: my.id }, body: { allow_write: false, allow_ddl: false } });
    expect((await insert(62)).body.result.isError).toBe(true);
    expect((await t.my('SELECT id FROM notes WHERE id >= 60')).map((r) => r.id)).toEqual([61]);
    await t.my('DELETE FROM notes WHERE id >= 60');
  });

  test('PATCH config or credential revalidates: failed on a dead port, active again when fixed', async () => {
    verifies('CONN-PATCH-REVALIDATES', 'CONN-CREDENTIAL-HIDDEN');
    const path = { connectorId: my.id };
    const broken = await sdk.updateConnector({ client, path, body: { config: { ...t.myConfig, port: await deadPort() } } });
    expect(broken.response.status).toBe(200);
    expect(broken.data!.status).toBe('validating');
    await g.deps.jobs.idle();
    expect(await getConnector(g, token, my.id)).toMatchObject({ status: 'failed', status_reason: expect.stringContaining('connection refused') });
    // A failed connector's tools are not on the endpoint.
    expect(await listToolNames(g, org.slug, key)).not.toContain('query_mysql_items');
    const fixed = await sdk.updateConnector({ client, throwOnError: true, path, body: { config: t.myConfig } });
    expect(fixed.data.status).toBe('validating');
    await g.deps.jobs.idle();
    expect((await getConnector(g, token, my.id)).status).toBe('active');
    expect(rowsOf(await callTool(g, org.slug, key, 'query_mysql_items', { sql: 'SELECT name FROM items WHERE id = 1' }))).toEqual([{ name: 'apple' }]);
    const credential = await sdk.updateConnector({ client, throwOnError: true, path, body: { credential: 'wrong-password' } });
    expect(credential.data).toMatchObject({ status: 'validating', has_credential: true });
    await g.deps.jobs.idle();
    const denied = await getConnector(g, token, my.id);
    expect(denied.status).toBe('failed');
    expect(denied.status_reason).toContain('authentication failed for user root');
    expect(denied.status_reason).not.toContain('wrong-password');
    await sdk.updateConnector({ client, throwOnError: true, path, body: { credential: '' } });
    await g.deps.jobs.idle();
    expect((await getConnector(g, token, my.id)).status).toBe('active');
  });

  test('revalidate answers 202 {status, id} at once and picks up new tables', async () => {
    verifies('CONN-REVALIDATE');
    await t.my('CREATE TABLE orders (id integer PRIMARY KEY, total integer)');
    const { data, response } = await sdk.revalidateConnector({ client, path: { connectorId: my.id } });
    expect(response.status).toBe(202);
    expect(data).toEqual({ status: 'validating', id: my.id });
    expect((await getConnector(g, token, my.id)).status).toBe('validating');
    await g.deps.jobs.idle();
    expect((await getConnector(g, token, my.id)).status).toBe('active');
    expect((await restTools(g, token, org.orgId, my.id)).map((x) => x.tool_name).sort()).toEqual([
      'describe_shop_renamed',
      'query_mysql_items',
      'query_mysql_notes',
      'query_mysql_orders',
    ]);
  });
});

describe.skipIf(!available)('archive', () => {
  test('DELETE archives: tools leave tools/list, GET tools and toolCount, and provisioning keeps them gone', async () => {
    verifies('CONN-ARCHIVE', 'CONN-LIST-NO-ARCHIVED', 'PROVISION-STATUS', 'PROVISION-MANUAL');
    const doomed = await createConnector(g, token, { name: 'doomed', type: 'postgresql', config: { ...t.pgConfig } });
    const doomedTools = (await restTools(g, token, org.orgId, doomed.id)).map((x) => x.tool_name);
    expect(doomedTools).toEqual(['describe_doomed', 'query_doomed_items', 'query_doomed_notes']);
    const before = await toolCount();
    const path = { connectorId: doomed.id as string };
    const { data, response } = await sdk.archiveConnector({ client, path });
    expect(response.status).toBe(200);
    expect(data).toEqual({ archived: true, id: doomed.id });

    expect(await listIds()).not.toContain(doomed.id);
    expectSdkError(await sdk.getConnector({ client, path }), 404, 'connector_not_found');
    expectSdkError(await sdk.archiveConnector({ client, path }), 404, 'connector_not_found');
    expectSdkError(await sdk.revalidateConnector({ client, path }), 404, 'connector_not_found');
    const names = await listToolNames(g, org.slug, key);
    for (const name of doomedTools) expect(names).not.toContain(name);
    expect(await restTools(g, token, org.orgId, doomed.id)).toEqual([]);
    expect(await toolCount()).toBe(before - 3);

    const provision = await sdk.provisionOrg({ client, path: { orgId: org.orgId } });
    expect(provision.response.status).toBe(200);
    expect(provision.data).toMatchObject({ status: 'provisioned', toolCount: before - 3 });
    const after = await listToolNames(g, org.slug, key);
    for (const name of doomedTools) expect(after).not.toContain(name);
    expect(after).toContain('query_postgresql_items');
    expect(rowsOf(await callTool(g, org.slug, key, 'query_postgresql_items', { sql: 'SELECT count(*)::int AS n FROM items' }))).toEqual([{ n: 3 }]);
  });
});
