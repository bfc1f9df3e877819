// Tool settings over REST (GET /api/mcp/{orgId}/tools, PATCH .../metadata) and their effect on the MCP endpoint,
// on two gateway instances sharing one PostgreSQL store, with real PostgreSQL and MySQL connectors. REST calls go
// through the SDK (contract-checked); bodies outside the contract's types are cast, and sent as they are.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { api, freshDatabase, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, listToolNames, restTools, rowsOf, rpc, type Credential, type ToolRow } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));

let store: { url: string; drop: () => Promise<void> };
let g1: TestGateway;
let g2: TestGateway;
let org: Onboarded;
let token: string;
let key: Credential;
let t: Targets;
let pgId: string;
let myId: string;

beforeAll(async () => {
  if (!available) return;
  [store, t] = await Promise.all([freshDatabase('tg_settings'), createTargets('tg_mcp_settings')]);
  g1 = await startTestGateway('postgres', {}, store.url);
  g2 = await startTestGateway('postgres', {}, store.url);
  org = await onboard(g1);
  token = await tokenFor(g1, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
  pgId = (await createConnector(g1, token, { name: 'pg writable', type: 'postgresql', config: t.pgConfig, allow_write: true })).id;
  myId = (await createConnector(g1, token, { name: 'my shop', type: 'mysql', config: t.myConfig })).id;
}, 120_000);
afterAll(async () => {
  await g1?.close();
  await g2?.close();
  await store?.drop();
  await t?.drop();
}, 60_000);

const byName = async (name: string): Promise<ToolRow> => {
  const found = (await restTools(g1, token, org.orgId)).find((x) => x.tool_name === name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
};
type SdkResult = { data?: unknown; error?: unknown; response: Response };
const patch = (toolId: string, body: unknown, gateway = g1, orgId = org.orgId, bearer = token): Promise<SdkResult> =>
  sdk.updateToolMetadata({ client: sdkFor(gateway, bearer).client, path: { orgId, toolId }, body: body as sdk.UpdateToolRequest });
async function patchOk(toolId: string, body: unknown, gateway = g1): Promise<ToolRow> {
  const { data, response } = await patch(toolId, body, gateway);
  expect(response.status).toBe(200);
  return data as ToolRow;
}
async function expectError(result: SdkResult, status: number, code: string, messageIncludes?: string) {
  expect(result.response.status).toBe(status);
  expect(result.error).toBeInstanceOf(sdk.ToolgateError);
  const error = result.error as sdk.ToolgateError;
  expect(error.error).toBe(code);
  expect(error.message).toBe((error.body as { message: string }).message);
  if (messageIncludes) expect(error.message).toContain(messageIncludes);
}
const descriptors = async (gateway: TestGateway) =>
  (await rpc(gateway, org.slug, key, 'tools/list', {})).body.result.tools as { name: string; description: string; annotations: { readOnlyHint: boolean } }[];

describe.skipIf(!available)('GET /api/mcp/{orgId}/tools', () => {
  test('lists every tool with the spec fields and their defaults', async () => {
    verifies('TOOLS-REST-FIELDS');
    const tools = await restTools(g1, token, org.orgId);
    expect(tools.map((x) => x.tool_name).sort()).toEqual([
      'describe_my_shop',
      'describe_pg_writable',
      'query_mysql_items',
      'query_mysql_notes',
      'query_postgresql_items',
      'query_postgresql_notes',
    ]);
    for (const tool of tools) {
      expect(Object.keys(tool).sort()).toEqual(
        [
          'approval_emails',
          'approval_ttl_seconds',
          'connector_id',
          'connector_name',
          'connector_type',
          'description',
          'enabled',
          'id',
          'kind',
          'name',
          'policy',
          'read_only',
          'requires_approval',
          'saved',
          'tool_description_override',
          'tool_name',
          'tool_name_override',
        ].sort(),
      );
      expect(tool.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(tool.tool_name).toMatch(/^[a-z0-9_]{1,64}$/);
      expect(tool).toMatchObject({
        enabled: true,
        requires_approval: false,
        approval_ttl_seconds: 3600,
        approval_emails: [],
        policy: null,
        tool_name_override: null,
        tool_description_override: null,
        read_only: false,
      });
      expect(tool.kind).toBe(tool.tool_name.startsWith('describe_') ? 'schema' : 'tool');
      const pg = tool.connector_id === pgId;
      expect(tool).toMatchObject(
        pg
          ? { connector_id: pgId, connector_name: 'pg writable', connector_type: 'postgresql' }
          : { connector_id: myId, connector_name: 'my shop', connector_type: 'mysql' },
      );
      expect(tool.name).toBe(tool.tool_name);
    }
  });

  test('?connector_id= filters to one connector; an unknown one gives none; a malformed one is 400', async () => {
    verifies('TOOLS-REST-FIELDS');
    expect((await restTools(g1, token, org.orgId, myId)).map((x) => x.tool_name).sort()).toEqual([
      'describe_my_shop',
      'query_mysql_items',
      'query_mysql_notes',
    ]);
    expect(await restTools(g1, token, org.orgId, randomUUID())).toEqual([]);
    // Not a uuid: outside the contract's types, so raw HTTP.
    expect((await api(g1, 'GET', `/api/mcp/${org.orgId}/tools?connector_id=nope`, token)).status).toBe(400);
  });

  test("another org's orgId or tool id: 404", async () => {
    verifies('REST-BOLA', 'REST-404-NOT-FOUND');
    const other = await onboard(g1);
    const otherToken = await tokenFor(g1, other.clientId, other.clientSecret);
    const tool = await byName('query_postgresql_items');
    await expectError(await sdk.listTools({ client: sdkFor(g1, token).client, path: { orgId: other.orgId } }), 404, 'org_not_found');
    await expectError(await patch(tool.id, { enabled: false }, g1, other.orgId), 404, 'org_not_found');
    // The other org's own path with this org's tool id: no such tool there.
    await expectError(await patch(tool.id, { enabled: false }, g1, other.orgId, otherToken), 404, 'tool_not_found');
    await expectError(await patch(randomUUID(), { enabled: false }), 404, 'tool_not_found');
    expect((await byName('query_postgresql_items')).enabled).toBe(true);
  });
});

describe.skipIf(!available)('PATCH .../metadata and the MCP endpoint', () => {
  const sql = { sql: 'SELECT id FROM items ORDER BY id' };

  test('disabling hides the tool and its calls are -32602; enabling brings it back', async () => {
    verifies('TOOLS-DISABLED-HIDDEN');
    const tool = await byName('query_mysql_items');
    expect((await patchOk(tool.id, { enabled: false })).enabled).toBe(false);
    expect(await listToolNames(g1, org.slug, key)).not.toContain('query_mysql_items');
    expectRpcError(await callTool(g1, org.slug, key, 'query_mysql_items', sql), -32602, 'query_mysql_items');
    expect((await patchOk(tool.id, { enabled: true })).enabled).toBe(true);
    expect(await listToolNames(g1, org.slug, key)).toContain('query_mysql_items');
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_mysql_items', sql))).toHaveLength(3);
  });

  test('a name override renames the tool for agents; null restores the base name', async () => {
    verifies('TOOLS-OVERRIDES');
    const tool = await byName('query_postgresql_items');
    const renamed = await patchOk(tool.id, { tool_name_override: 'inventory' });
    expect(renamed).toMatchObject({ tool_name: 'query_postgresql_items', name: 'inventory', tool_name_override: 'inventory' });
    const names = await listToolNames(g1, org.slug, key);
    expect(names).toContain('inventory');
    expect(names).not.toContain('query_postgresql_items');
    expectRpcError(await callTool(g1, org.slug, key, 'query_postgresql_items', sql), -32602, 'Unknown tool');
    expect(rowsOf(await callTool(g1, org.slug, key, 'inventory', sql))).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect((await patchOk(tool.id, { tool_name_override: null })).name).toBe('query_postgresql_items');
    expect(await listToolNames(g1, org.slug, key)).not.toContain('inventory');
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_postgresql_items', sql))).toHaveLength(3);
  });

  test('override clashes are 409 tool_name_taken; malformed overrides are 400', async () => {
    verifies('TOOLS-OVERRIDES', 'REST-400-FIELD');
    const items = await byName('query_postgresql_items');
    const notes = await byName('query_mysql_notes');
    await expectError(await patch(items.id, { tool_name_override: 'query_mysql_items' }), 409, 'tool_name_taken');
    await expectError(await patch(items.id, { tool_name_override: 'check_approval_status' }), 409, 'tool_name_taken');
    await patchOk(notes.id, { tool_name_override: 'shop_notes' });
    await expectError(await patch(items.id, { tool_name_override: 'shop_notes' }), 409, 'tool_name_taken');
    for (const bad of ['Bad-Name', '', 'a'.repeat(65), 'has space', 'émoji']) {
      await expectError(await patch(items.id, { tool_name_override: bad }), 400, 'validation_error', 'body.tool_name_override');
    }
    // Its own base name is not a clash.
    expect((await patchOk(items.id, { tool_name_override: 'query_postgresql_items' })).name).toBe('query_postgresql_items');
    await patchOk(items.id, { tool_name_override: null });
    await patchOk(notes.id, { tool_name_override: null });
    expect((await byName('query_postgresql_items')).tool_name_override).toBeNull();
  });

  test('a description override is what agents see', async () => {
    verifies('TOOLS-OVERRIDES');
    const tool = await byName('query_postgresql_notes');
    const text = 'Customer notes. Ask for at most 10 rows.';
    // Every description ends naming its connector (decision 0305), an override's too.
    expect((await patchOk(tool.id, { tool_description_override: text })).description).toBe(`${text}\nConnector: pg writable`);
    expect((await descriptors(g1)).find((d) => d.name === 'query_postgresql_notes')!.description).toBe(`${text}\nConnector: pg writable`);
    expect((await byName('query_postgresql_notes')).tool_description_override).toBe(text);
    const cleared = await patchOk(tool.id, { tool_description_override: null });
    expect(cleared.description).toContain('Query the table public.notes');
  });

  test('approval settings are stored and returned; out-of-range values are 400', async () => {
    verifies('TOOLS-APPROVAL-SETTINGS', 'REST-400-FIELD');
    const tool = await byName('query_mysql_notes');
    const updated = await patchOk(tool.id, { requires_approval: true, approval_ttl_seconds: 600, approval_emails: ['Ops@Example.com', 'lead@example.org'] });
    expect(updated).toMatchObject({ requires_approval: true, approval_ttl_seconds: 600, approval_emails: ['ops@example.com', 'lead@example.org'] });
    expect(await byName('query_mysql_notes')).toMatchObject({
      requires_approval: true,
      approval_ttl_seconds: 600,
      approval_emails: ['ops@example.com', 'lead@example.org'],
    });
    await expectError(await patch(tool.id, { approval_ttl_seconds: 30 }), 400, 'validation_error', 'body.approval_ttl_seconds');
    await expectError(await patch(tool.id, { approval_emails: ['not-an-email'] }), 400, 'validation_error', 'body.approval_emails');
    await expectError(await patch(tool.id, {}), 400, 'validation_error');
    await expectError(await patch(tool.id, { enabled: 'yes' }), 400, 'validation_error', 'body.enabled');
    await patchOk(tool.id, { requires_approval: false, approval_emails: [] });
  });

  test('a tool flagged for approval never runs unapproved: the call is held, not executed; unflagged it runs again', async () => {
    verifies('APPROVAL-HELD-RESULT');
    const tool = await byName('query_mysql_notes');
    await patchOk(tool.id, { requires_approval: true });
    const held = await callTool(g1, org.slug, key, 'query_mysql_notes', { sql: 'SELECT body FROM notes' });
    expect(held.body.result.isError).toBe(false);
    expect(held.body.result.content[0].text).toContain('check_approval_status');
    expect(held.body.result.structuredContent).toMatchObject({ status: 'pending_approval' });
    expect(held.body.result.content[0].text).not.toContain('first');
    await patchOk(tool.id, { requires_approval: false });
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_mysql_notes', { sql: 'SELECT body FROM notes ORDER BY id' }))).toHaveLength(2);
  });

  test('read_only on a tool of a write-allowed connector refuses writes', async () => {
    verifies('TOOLS-READ-ONLY');
    const tool = await byName('query_postgresql_notes');
    const insert = (id: number) => callTool(g1, org.slug, key, 'query_postgresql_notes', { sql: `INSERT INTO notes VALUES (${id}, 'x')` });
    expect((await descriptors(g1)).find((d) => d.name === 'query_postgresql_notes')!.annotations.readOnlyHint).toBe(false);
    expect((await insert(50)).body.result.structuredContent.rowCount).toBe(1);
    await patchOk(tool.id, { read_only: true });
    const refused = (await insert(51)).body.result;
    expect(refused.isError).toBe(true);
    expect(refused.content[0].text).toMatch(/read-only|SELECT/);
    expect((await t.pg('SELECT id FROM notes WHERE id >= 50 ORDER BY id')).map((r) => r.id)).toEqual([50]);
    expect((await descriptors(g1)).find((d) => d.name === 'query_postgresql_notes')!.annotations.readOnlyHint).toBe(true);
    await patchOk(tool.id, { read_only: false });
    await t.pg('DELETE FROM notes WHERE id >= 50');
  });
  test('a table added later never takes a name an override already uses', async () => {
    verifies('TOOLS-NAMING');
    const items = await byName('query_mysql_items');
    await patchOk(items.id, { tool_name_override: 'query_mysql_orders' });
    await t.my('CREATE TABLE orders (id integer PRIMARY KEY, total integer NOT NULL)');
    expect((await sdk.revalidateConnector({ client: sdkFor(g1, token).client, path: { connectorId: myId } })).response.status).toBe(202);
    await g1.deps.jobs.idle();
    const names = await listToolNames(g1, org.slug, key);
    expect(new Set(names).size).toBe(names.length);
    // The new table's name is derived from its connector's (decision 0305), never a bare _2.
    expect(names).toContain('query_my_shop_orders');
    // The override still reaches the items table, and the new table has its own tool.
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_mysql_orders', { sql: 'SELECT name FROM items WHERE id = 1' }))).toEqual([{ name: 'apple' }]);
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_my_shop_orders', { sql: 'SELECT id FROM orders' }))).toEqual([]);
    await patchOk(items.id, { tool_name_override: null });
  });
});

describe.skipIf(!available)('two gateway instances sharing one store', () => {
  test('a change on instance 1 shows on the very next request on instance 2', async () => {
    verifies('TOOLS-MULTI-INSTANCE', 'TOOLS-DISABLED-HIDDEN');
    const key2 = key;
    const tool = await byName('query_mysql_notes');
    // Instance 2 has built (and cached) its catalog before the change.
    expect(await listToolNames(g2, org.slug, key2)).toContain('query_mysql_notes');
    await patchOk(tool.id, { enabled: false });
    expect(await listToolNames(g2, org.slug, key2)).not.toContain('query_mysql_notes');
    expectRpcError(await callTool(g2, org.slug, key2, 'query_mysql_notes', { sql: 'SELECT 1 FROM notes' }), -32602);
    await patchOk(tool.id, { enabled: true, tool_name_override: 'shop_notes_v2' });
    expect(await listToolNames(g2, org.slug, key2)).toContain('shop_notes_v2');
    expect(rowsOf(await callTool(g2, org.slug, key2, 'shop_notes_v2', { sql: 'SELECT body FROM notes ORDER BY id' }))).toEqual([
      { body: 'first' },
      { body: 'second' },
    ]);
    // And back, this time changed through instance 2 and seen by instance 1.
    await patchOk(tool.id, { tool_name_override: null, tool_description_override: 'set on instance 2' }, g2);
    const seen = (await descriptors(g1)).find((d) => d.name === 'query_mysql_notes');
    expect(seen?.description).toBe('set on instance 2\nConnector: my shop');
  });

  test('a second connector with the same table names gets unique names derived from its own name', async () => {
    verifies('TOOLS-NAMING');
    const second = await createConnector(g2, token, { name: 'pg again', type: 'postgresql', config: t.pgConfig });
    expect(second.status).toBe('active');
    expect((await restTools(g1, token, org.orgId, second.id)).map((x) => x.tool_name).sort()).toEqual([
      'describe_pg_again',
      'query_pg_again_items',
      'query_pg_again_notes',
    ]);
    const names = await listToolNames(g1, org.slug, key);
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((n) => /_\d+$/.test(n))).toEqual([]);
    expect(rowsOf(await callTool(g1, org.slug, key, 'query_pg_again_items', { sql: 'SELECT count(*)::int AS n FROM items' }))).toEqual([{ n: 3 }]);
  });
});
