// Issue 38 item 4 (decisions 0313, 0314): the schema tool of a database connector and its schema resource, against
// real PostgreSQL and MariaDB. Each server gets a database of its own (h7_schema_*) holding customers, orders (a foreign
// key to customers), payments (a foreign key to orders over a column its policy hides) and a table whose tool is
// disabled; customers hides national_id and masks email. Dropped afterwards.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, listToolNames, restTools, rpc, type ToolRow } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);

const TABLES = [
  'CREATE TABLE h7_customers (id integer PRIMARY KEY, name varchar(50) NOT NULL, email varchar(100), national_id varchar(20))',
  "INSERT INTO h7_customers VALUES (1, 'Ada', 'ada@example.com', 'NI-1'), (2, 'Bob', 'bob@example.com', 'NI-2')",
  'CREATE TABLE h7_orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES h7_customers (id), total integer NOT NULL)',
  'INSERT INTO h7_orders VALUES (10, 1, 30), (11, 2, 40), (12, 1, 50)',
  'CREATE TABLE h7_payments (id integer PRIMARY KEY, order_id integer NOT NULL REFERENCES h7_orders (id), amount integer NOT NULL)',
  'CREATE TABLE h7_audit_secret (id integer PRIMARY KEY, note varchar(50))',
];

let g: TestGateway;
let org: Onboarded;
let token: string;
let targets: Targets;
const mcp = () => ({ apiKey: org.apiKey });

beforeAll(async () => {
  targets = await createTargets('h7_schema');
  for (const statement of TABLES) {
    await targets.pg(statement);
    await targets.my(statement);
  }
  await targets.pg('ANALYZE');
  await targets.my('ANALYZE TABLE h7_customers, h7_orders');
  g = await startTestGateway('pglite');
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
}, 120_000);

afterAll(async () => {
  await g?.close();
  await targets?.drop();
});

const setTool = (toolId: string, body: sdk.UpdateToolRequest) =>
  sdk.updateToolMetadata({ client: sdkFor(g, token).client, path: { orgId: org.orgId, toolId }, body });

/** The connector's tool rows by the table (or schema tool) they govern. */
function byTable(rows: ToolRow[]): (suffix: string) => ToolRow {
  return (suffix) => {
    const row = rows.find((r) => r.tool_name.endsWith(suffix));
    if (!row) throw new Error(`no tool ending in ${suffix}: ${rows.map((r) => r.tool_name).join(', ')}`);
    return row;
  };
}

async function structured(name: string, args: Record<string, unknown>) {
  const answer = await callTool(g, org.slug, mcp(), name, args);
  expect(answer.status).toBe(200);
  const result = answer.body.result;
  if (!result || result.isError) throw new Error(`schema tool failed: ${answer.text}`);
  return { text: result.content[0].text as string, data: result.structuredContent as { tables: any[]; matched: number; truncated: boolean } };
}

for (const [label, type, connectorName] of [
  ['PostgreSQL', 'postgresql', 'Shop PG'],
  ['MariaDB', 'mysql', 'Shop My'],
] as const) {
  describe(`the schema tool on ${label}`, () => {
    let describeName: string;
    let schemaRow: ToolRow;
    beforeAll(async () => {
      const config = type === 'postgresql' ? targets.pgConfig : targets.myConfig;
      const conn = await createConnector(g, token, { name: connectorName, type, config });
      expect(conn.status_reason ?? conn.status).toBe('active');
      const rows = await restTools(g, token, org.orgId, conn.id);
      const tool = byTable(rows);
      schemaRow = tool(`describe_${connectorName.toLowerCase().replace(' ', '_')}`);
      describeName = schemaRow.name;
      const policy = { hidden_columns: ['national_id'], masked_columns: [{ column: 'email', mask: 'fixed' as const }], row_filter: null };
      expect((await setTool(tool('_h7_customers').id, { policy })).response.status).toBe(200);
      expect((await setTool(tool('_h7_payments').id, { policy: { hidden_columns: ['order_id'], masked_columns: [], row_filter: null } })).response.status).toBe(
        200,
      );
      expect((await setTool(tool('_h7_audit_secret').id, { enabled: false })).response.status).toBe(200);
    });

    test('one describe_<connector> tool is listed beside the table tools, read-only, with a search argument', async () => {
      const answer = await rpc(g, org.slug, mcp(), 'tools/list', {});
      const tool = answer.body.result.tools.find((t: { name: string }) => t.name === describeName);
      expect(tool).toBeDefined();
      expect(tool.description).toContain(connectorName);
      expect(tool.annotations.readOnlyHint).toBe(true);
      expect(Object.keys(tool.inputSchema.properties).sort()).toEqual(['limit', 'search']);
    });

    test('finds a table by part of its name, case-insensitively, with its primary key, foreign key and row estimate', async () => {
      const { data } = await structured(describeName, { search: 'ORDER' });
      expect(data.tables.map((t) => t.name)).toEqual(['h7_orders']);
      const orders = data.tables[0];
      expect(orders.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'customer_id', 'total']);
      expect(orders.columns[0].type).toMatch(/int/);
      expect(orders.primaryKey).toEqual(['id']);
      expect(orders.foreignKeys).toEqual([{ columns: ['customer_id'], references: { schema: orders.schema, table: 'h7_customers', columns: ['id'] } }]);
      expect(orders.rowEstimate).toBe(3);
      expect(orders.tool).toMatch(/h7_orders$/);
      // The tool it names does query the table.
      const rows = await callTool(g, org.slug, mcp(), orders.tool, { sql: 'SELECT count(*) AS n FROM h7_orders' });
      expect(JSON.parse(rows.body.result.content[0].text)[0].n).toBe(3);
    });

    test('hidden columns are never listed, masked ones are marked; keys over hidden columns are left out', async () => {
      const { data, text } = await structured(describeName, { search: 'h7_' });
      const names = data.tables.map((t) => t.name);
      expect(names).toEqual(['h7_customers', 'h7_orders', 'h7_payments']);
      const customers = data.tables[0];
      expect(customers.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'name', 'email']);
      expect(customers.columns[2]).toEqual({ name: 'email', type: 'text', masked: 'fixed' });
      expect(text).not.toContain('national_id');
      const payments = data.tables[2];
      expect(payments.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'amount']);
      expect(payments.foreignKeys).toBeUndefined();
      expect(text).not.toContain('order_id');
    });

    test('a table whose tool is disabled is not described, found or offered', async () => {
      const { data, text } = await structured(describeName, { search: 'secret' });
      expect(data.tables).toEqual([]);
      expect(data.matched).toBe(0);
      expect(text).toContain('No table you may query matches "secret"');
    });

    test('limit cuts the list and the answer says how many more matched', async () => {
      const { data, text } = await structured(describeName, { search: 'h7', limit: 1 });
      expect(data.tables).toHaveLength(1);
      expect(data.matched).toBe(3);
      expect(data.truncated).toBe(true);
      expect(text).toContain('1 of 3 matching tables described');
    });

    test('the schema is a resource: listed, read as the same JSON, and the capability is declared', async () => {
      const init = await rpc(g, org.slug, mcp(), 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
      expect(init.body.result.capabilities.resources).toEqual({ listChanged: false });
      const list = await rpc(g, org.slug, mcp(), 'resources/list', {});
      const resource = list.body.result.resources.find((r: { name: string }) => r.name === describeName);
      expect(resource.uri).toMatch(/^toolgate:\/\/shop_(pg|my)\/schema$/);
      expect(resource.mimeType).toBe('application/json');
      const read = await rpc(g, org.slug, mcp(), 'resources/read', { uri: resource.uri });
      const doc = JSON.parse(read.body.result.contents[0].text);
      expect(read.body.result.contents[0].uri).toBe(resource.uri);
      expect(doc.tables.map((t: { name: string }) => t.name)).toEqual(['h7_customers', 'h7_orders', 'h7_payments', 'items', 'notes']);
      expect(JSON.stringify(doc)).not.toContain('national_id');
      expect(doc.tables[0].columns[2].masked).toBe('fixed');
    });

    test('a URI no connector serves is not found (-32002), and reading it reaches nothing', async () => {
      const host = connectorName.toLowerCase().replace(' ', '_');
      expectRpcError(await rpc(g, org.slug, mcp(), 'resources/read', { uri: `toolgate://${host}/other` }), -32002, 'Resource not found');
      expectRpcError(await rpc(g, org.slug, mcp(), 'resources/read', { uri: 'file:///etc/passwd' }), -32002);
    });

    test('the schema tool is governed like any tool: disabled, it is neither listed, callable nor a resource; each call is audited', async () => {
      expect((await setTool(schemaRow.id, { enabled: false })).response.status).toBe(200);
      expect(await listToolNames(g, org.slug, mcp())).not.toContain(describeName);
      expectRpcError(await callTool(g, org.slug, mcp(), describeName, {}), -32602, 'Unknown tool');
      const list = await rpc(g, org.slug, mcp(), 'resources/list', {});
      expect(list.body.result.resources.map((r: { name: string }) => r.name)).not.toContain(describeName);
      expect((await setTool(schemaRow.id, { enabled: true })).response.status).toBe(200);
      await structured(describeName, { search: 'cust' });
      // Audit rows are listed once sealed into the org's chain, which runs off the hot path at most every 100 ms
      // (audit/recorder.ts): wait for it rather than race it.
      await g.deps.audit.drain();
      const audit = await sdk.listAuditEvents({ client: sdkFor(g, token).client, query: { action: 'tool.called', target_id: describeName, limit: 200 } });
      expect(audit.data!.events.some((e) => e.target_id === describeName && e.outcome === 'success')).toBe(true);
      const reads = await sdk.listAuditEvents({ client: sdkFor(g, token).client, query: { action: 'resource.read', limit: 200 } });
      expect(reads.data!.events.some((e) => e.target_id?.endsWith('/schema') && e.outcome === 'success')).toBe(true);
    });
  });
}

describe('capabilities', () => {
  test('an org with nothing but tools declares no resources or prompts', async () => {
    const other = await onboard(g);
    const init = await rpc(g, other.slug, { apiKey: other.apiKey }, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    });
    expect(init.body.result.capabilities).toEqual({ tools: { listChanged: false } });
    const list = await rpc(g, other.slug, { apiKey: other.apiKey }, 'resources/list', {});
    expect(list.body.result.resources).toEqual([]);
  });
});
