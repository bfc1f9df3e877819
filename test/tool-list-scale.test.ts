// Issue 38 items 3 and 5 against a real PostgreSQL database of 2,000 tables (its own schema, dropped afterwards):
// include/exclude patterns decide which tables become tools, tools/list pages through a cursor bound to the org,
// scope and catalog version, descriptions name the connector, a second connector's clashing names derive from its
// name (an old `_2` is renamed, keeping its settings), and many tools are enabled or disabled at once. Each connector
// also lists one schema tool, `describe_<connector name>` (decision 0313), beside its table tools.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import postgres from 'postgres';
import { api, freshDatabase, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, restTools, rowsOf, rpc, type Credential } from './support/mcp.ts';
import { PG_URL, serviceAvailable } from './support/services.ts';
import { verifies } from './requirements.ts';
import { loadConfig } from '../src/config.ts';

setDefaultTimeout(120_000);
const available = await serviceAvailable('postgres');

const TABLES = 2000;
/** The first ORDERS tables are `order_NNNN`, the rest `item_NNNN`. */
const ORDERS = 20;
const schema = `h4_many_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
const database = new URL(PG_URL).pathname.slice(1) || 'postgres';
const pad = (i: number) => String(i).padStart(4, '0');

let admin: postgres.Sql;
let store: { url: string; drop: () => Promise<void> };
let g: TestGateway;
let org: Onboarded;
let token: string;
let key: Credential;
const pgConfig = () => {
  const url = new URL(PG_URL);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    database,
    user: decodeURIComponent(url.username) || 'postgres',
    tls: 'disable',
    schemas: [schema],
  };
};

beforeAll(async () => {
  if (!available) return;
  admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE SCHEMA ${schema}`);
  await admin.unsafe(`DO $$ BEGIN FOR i IN 1..${TABLES} LOOP
    EXECUTE format('CREATE TABLE ${schema}.%s (id integer PRIMARY KEY, label text NOT NULL, amount numeric(10,2))',
      CASE WHEN i <= ${ORDERS} THEN 'order_' ELSE 'item_' END || lpad(i::text, 4, '0'));
  END LOOP; END $$`);
  await admin.unsafe(`INSERT INTO ${schema}.order_0001 VALUES (1, 'first order', 9.5)`);
  store = await freshDatabase('tg_h4_scale');
  g = await startTestGateway('postgres', {}, store.url);
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
}, 300_000);
afterAll(async () => {
  await g?.close();
  await store?.drop();
  if (admin) {
    // 2,000 tables in one DROP ... CASCADE take more locks than a default server allows in one transaction.
    for (let left = TABLES; left > 0; left -= 250) {
      await admin.unsafe(`DO $$ DECLARE r record; BEGIN
        FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = '${schema}' LIMIT 250 LOOP
          EXECUTE format('DROP TABLE ${schema}.%I', r.tablename);
        END LOOP; END $$`);
    }
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}, 120_000);

type Page = { tools: { name: string; description: string }[]; nextCursor?: string };
async function listPage(cursor?: string, credential: Credential = key, slug = org.slug): Promise<{ page: Page; bytes: number }> {
  const answer = await rpc(g, slug, credential, 'tools/list', cursor === undefined ? {} : { cursor });
  expect(answer.status).toBe(200);
  if (answer.body.error) throw new Error(`tools/list failed: ${answer.text}`);
  return { page: answer.body.result, bytes: answer.text.length };
}
async function walk(): Promise<{ names: string[]; pages: number; maxBytes: number; descriptions: string[] }> {
  const names: string[] = [];
  const descriptions: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  let maxBytes = 0;
  do {
    const { page, bytes } = await listPage(cursor);
    pages++;
    maxBytes = Math.max(maxBytes, bytes);
    expect(page.tools.length).toBeLessThanOrEqual(g.config.toolsListPageSize);
    for (const t of page.tools) {
      names.push(t.name);
      descriptions.push(t.description);
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return { names, pages, maxBytes, descriptions };
}

let few: { id: string; status?: string };
let all: { id: string; status?: string };

describe.skipIf(!available)('a connector of 2,000 tables', () => {
  test('an include pattern of 20 tables yields 20 table tools and the schema tool, in one page', async () => {
    verifies('CONN-TABLE-FILTER', 'TOOLS-CONNECTOR-NAMED');
    const started = performance.now();
    few = await createConnector(g, token, {
      name: 'orders db',
      type: 'postgresql',
      config: pgConfig(),
      ...({ include_tables: [`${schema}.order*`], description: 'production, EU' } as object),
    } as never);
    const ms = performance.now() - started;
    expect(few).toMatchObject({ status: 'active', include_tables: [`${schema}.order*`], exclude_tables: [], description: 'production, EU' });
    const tools = await restTools(g, token, org.orgId, few.id);
    expect(tools.map((t) => t.tool_name).sort()).toEqual([
      'describe_orders_db',
      ...Array.from({ length: ORDERS }, (_, i) => `query_postgresql_order_${pad(i + 1)}`),
    ]);
    const { page, bytes } = await listPage();
    expect(page.nextCursor).toBeUndefined();
    expect(page.tools.length).toBe(ORDERS + 2); // the schema tool and check_approval_status
    const own = page.tools.filter((x) => x.name.startsWith('query_') || x.name.startsWith('describe_'));
    expect(own.length).toBe(ORDERS + 1);
    for (const t of own) expect(t.description.endsWith('\nConnector: orders db (production, EU)')).toBe(true);
    // The schema tool describes the 20 included tables, and no other.
    const described = (await callTool(g, org.slug, key, 'describe_orders_db', { limit: 100 })).body.result;
    expect(described.isError).toBeFalsy();
    const schemaAnswer = described.structuredContent as { matched: number; tables: { name: string }[] };
    expect(schemaAnswer.matched).toBe(ORDERS);
    expect(schemaAnswer.tables.map((t) => t.name).sort()).toEqual(Array.from({ length: ORDERS }, (_, i) => `order_${pad(i + 1)}`));
    expect(rowsOf(await callTool(g, org.slug, key, 'query_postgresql_order_0001', { sql: `SELECT label FROM ${schema}.order_0001` }))).toEqual([
      { label: 'first order' },
    ]);
    // A table the pattern leaves out has no tool: nothing to call.
    expectRpcError(await callTool(g, org.slug, key, 'query_postgresql_item_0021', { sql: 'SELECT 1' }), -32602);
    console.log(`[h4 scale] include 20 of ${TABLES}: create+introspect ${ms.toFixed(0)} ms, tools/list ${bytes} bytes`);
  });

  test('exclude wins over include, and a changed filter revalidates', async () => {
    verifies('CONN-TABLE-FILTER');
    // A saved tool over order_0015: served while its table is, not once the filter leaves the table out.
    const saved = await api(g, 'POST', `/api/connectors/${few.id}/saved-tools`, token, {
      name: 'orders_fifteen_by_id',
      description: 'One row of order_0015.',
      statement: `SELECT id, label FROM ${schema}.order_0015 WHERE id = :id`,
      parameters: [{ name: 'id', type: 'integer', description: 'Row id' }],
    });
    expect(saved.status).toBe(201);
    const listed = async () => (await listPage()).page.tools.map((t) => t.name);
    expect(await listed()).toContain('orders_fifteen_by_id');
    const patched = await api(g, 'PATCH', `/api/connectors/${few.id}`, token, { exclude_tables: [`${schema}.ORDER_001?`] });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { status: string }).status).toBe('validating');
    await g.deps.jobs.idle();
    // order_0010..order_0019 excluded (case-insensitive), order_0001..0009 and order_0020 stay; the saved tool too.
    expect((await restTools(g, token, org.orgId, few.id)).filter((t) => t.tool_name.startsWith('query_')).length).toBe(10);
    expect(await listed()).not.toContain('orders_fifteen_by_id');
    expect(await listed()).not.toContain('query_postgresql_order_0015');
    expectRpcError(await callTool(g, org.slug, key, 'orders_fifteen_by_id', { id: 1 }), -32602);
    const back = await api(g, 'PATCH', `/api/connectors/${few.id}`, token, { exclude_tables: [] });
    expect(back.status).toBe(200);
    await g.deps.jobs.idle();
    expect((await restTools(g, token, org.orgId, few.id)).filter((t) => t.tool_name.startsWith('query_')).length).toBe(ORDERS);
    expect(await listed()).toContain('orders_fifteen_by_id');
    const savedId = ((await saved.json()) as { id: string }).id;
    expect((await api(g, 'DELETE', `/api/connectors/${few.id}/saved-tools/${savedId}`, token)).status).toBe(200);
  });

  test('bad patterns and descriptions are 400 naming the field; patterns on an mcp connector are 400', async () => {
    verifies('CONN-TABLE-FILTER');
    const cases: [unknown, RegExp][] = [
      [{ include_tables: ['orders'] }, /include_tables\[0\].*schema\.table/],
      [{ exclude_tables: ['public.'] }, /exclude_tables\[0\]/],
      [{ description: 'two\nlines' }, /description/],
      [{ include_tables: 'public.*' }, /include_tables/],
    ];
    for (const [body, message] of cases) {
      const response = await api(g, 'PATCH', `/api/connectors/${few.id}`, token, body);
      expect(response.status).toBe(400);
      const error = (await response.json()) as { error: string; message: string };
      expect(error.error).toBe('validation_error');
      expect(error.message).toMatch(message);
    }
    const mcp = await api(g, 'POST', '/api/connectors', token, {
      name: 'upstream',
      type: 'mcp',
      config: { url: 'https://mcp.example.com/mcp' },
      include_tables: ['public.*'],
    });
    expect(mcp.status).toBe(400);
    expect(((await mcp.json()) as { message: string }).message).toMatch(/database connectors only/);
  });

  test('every table: tools/list pages through all 2,000 in a stable order, without duplicates', async () => {
    verifies('TOOLS-LIST-PAGES', 'TOOLS-CONNECTOR-NAMED');
    const started = performance.now();
    all = await createConnector(g, token, { name: 'Staging', type: 'postgresql', config: pgConfig() });
    const ms = performance.now() - started;
    expect(all.status).toBe('active');
    const listStarted = performance.now();
    const first = await walk();
    const walkMs = performance.now() - listStarted;
    const total = TABLES + ORDERS + 2 + 1; // both connectors' table tools, their schema tools, check_approval_status
    expect(first.names.length).toBe(total);
    expect(new Set(first.names).size).toBe(total);
    expect(first.pages).toBe(Math.ceil(total / g.config.toolsListPageSize));
    // The second connector's order tables clash with the first's: named after it, never a bare _2.
    expect(first.names).toContain('query_staging_order_0001');
    expect(first.names).toContain('query_postgresql_item_2000');
    expect(first.names).toContain('describe_staging');
    expect(first.names.filter((n) => /_\d$/.test(n) && !/_\d{4}$/.test(n))).toEqual([]);
    expect(first.descriptions.filter((d) => d.endsWith('\nConnector: Staging')).length).toBe(TABLES + 1); // and its schema tool
    const again = await walk();
    expect(again.names).toEqual(first.names);
    const unpaged = first.descriptions.reduce((n, d) => n + d.length, 0);
    console.log(
      `[h4 scale] all ${TABLES}: create+introspect ${ms.toFixed(0)} ms; tools/list ${first.pages} pages, largest ${first.maxBytes} bytes, ` +
        `walk ${walkMs.toFixed(0)} ms (cold), descriptions alone ${unpaged} bytes`,
    );
  });

  test('a stale, edited or foreign cursor is -32602 with a clear message', async () => {
    verifies('TOOLS-LIST-PAGES');
    const { page } = await listPage();
    expect(page.nextCursor).toBeString();
    const cursor = page.nextCursor!;
    // Another org's credential presenting this org's cursor.
    const other = await onboard(g);
    expectRpcError(await rpc(g, other.slug, { apiKey: other.apiKey }, 'tools/list', { cursor }), -32602, /not issued by tools\/list for this org/);
    // An edited offset.
    const parts = Buffer.from(cursor, 'base64url').toString().split('.');
    parts[2] = String(Number(parts[2]) + 7);
    const edited = Buffer.from(parts.join('.')).toString('base64url');
    expectRpcError(await rpc(g, org.slug, key, 'tools/list', { cursor: edited }), -32602, /Invalid cursor/);
    expectRpcError(await rpc(g, org.slug, key, 'tools/list', { cursor: 'not a cursor' }), -32602, /Invalid cursor/);
    // The catalog changes (one tool disabled): the old cursor is stale.
    const tool = (await restTools(g, token, org.orgId, all.id))[0]!;
    expect((await api(g, 'PATCH', `/api/mcp/${org.orgId}/tools/${tool.id}/metadata`, token, { enabled: false })).status).toBe(200);
    expectRpcError(await rpc(g, org.slug, key, 'tools/list', { cursor }), -32602, /tool list changed since this cursor was issued/);
    expect((await api(g, 'PATCH', `/api/mcp/${org.orgId}/tools/${tool.id}/metadata`, token, { enabled: true })).status).toBe(200);
  });

  test('an old `_2` name is renamed after its connector at the next validation, keeping the tool and its settings', async () => {
    verifies('TOOLS-CONNECTOR-NAMED');
    const tool = (await restTools(g, token, org.orgId, all.id)).find((t) => t.tool_name === 'query_staging_order_0002')!;
    expect((await api(g, 'PATCH', `/api/mcp/${org.orgId}/tools/${tool.id}/metadata`, token, { requires_approval: true })).status).toBe(200);
    // As an older gateway named it.
    const store = postgres(g.databaseUrl!, { max: 1, onnotice: () => {} });
    await store.unsafe(`UPDATE tools SET base_name = 'query_postgresql_order_0002_2' WHERE id = '${tool.id}'`);
    await store.end();
    expect((await restTools(g, token, org.orgId, all.id)).find((t) => t.id === tool.id)!.tool_name).toBe('query_postgresql_order_0002_2');
    expect((await api(g, 'POST', `/api/connectors/${all.id}/revalidate`, token)).status).toBe(202);
    await g.deps.jobs.idle();
    const renamed = (await restTools(g, token, org.orgId, all.id)).find((t) => t.id === tool.id)!;
    expect(renamed).toMatchObject({ tool_name: 'query_staging_order_0002', requires_approval: true });
    // The validation's audit row says which names agents lost.
    const audit = (await (await api(g, 'GET', `/api/audit?action=connector.validated&target_id=${all.id}&limit=1`, token)).json()) as {
      events: { details: { renamed?: unknown } }[];
    };
    expect(audit.events[0]!.details.renamed).toEqual([{ from: 'query_postgresql_order_0002_2', to: 'query_staging_order_0002' }]);
    const after = await restTools(g, token, org.orgId, all.id);
    expect(after.filter((t) => t.tool_name.startsWith('query_')).length).toBe(TABLES);
    expect(after.map((t) => t.tool_name).filter((n) => !n.startsWith('query_'))).toEqual(['describe_staging']);
  });
});

describe.skipIf(!available)('many tools at once', () => {
  const bulk = (body: unknown) => api(g, 'PATCH', `/api/mcp/${org.orgId}/tools`, token, body);

  test('disable every item_ tool of a connector in one request, one audit row; enable them again', async () => {
    verifies('TOOLS-BULK');
    const response = await bulk({ connector_id: all.id, name_prefix: 'query_postgresql_item_', enabled: false });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { updated: number; tools: { enabled: boolean }[] };
    expect(body.updated).toBe(TABLES - ORDERS);
    expect(body.tools.every((t) => !t.enabled)).toBe(true);
    const { names } = await walk();
    expect(names.filter((n) => n.startsWith('query_postgresql_item_'))).toEqual([]);
    expect(names.length).toBe(ORDERS * 2 + 2 + 1); // both connectors' order tools, their schema tools, check_approval_status
    expect(names).toContain('describe_staging');
    const audit = (await (await api(g, 'GET', '/api/audit?action=tools.bulk_updated', token)).json()) as { events: { details: any }[] };
    expect(audit.events.length).toBe(1);
    expect(audit.events[0]!.details).toMatchObject({
      enabled: false,
      selected: TABLES - ORDERS,
      changed: TABLES - ORDERS,
      name_prefix: 'query_postgresql_item_',
    });
    expect(audit.events[0]!.details.tool_ids.length).toBe(1000);
    const back = (await (await bulk({ connector_id: all.id, enabled: true })).json()) as { updated: number };
    expect(back.updated).toBe(TABLES - ORDERS);
  });

  test('by ids: all or nothing; an unknown id changes nothing; exactly one selector', async () => {
    verifies('TOOLS-BULK');
    const ids = (await restTools(g, token, org.orgId, few.id)).map((t) => t.id);
    const refused = await bulk({ ids: [...ids, '00000000-0000-4000-8000-000000000000'], enabled: false });
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { message: string }).message).toMatch(/No change was made: 1 of the ids/);
    expect((await restTools(g, token, org.orgId, few.id)).every((t) => t.enabled)).toBe(true);
    expect((await bulk({ enabled: false })).status).toBe(400);
    expect((await bulk({ ids, connector_id: few.id, enabled: false })).status).toBe(400);
    expect((await bulk({ ids, name_prefix: 'query_', enabled: false })).status).toBe(400);
    const done = await bulk({ ids: ids.slice(0, 5), enabled: false });
    expect(done.status).toBe(200);
    expect(((await done.json()) as { updated: number }).updated).toBe(5);
    expect((await restTools(g, token, org.orgId, few.id)).filter((t) => !t.enabled).length).toBe(5);
    // Another org cannot reach these tools: its ids are not ours, and ours are not its.
    const other = await onboard(g);
    const otherToken = await tokenFor(g, other.clientId, other.clientSecret);
    const foreign = await api(g, 'PATCH', `/api/mcp/${other.orgId}/tools`, otherToken, { ids, enabled: true });
    expect(foreign.status).toBe(404);
    expect((await restTools(g, token, org.orgId, few.id)).filter((t) => !t.enabled).length).toBe(5);
  });
});

describe.skipIf(!available)('the page size is a setting', () => {
  test('TOOLGATE_TOOLS_LIST_PAGE_SIZE=3: eleven tools in pages of three, same order as one page; out of range stops the start', async () => {
    verifies('TOOLS-LIST-PAGES');
    expect(() => loadConfig({ TOOLGATE_TOOLS_LIST_PAGE_SIZE: '0' })).toThrow(/TOOLGATE_TOOLS_LIST_PAGE_SIZE/);
    const small = await startTestGateway('pglite', { TOOLGATE_TOOLS_LIST_PAGE_SIZE: '3' });
    try {
      const o = await onboard(small);
      const bearer = await tokenFor(small, o.clientId, o.clientSecret);
      const c = await createConnector(small, bearer, {
        name: 'nine',
        type: 'postgresql',
        config: pgConfig(),
        ...({ include_tables: [`${schema}.order_000?`] } as object),
      } as never);
      expect(c.status).toBe('active');
      const names: string[] = [];
      const sizes: number[] = [];
      let cursor: string | undefined;
      do {
        const answer = await rpc(small, o.slug, { apiKey: o.apiKey }, 'tools/list', cursor ? { cursor } : {});
        const page = answer.body.result as Page;
        sizes.push(page.tools.length);
        names.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor);
      // Nine table tools, the connector's schema tool (decision 0313) and check_approval_status.
      expect(sizes).toEqual([3, 3, 3, 2]);
      expect(names).toEqual(['describe_nine', ...Array.from({ length: 9 }, (_, i) => `query_postgresql_order_${pad(i + 1)}`), 'check_approval_status']);
    } finally {
      await small.close();
    }
  });
});
