// Issue 30 items 1-2: saved-statement tools with typed parameters over REST (the generated client), called with the
// official MCP SDK client on a real port against real PostgreSQL and MariaDB; and free SQL switched off per connector.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let manage: string;
let t: Targets;
let pgId: string;
let myId: string;
let client: Client;

const rest = () => sdkFor(g, manage).client;

/** POST a saved tool; the answer's status, body and error as the generated client returns them. */
async function save(connectorId: string, body: sdk.SavedToolRequest) {
  const { data, error, response } = await sdk.createSavedTool({ client: rest(), path: { connectorId }, body });
  return { status: response.status, data: data!, error: error as { error: string; message: string } | undefined };
}

type CallResult = { content: { type: string; text: string }[]; structuredContent?: { rows: unknown[]; rowCount: number }; isError?: boolean };
const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallResult;
const rows = async (name: string, args: Record<string, unknown>) => {
  const result = await call(name, args);
  if (result.isError) throw new Error(result.content[0]!.text);
  return result.structuredContent!.rows;
};
async function rpcError(name: string, args: Record<string, unknown>): Promise<McpError> {
  try {
    await client.callTool({ name, arguments: args });
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
  throw new Error(`${name} answered instead of failing`);
}
const toolNames = async () => (await client.listTools()).tools.map((x) => x.name);

const PG_RANGE: sdk.SavedToolRequest = {
  name: 'pg_items_in_range',
  description: 'Items at or above a price, among some ids, except one name.',
  statement: 'SELECT id, name, price FROM items WHERE price >= :min_price AND name <> :exclude AND id = ANY(:ids) ORDER BY id',
  parameters: [
    { name: 'min_price', type: 'integer', description: 'Lowest price', minimum: 0, maximum: 1000 },
    { name: 'exclude', type: 'string', description: 'A name to leave out', maxLength: 50, default: 'none' },
    { name: 'ids', type: 'array', description: 'Item ids', items: { type: 'integer', minimum: 1 }, maxItems: 10 },
  ],
};
const MY_NAMED: sdk.SavedToolRequest = {
  name: 'my_items_named',
  description: 'Items by name, or by id.',
  statement: 'SELECT id, name FROM items WHERE name = :name OR id IN (:ids) ORDER BY id',
  parameters: [
    { name: 'name', type: 'string', description: 'An item name', maxLength: 100 },
    { name: 'ids', type: 'array', description: 'Item ids', items: { type: 'integer' }, default: [0] },
  ],
};

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_saved')]);
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  pgId = (await createConnector(g, manage, { name: 'pg', type: 'postgresql', config: t.pgConfig, allow_write: true })).id;
  myId = (await createConnector(g, manage, { name: 'my', type: 'mysql', config: t.myConfig })).id;
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp/${org.slug}`), {
    requestInit: { headers: { 'X-API-Key': org.apiKey } },
  });
  client = new Client({ name: 'saved-tools-test', version: '1.0.0' });
  await client.connect(transport);
}, 120_000);
afterAll(async () => {
  await client?.close().catch(() => {});
  server?.stop(true);
  await g?.close();
  await t?.drop();
}, 60_000);

describe.skipIf(!available)('saved-statement tools', () => {
  test('saved on PostgreSQL and MariaDB: inputSchema from the parameters, listed and called with typed arguments', async () => {
    const pg = await save(pgId, PG_RANGE);
    expect([pg.status, pg.error]).toEqual([201, undefined]);
    expect(pg.data).toMatchObject({ name: 'pg_items_in_range', version: 1, writes: false, requires_approval: false, table: { name: 'items' } });
    expect(pg.data.input_schema).toEqual({
      type: 'object',
      properties: {
        min_price: { type: 'integer', minimum: 0, maximum: 1000, description: 'Lowest price' },
        exclude: { type: 'string', maxLength: 50, description: 'A name to leave out', default: 'none' },
        ids: { type: 'array', items: { type: 'integer', minimum: 1 }, minItems: 1, maxItems: 10, description: 'Item ids' },
      },
      required: ['min_price', 'ids'],
      additionalProperties: false,
    });
    const my = await save(myId, MY_NAMED);
    expect([my.status, my.error]).toEqual([201, undefined]);

    const { tools } = await client.listTools();
    const listed = tools.find((x) => x.name === 'pg_items_in_range')!;
    expect(listed.inputSchema).toEqual(pg.data.input_schema as typeof listed.inputSchema);
    expect(listed.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(tools.map((x) => x.name)).toContain('my_items_named');

    expect(await rows('pg_items_in_range', { min_price: 4, ids: [1, 2, 3] })).toEqual([
      { id: 2, name: 'pear', price: 4 },
      { id: 3, name: 'plum', price: 5 },
    ]);
    expect(await rows('pg_items_in_range', { min_price: 0, ids: [1, 2, 3], exclude: 'pear' })).toEqual([
      { id: 1, name: 'apple', price: 3 },
      { id: 3, name: 'plum', price: 5 },
    ]);
    expect(await rows('my_items_named', { name: 'pear' })).toEqual([{ id: 2, name: 'pear' }]);
    expect(await rows('my_items_named', { name: 'none', ids: [1, 3] })).toEqual([
      { id: 1, name: 'apple' },
      { id: 3, name: 'plum' },
    ]);
  });

  test('wrong argument types are -32602 naming the parameter; nothing runs', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['pg_items_in_range', { min_price: 'three', ids: [1] }, 'min_price'],
      ['pg_items_in_range', { min_price: 1.5, ids: [1] }, 'min_price'],
      ['pg_items_in_range', { min_price: 5000, ids: [1] }, 'min_price'],
      ['pg_items_in_range', { min_price: 1, ids: ['1'] }, 'ids'],
      ['pg_items_in_range', { min_price: 1, ids: [] }, 'ids'],
      ['pg_items_in_range', { ids: [1] }, 'min_price'],
      ['pg_items_in_range', { min_price: 1, ids: [1], sql: 'SELECT 1' }, 'sql'],
      ['my_items_named', { name: 42 }, 'name'],
      ['my_items_named', { name: 'x'.repeat(101) }, 'name'],
    ];
    for (const [name, args, param] of cases) {
      const err = await rpcError(name, args);
      expect([name, param, err.code]).toEqual([name, param, -32602]);
      expect(err.message).toContain(param);
    }
  });

  test('an injection attempt through a string parameter is inert: bound as a value, never spliced', async () => {
    for (const attack of ["x' OR '1'='1", "'; DROP TABLE items; --", "apple' --", '1) OR (1=1', "\\' OR 1=1 -- "]) {
      expect(await rows('my_items_named', { name: attack })).toEqual([]);
      // As the excluded name it matches no row, so every item in range comes back: the text was compared, not run.
      expect((await rows('pg_items_in_range', { min_price: 0, ids: [1, 2, 3], exclude: attack })).length).toBe(3);
    }
    expect(await rows('my_items_named', { name: "apple' OR '1'='1" })).toEqual([]);
    expect(await t.pg('SELECT count(*)::int AS n FROM items')).toEqual([{ n: 3 }]);
    expect(await t.my('SELECT count(*) AS n FROM items')).toEqual([{ n: 3 }]);
  });

  test('save-time refusals: 422 with what is wrong, 409 for a taken name; nothing is stored', async () => {
    const base = { name: 'refused_tool', description: 'd' };
    const p = (name: string, type: sdk.SavedToolParameter['type'] = 'string', extra: Partial<sdk.SavedToolParameter> = {}) => ({
      name,
      type,
      description: name,
      ...extra,
    });
    const refusals: [string, sdk.SavedToolRequest, string][] = [
      [pgId, { ...base, statement: "SELECT * FROM items WHERE name = ':n'", parameters: [p('n')] }, 'inside a string literal'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE ":n" = 1', parameters: [p('n')] }, 'quoted name'],
      [myId, { ...base, statement: 'SELECT * FROM items WHERE `:n` = 1', parameters: [p('n')] }, 'quoted name'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE name = :other', parameters: [p('n')] }, ':other names no declared parameter'],
      [pgId, { ...base, statement: 'SELECT * FROM items', parameters: [p('n')] }, 'does not use it'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE id = $1', parameters: [] }, 'Positional parameters'],
      [myId, { ...base, statement: 'SELECT * FROM items WHERE id = ?', parameters: [] }, 'Positional parameters'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE name = {{n}}', parameters: [] }, '{{...}}'],
      [pgId, { ...base, statement: 'SELECT * FROM items; DROP TABLE items', parameters: [] }, 'refused'],
      [pgId, { ...base, statement: 'SELECT * FROM information_schema.tables WHERE table_name = :n', parameters: [p('n')] }, 'refused'],
      [pgId, { ...base, statement: 'SELECT pg_sleep(:n) FROM items', parameters: [p('n', 'number')] }, 'pg_sleep'],
      // A JOIN over the connector's own tables is a saved tool now (issue 38); one reaching outside them is not.
      [pgId, { ...base, statement: 'SELECT i.id FROM items i JOIN information_schema.tables n ON true', parameters: [] }, 'refused'],
      [myId, { ...base, statement: 'UPDATE items SET price = :p', parameters: [p('p', 'integer')] }, 'read-only'],
      [pgId, { ...base, statement: 'DROP TABLE notes', parameters: [] }, 'refused'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE id = :n', parameters: [p('n', 'integer', { default: 'one' })] }, 'default'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE name = :n', parameters: [p('n', 'string', { pattern: '^(a+)+$' })] }, 'exponential'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE name = :n', parameters: [p('n', 'enum')] }, 'values'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE id = :n', parameters: [p('n', 'integer', { minimum: 5, maximum: 1 })] }, 'minimum'],
      [pgId, { ...base, statement: 'SELECT * FROM items WHERE id = :n', parameters: [p('n', 'integer'), p('n', 'integer')] }, 'twice'],
    ];
    for (const [connectorId, body, words] of refusals) {
      const answer = await save(connectorId, body);
      expect([body.statement, answer.status, answer.error?.error]).toEqual([body.statement, 422, 'saved_tool_invalid']);
      expect(answer.error!.message).toContain(words);
    }
    const taken = await save(pgId, { ...base, name: 'query_postgresql_items', statement: 'SELECT 1 FROM items', parameters: [] });
    expect([taken.status, taken.error?.error]).toEqual([409, 'tool_name_taken']);
    const listed = await sdk.listSavedTools({ client: rest(), path: { connectorId: pgId } });
    expect(listed.data!.saved_tools.map((x) => x.name)).toEqual(['pg_items_in_range']);
    expect(await toolNames()).not.toContain('refused_tool');
  });

  test('a statement that writes is allowed only where the connector writes, and defaults to requiring approval', async () => {
    const body: sdk.SavedToolRequest = {
      name: 'pg_set_note',
      description: 'Changes a note.',
      statement: 'UPDATE notes SET body = :body WHERE id = :id',
      parameters: [
        { name: 'body', type: 'string', description: 'New text', maxLength: 200 },
        { name: 'id', type: 'integer', description: 'Note id' },
      ],
    };
    const saved = await save(pgId, body);
    expect([saved.status, saved.data.writes, saved.data.requires_approval]).toEqual([201, true, true]);
    const held = await call('pg_set_note', { body: "x'); DELETE FROM notes; --", id: 1 });
    expect(held.structuredContent).toMatchObject({ status: 'pending_approval' });
    expect(await t.pg('SELECT body FROM notes WHERE id = 1')).toEqual([{ body: 'first' }]);
    // A new statement ends the calls held for the old one: the approver saw arguments for a statement that is gone.
    const approvalId = (held.structuredContent as unknown as { approvalId: string }).approvalId;
    const changed = { ...body, statement: 'UPDATE notes SET body = :body WHERE id = :id AND id > 0' };
    const put = await sdk.updateSavedTool({ client: rest(), path: { connectorId: pgId, toolId: saved.data.id }, body: changed });
    expect([put.response.status, put.data?.version, put.data?.requires_approval]).toEqual([200, 2, true]);
    const approvals = await sdk.listApprovals({ client: rest() });
    const ended = approvals.data!.approvals.find((a) => a.id === approvalId)!;
    expect([ended.status, ended.reason]).toEqual(['expired', expect.stringContaining('changed (version 2)')]);
    // An admin who turns approval off runs it directly: the hostile text is stored as the note's text.
    const settings = await sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId: saved.data.id }, body: { requires_approval: false } });
    expect(settings.response.status).toBe(200);
    expect((await call('pg_set_note', { body: "x'); DELETE FROM notes; --", id: 1 })).structuredContent).toMatchObject({ rowCount: 1 });
    expect(await t.pg('SELECT id, body FROM notes ORDER BY id')).toEqual([
      { id: 1, body: "x'); DELETE FROM notes; --" },
      { id: 2, body: 'second' },
    ]);
    // The per-tool read_only setting refuses its write, like any tool's.
    await sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId: saved.data.id }, body: { read_only: true } });
    const refused = await call('pg_set_note', { body: 'y', id: 2 });
    expect([refused.isError, refused.content[0]!.text]).toEqual([true, expect.stringContaining('read-only')]);
  });

  test('a change is a new version, audited with the old and new statement; versions stay after deletion', async () => {
    const [current] = (await sdk.listSavedTools({ client: rest(), path: { connectorId: myId } })).data!.saved_tools;
    const next = {
      ...MY_NAMED,
      description: 'Items by exact name.',
      statement: 'SELECT id, name, price FROM items WHERE name = :name ORDER BY id',
      parameters: [MY_NAMED.parameters![0]!],
    };
    const put = await sdk.updateSavedTool({ client: rest(), path: { connectorId: myId, toolId: current!.id }, body: next });
    expect([put.response.status, put.data?.version, put.data?.statement]).toEqual([200, 2, next.statement]);
    const listed = (await client.listTools()).tools.find((x) => x.name === 'my_items_named')!;
    expect([listed.description, Object.keys(listed.inputSchema.properties ?? {})]).toEqual(['Items by exact name.\nConnector: my', ['name']]);
    expect(await rows('my_items_named', { name: 'plum' })).toEqual([{ id: 3, name: 'plum', price: 5 }]);

    const audit = await sdk.listAuditEvents({ client: rest(), query: { action: 'saved_tool.updated' } });
    const event = audit.data!.events.find((e) => e.target_id === current!.id)!;
    expect(event.details).toMatchObject({ from_version: 1, version: 2, old_statement: MY_NAMED.statement, new_statement: next.statement });

    const removed = await sdk.deleteSavedTool({ client: rest(), path: { connectorId: myId, toolId: current!.id } });
    expect(removed.response.status).toBe(200);
    expect(await toolNames()).not.toContain('my_items_named');
    const versions = await sdk.listSavedToolVersions({ client: rest(), path: { connectorId: myId, toolId: current!.id } });
    expect(versions.data!.versions.map((v) => [v.version, v.statement, v.deleted_at !== null])).toEqual([
      [2, next.statement, true],
      [1, MY_NAMED.statement, true],
    ]);
  });

  test('disabled like any tool: not listed, and a call finds no tool', async () => {
    const [tool] = (await sdk.listSavedTools({ client: rest(), path: { connectorId: pgId } })).data!.saved_tools.filter((x) => x.name === 'pg_items_in_range');
    await sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId: tool!.id }, body: { enabled: false } });
    expect(await toolNames()).not.toContain('pg_items_in_range');
    expect((await rpcError('pg_items_in_range', { min_price: 1, ids: [1] })).message).toContain('Unknown tool');
    await sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId: tool!.id }, body: { enabled: true } });
    expect(await toolNames()).toContain('pg_items_in_range');
  });
});

describe.skipIf(!available)('saved tools are tools like every other', () => {
  test('connector scopes of an API key apply; every call is audited as tool.called', async () => {
    const key = await sdk.createApiKey({ client: rest(), body: { name: 'mysql only', connector_ids: [myId] } });
    expect(key.response.status).toBe(201);
    const scoped = new Client({ name: 'scoped', version: '1.0.0' });
    await scoped.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp/${org.slug}`), {
        requestInit: { headers: { 'X-API-Key': key.data!.key } },
      }),
    );
    try {
      const names = (await scoped.listTools()).tools.map((x) => x.name);
      expect(names).not.toContain('pg_items_in_range');
      expect(names).toContain('query_mysql_items');
      const refused = await scoped.callTool({ name: 'pg_items_in_range', arguments: { min_price: 1, ids: [1] } }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: -32003 });
    } finally {
      await scoped.close();
    }
    const audit = await sdk.listAuditEvents({ client: rest(), query: { action: 'tool.called' } });
    const calls = audit.data!.events.filter((e) => e.target_id === 'pg_items_in_range');
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]!.details).toMatchObject({ tool_name: 'pg_items_in_range', connector_id: pgId, connector_type: 'postgresql', counted: true });
  });
});

describe.skipIf(!available)('free SQL off per connector', () => {
  test('free_sql false: the table tools leave tools/list and are refused; saved tools stay, also after revalidation', async () => {
    expect(await toolNames()).toContain('query_postgresql_items');
    const patched = await sdk.updateConnector({ client: rest(), path: { connectorId: pgId }, body: { free_sql: false } });
    expect([patched.response.status, patched.data?.free_sql]).toEqual([200, false]);
    const names = await toolNames();
    expect(names.filter((n) => n.startsWith('query_postgresql_'))).toEqual([]);
    expect(names).toContain('pg_items_in_range');
    expect(names).toContain('query_mysql_items');
    const refused = await rpcError('query_postgresql_items', { sql: 'SELECT 1 FROM items' });
    expect([refused.code, refused.message]).toEqual([-32602, expect.stringContaining('Unknown tool')]);

    await sdk.revalidateConnector({ client: rest(), path: { connectorId: pgId } });
    await g.deps.jobs.idle();
    expect(await rows('pg_items_in_range', { min_price: 5, ids: [3] })).toEqual([{ id: 3, name: 'plum', price: 5 }]);
    expect((await toolNames()).filter((n) => n.startsWith('query_postgresql_'))).toEqual([]);

    await sdk.updateConnector({ client: rest(), path: { connectorId: pgId }, body: { free_sql: true } });
    expect(await toolNames()).toContain('query_postgresql_items');
  });

  test('a connector created with free_sql false serves only its saved tools from the start', async () => {
    const created = await createConnector(g, manage, { name: 'pg locked', type: 'postgresql', config: t.pgConfig, free_sql: false } as never);
    expect(created.free_sql).toBe(false);
    const tools = await sdk.listTools({ client: rest(), path: { orgId: org.orgId }, query: { connector_id: created.id } });
    expect(tools.data!.tools.length).toBeGreaterThan(0);
    const served = await toolNames();
    expect(tools.data!.tools.filter((x) => served.includes(x.name))).toEqual([]);
  });
});

describe.skipIf(!available)('docs/tool-policies.md', () => {
  test('the worked example is accepted as written and yields the inputSchema the page shows; the call it shows runs', async () => {
    const page = readFileSync(join(import.meta.dir, '..', 'docs', 'tool-policies.md'), 'utf8');
    const [definition, schema] = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
    await t.pg(
      'CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, status text NOT NULL, total numeric NOT NULL, created_at timestamptz NOT NULL)',
    );
    await t.pg("INSERT INTO orders VALUES (1, 42, 'paid', 10, '2026-02-01'), (2, 42, 'open', 5, '2025-12-01'), (3, 7, 'paid', 8, '2026-03-01')");
    await sdk.revalidateConnector({ client: rest(), path: { connectorId: pgId } });
    await g.deps.jobs.idle();
    const saved = await save(pgId, definition);
    expect([saved.status, saved.error, saved.data.table.name]).toEqual([201, undefined, 'orders']);
    expect(saved.data.input_schema).toEqual(schema);
    expect(await rows('recent_orders_of_customer', { customer: 42, since: '2026-01-01' })).toEqual([
      { id: 1, status: 'paid', total: 10, created_at: '2026-02-01T00:00:00Z' },
    ]);
    const err = await rpcError('recent_orders_of_customer', { customer: 'forty-two', since: '2026-01-01' });
    expect(err.message).toContain('Invalid arguments for recent_orders_of_customer: arguments.customer must be integer');
  });
});
