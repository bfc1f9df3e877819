// Acceptance: the official MCP TypeScript SDK client against the gateway served on a real port, with a real
// PostgreSQL and a real MySQL/MariaDB connector; and connector scopes of API keys and OAuth clients.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EmptyResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, listToolNames, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));

// Each database connector also lists its schema tool, describe_<connector name> (decision 0313).
const PG_TOOLS = ['query_postgresql_items', 'query_postgresql_notes', 'describe_warehouse_pg'];
const MY_TOOLS = ['query_mysql_items', 'query_mysql_notes', 'describe_shop_mysql'];
const EXPECTED_ITEMS = [
  { id: 1, name: 'apple', price: 3 },
  { id: 2, name: 'pear', price: 4 },
  { id: 3, name: 'plum', price: 5 },
];

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let manage: string;
let t: Targets;
let pgId: string;
let myId: string;
const clients: Client[] = [];

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_mcp_sdk')]);
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  const pg = await createConnector(g, manage, { name: 'warehouse (pg)', type: 'postgresql', config: t.pgConfig });
  const my = await createConnector(g, manage, { name: 'shop (mysql)', type: 'mysql', config: t.myConfig });
  expect([pg.status, my.status, pg.status_reason, my.status_reason]).toEqual(['active', 'active', null, null]);
  pgId = pg.id;
  myId = my.id;
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  server?.stop(true);
  await g?.close();
  await t?.drop();
}, 60_000);

/** An SDK client connected to the org's endpoint over real HTTP with the given headers. */
async function connect(headers: Record<string, string>): Promise<Client> {
  const url = new URL(`http://127.0.0.1:${server.port}/mcp/${org.slug}`);
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const client = new Client({ name: 'toolgate-acceptance', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function newApiKey(body: Record<string, unknown>): Promise<string> {
  const response = await api(g, 'POST', '/api/org/api-keys', manage, body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { key: string }).key;
}

async function newClientToken(scopes: string[]): Promise<string> {
  const response = await api(g, 'POST', '/api/org/oauth-clients', manage, { name: `scoped ${scopes.join(' ')}`, scopes });
  expect(response.status).toBe(201);
  const created = (await response.json()) as { client_id: string; client_secret: string };
  return tokenFor(g, created.client_id, created.client_secret);
}

type CallResult = {
  content: { type: string; text: string }[];
  structuredContent?: { rows: unknown[]; rowCount: number; truncated: boolean };
  isError?: boolean;
};

async function expectRows(client: Client, name: string, sql: string, rows: unknown[]) {
  const result = (await client.callTool({ name, arguments: { sql } })) as CallResult;
  expect(result.isError).toBeFalsy();
  expect(JSON.parse(result.content[0]!.text)).toEqual(rows);
  expect(result.structuredContent).toEqual({ rows, rowCount: rows.length, truncated: false });
}

describe.skipIf(!available)('the official MCP SDK client', () => {
  test('with an API key: initialize, list tools, call a postgresql and a mysql tool', async () => {
    verifies(
      'MCP-SDK-CLIENT',
      'AUTH-METHODS',
      'MCP-TOOL-DESCRIPTOR',
      'SQL-LIMIT-ARG',
      'MCP-DB-RESULT',
      'SQL-ROW-CAP',
      'SQL-SELECT-ONLY',
      'RPC-TOOL-ERROR-RESULT',
      'MCP-CHECK-APPROVAL-STATUS',
    );
    const client = await connect({ 'X-API-Key': org.apiKey });
    expect(client.getServerVersion()).toMatchObject({ name: 'toolgate' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    expect(client.getInstructions()).toContain('tools/list');

    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual([...PG_TOOLS, ...MY_TOOLS, 'check_approval_status'].sort());
    const items = tools.find((x) => x.name === 'query_postgresql_items')!;
    expect(items.inputSchema.required).toEqual(['sql']);
    expect(items.inputSchema.properties).toMatchObject({ sql: { type: 'string' }, limit: { type: 'integer', default: 100, maximum: 1000 } });
    expect(items.annotations?.readOnlyHint).toBe(true);
    expect(items.description).toContain('price');

    await expectRows(client, 'query_postgresql_items', 'SELECT id, name, price FROM items ORDER BY id', EXPECTED_ITEMS);
    await expectRows(client, 'query_mysql_items', 'SELECT id, name, price FROM items ORDER BY id', EXPECTED_ITEMS);
    await expectRows(client, 'query_mysql_notes', 'SELECT body FROM notes WHERE id = 2', [{ body: 'second' }]);

    // limit caps the rows and says so.
    const limited = (await client.callTool({ name: 'query_postgresql_items', arguments: { sql: 'SELECT id FROM items ORDER BY id', limit: 2 } })) as CallResult;
    expect(limited.structuredContent).toEqual({ rows: [{ id: 1 }, { id: 2 }], rowCount: 2, truncated: true });

    // A refused statement is a tool result with isError, not a protocol error.
    const refused = (await client.callTool({ name: 'query_mysql_items', arguments: { sql: 'DELETE FROM items' } })) as CallResult;
    expect(refused.isError).toBe(true);
    expect(Number((await t.my('SELECT count(*) AS n FROM items'))[0]!.n)).toBe(3);

    const status = (await client.callTool({ name: 'check_approval_status', arguments: { approvalId: 'unknown' } })) as CallResult;
    expect(status.structuredContent).toMatchObject({ status: 'not_found' });
    await client.ping();
  });

  test('with an OAuth bearer token (Authorization: Bearer)', async () => {
    verifies('MCP-SDK-CLIENT', 'AUTH-METHODS');
    const token = await tokenFor(g, org.clientId, org.clientSecret, 'mcp:call');
    const client = await connect({ Authorization: `Bearer ${token}` });
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toContain('query_mysql_notes');
    await expectRows(client, 'query_postgresql_notes', 'SELECT id, body FROM notes ORDER BY id', [
      { id: 1, body: 'first' },
      { id: 2, body: 'second' },
    ]);
    await expectRows(client, 'query_mysql_items', 'SELECT name FROM items WHERE price > 3 ORDER BY id', [{ name: 'pear' }, { name: 'plum' }]);
  });

  test('errors reach the SDK as McpError with the spec codes', async () => {
    verifies('RPC-32602-UNKNOWN-TOOL', 'RPC-32602', 'RPC-32601');
    const client = await connect({ 'X-API-Key': org.apiKey });
    const codeOf = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (err) {
        expect(err).toBeInstanceOf(McpError);
        return (err as McpError).code;
      }
      throw new Error('expected an McpError');
    };
    expect(await codeOf(client.callTool({ name: 'query_mysql_nope', arguments: { sql: 'SELECT 1' } }))).toBe(-32602);
    expect(await codeOf(client.callTool({ name: 'query_mysql_items', arguments: { sql: 'SELECT 1', limit: 5000 } }))).toBe(-32602);
    // prompts/list and resources/list are served (decisions 0314/0315); a method the server does not serve is -32601.
    expect(await codeOf(client.request({ method: 'sampling/createMessage', params: {} } as never, EmptyResultSchema))).toBe(-32601);
  });

  test('a wrong credential fails the SDK connection', async () => {
    await expect(connect({ 'X-API-Key': 'tg_not_a_real_key_0000000000000000' })).rejects.toThrow();
  });
});

describe.skipIf(!available)('connector scopes', () => {
  const sql = { sql: 'SELECT id FROM items ORDER BY id' };

  async function expectScopedToPg(credential: Credential) {
    expect((await listToolNames(g, org.slug, credential)).sort()).toEqual([...PG_TOOLS, 'check_approval_status'].sort());
    const ok = await callTool(g, org.slug, credential, 'query_postgresql_items', sql);
    expect(ok.body.result.structuredContent.rowCount).toBe(3);
    expectRpcError(await callTool(g, org.slug, credential, 'query_mysql_items', sql), -32003, 'query_mysql_items');
  }

  test('an API key created with connector_ids [A] sees and calls only A', async () => {
    verifies('AUTH-APIKEY-CONNECTORS', 'TOOLS-SCOPE-FILTER', 'RPC-32003');
    await expectScopedToPg({ apiKey: await newApiKey({ name: 'pg only', connector_ids: [pgId] }) });
    const both = { apiKey: await newApiKey({ name: 'both', connector_ids: [pgId, myId] }) };
    expect((await listToolNames(g, org.slug, both)).sort()).toEqual([...PG_TOOLS, ...MY_TOOLS, 'check_approval_status'].sort());
  });

  test('an API key limited to a connector of another org is refused', async () => {
    verifies('AUTH-APIKEY-CONNECTORS');
    const stranger = await onboard(g);
    const strangerToken = await tokenFor(g, stranger.clientId, stranger.clientSecret);
    const response = await api(g, 'POST', '/api/org/api-keys', strangerToken, { name: 'steal', connector_ids: [pgId] });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { error: string }).error).toBe('connector_not_found');
  });

  test('an OAuth client with scope mcp:call:<A> sees and calls only A, also through the SDK', async () => {
    verifies('TOOLS-SCOPE-FILTER', 'RPC-32003');
    const token = await newClientToken([`mcp:call:${pgId}`]);
    await expectScopedToPg({ token });
    const client = await connect({ Authorization: `Bearer ${token}` });
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual([...PG_TOOLS, 'check_approval_status'].sort());
    await expect(client.callTool({ name: 'query_mysql_items', arguments: sql })).rejects.toMatchObject({ code: -32003 });
  });

  test('mcp:call sees every connector; a token with no mcp scope is 403', async () => {
    verifies('AUTH-SCOPE-MCP-CALL');
    const all = await newClientToken(['mcp:call']);
    expect((await listToolNames(g, org.slug, { token: all })).sort()).toEqual([...PG_TOOLS, ...MY_TOOLS, 'check_approval_status'].sort());
    const manageOnly = await tokenFor(g, org.clientId, org.clientSecret, 'org:manage');
    const answer = await callTool(g, org.slug, { token: manageOnly }, 'query_postgresql_items', sql);
    expect(answer.status).toBe(403);
    expect(answer.body.error).toBe('insufficient_scope');
  });
});
