/**
 * Decision 0405 on a real PostgreSQL database and an upstream MCP server: a tool row whose table is no longer served
 * (excluded by the connector's filter, or dropped) or whose upstream tool went away is withdrawn, not deleted. While
 * withdrawn it is served nowhere (tools/list, tools/call, a JOIN through another table's tool, the REST list and
 * PATCH, the tool count, a held call's approval); when its table is served again the same row comes back with its
 * policy, override, disabled state and approval settings. A different table taking the withdrawn row's name gets a
 * row of its own, with none of them.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, listToolNames, restTools, rowsOf, type Credential, type ToolRow } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { sdkFor } from './support/sdk.ts';
import { startListingUpstream } from './support/upstream-mcp.ts';
import { verifies } from './requirements.ts';
import * as sdk from '../sdk/index.ts';

setDefaultTimeout(60_000);
const pgUp = await serviceAvailable('postgres');

const CUSTOMERS = [
  'CREATE TABLE customers (id integer PRIMARY KEY, name varchar(50) NOT NULL, ssn varchar(30))',
  "INSERT INTO customers VALUES (1, 'ann', 'ssn-1111'), (2, 'abe', 'ssn-2222')",
];
const FIXTURE = [...CUSTOMERS, 'CREATE TABLE orders (id integer PRIMARY KEY, total integer NOT NULL)'];
const POLICY = { hidden_columns: ['ssn'], masked_columns: [], row_filter: null };
const JOIN = 'SELECT i.id, c.name, c.ssn FROM items i JOIN customers c ON c.id = i.id ORDER BY i.id';
const WITHDRAWN = ['customer_lookup', 'query_postgresql_notes', 'query_postgresql_orders'];

describe.skipIf(!pgUp)('withdrawn tool rows keep their settings (decision 0405)', () => {
  let g: TestGateway;
  let t: Targets;
  let org: Onboarded;
  let client: ReturnType<typeof sdkFor>['client'];
  let token: string;
  let key: Credential;
  let connectorId: string;
  /** Tool rows by table, as first introspected. */
  const first: Record<string, ToolRow> = {};
  /** What REST showed of customers, notes and orders once their settings were made. */
  let before: Awaited<ReturnType<typeof settingsOf>>;

  const tools = () => restTools(g, token, org.orgId);
  const patchTool = (id: string, body: Record<string, unknown>) => sdk.updateToolMetadata({ client, path: { orgId: org.orgId, toolId: id }, body });
  const revalidate = async (id: string, body?: Record<string, unknown>) => {
    const r = body
      ? await sdk.updateConnector({ client, path: { connectorId: id }, body })
      : await sdk.revalidateConnector({ client, path: { connectorId: id } });
    expect(r.response.status, JSON.stringify(r.error)).toBeLessThan(300);
    await g.deps.jobs.idle();
  };
  const toolCount = async () => (await sdk.getProvisioningStatus({ client, path: { orgId: org.orgId } })).data!.toolCount;
  /** The rows of these ids as REST shows them: every setting an admin can give a tool (undefined: not listed). */
  const settingsOf = async (ids: string[]) => {
    const rows = new Map((await tools()).map((r) => [r.id, r]));
    return ids.map((id) => {
      const r = rows.get(id) as (ToolRow & { policy: unknown }) | undefined;
      if (!r) return undefined;
      const { enabled, requires_approval, approval_emails, approval_ttl_seconds, tool_name_override, tool_description_override, policy } = r;
      return { enabled, requires_approval, approval_emails, approval_ttl_seconds, tool_name_override, tool_description_override, policy };
    });
  };
  const governed = () => ['customers', 'notes', 'orders'].map((table) => first[table]!.id);

  beforeAll(async () => {
    [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }), createTargets('tg_withdraw', 'pg')]);
    for (const s of FIXTURE) await t.pg(s);
    org = await onboard(g);
    token = await tokenFor(g, org.clientId, org.clientSecret);
    client = sdkFor(g, token).client;
    key = { apiKey: org.apiKey };
    const connector = await createConnector(g, token, { name: 'shop', type: 'postgresql', config: t.pgConfig });
    expect(connector.status).toBe('active');
    connectorId = connector.id;
    for (const row of await tools()) first[row.tool_name.replace('query_postgresql_', '')] = row;
    const set = async (table: string, body: Record<string, unknown>) => expect((await patchTool(first[table]!.id, body)).response.status).toBe(200);
    await set('customers', { policy: POLICY, tool_name_override: 'customer_lookup', tool_description_override: 'Customers by id.' });
    await set('notes', { requires_approval: true, approval_emails: ['notes-approver@example.com'], approval_ttl_seconds: 900 });
    await set('orders', { enabled: false });
    before = await settingsOf(governed());
    expect(before[0]).toMatchObject({ tool_name_override: 'customer_lookup', policy: POLICY });
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 60_000);

  const settingsNow = () => settingsOf(governed());

  test('an excluded table is served nowhere; included again it is the same row with every setting and its policy', async () => {
    verifies('TOOLS-WITHDRAWN', 'CONN-TABLE-FILTER');
    // Served and governed: a JOIN through another table's tool reads customers under its policy (ssn hidden: refused).
    expect(rowsOf(await callTool(g, org.slug, key, 'query_postgresql_items', { sql: JOIN.replace(', c.ssn', '') }))).toEqual([
      { id: 1, name: 'ann' },
      { id: 2, name: 'abe' },
    ]);
    const held = await callTool(g, org.slug, key, 'query_postgresql_notes', { sql: 'SELECT id FROM notes' });
    const approvalId = held.body.result.structuredContent.approvalId as string;
    expect(approvalId).toBeString();
    const count = await toolCount();

    await revalidate(connectorId, { exclude_tables: ['public.customers', 'public.notes', 'public.orders'] });
    expect(await settingsOf(governed())).toEqual([undefined, undefined, undefined]);
    expect((await patchTool(first.customers!.id, { enabled: false })).response.status).toBe(404);
    expect((await listToolNames(g, org.slug, key)).filter((n) => WITHDRAWN.includes(n))).toEqual([]);
    expectRpcError(await callTool(g, org.slug, key, 'customer_lookup', { sql: 'SELECT name FROM customers' }), -32602);
    expect(await toolCount()).toBe(count - 3);
    // A JOIN through a served table's tool cannot read the withdrawn one, policy or not.
    for (const sql of [JOIN, JOIN.replace(', c.ssn', '')]) {
      const refused = await callTool(g, org.slug, key, 'query_postgresql_items', { sql });
      expect(refused.body.result?.isError, refused.text).toBe(true);
      expect(refused.text).not.toContain('ann');
    }
    // The held call on the withdrawn table: approving it runs nothing, as for a removed tool.
    const approved = await sdk.approveApproval({ client, path: { approvalId } });
    expect(approved.data).toMatchObject({ ok: false, status: 'failed' });

    await revalidate(connectorId, { exclude_tables: [] });
    expect(await settingsNow()).toEqual(before);
    const answer = await callTool(g, org.slug, key, 'customer_lookup', { sql: 'SELECT * FROM customers ORDER BY id' });
    expect(rowsOf(answer)).toEqual([
      { id: 1, name: 'ann' },
      { id: 2, name: 'abe' },
    ]);
    expect(answer.text).not.toContain('ssn-');
    const audit = await sdk.listAuditEvents({ client, query: { action: 'connector.validated', target_id: connectorId, limit: 1 } });
    expect(audit.data!.events[0]!.details).toMatchObject({ returned: ['query_postgresql_customers', 'query_postgresql_notes', 'query_postgresql_orders'] });
  });

  test('a table dropped and re-created comes back as its row; another table taking the name meanwhile gets a row of its own', async () => {
    verifies('TOOLS-WITHDRAWN');
    await t.pg('DROP TABLE customers');
    await revalidate(connectorId);
    expect((await settingsOf(governed()))[0]).toBeUndefined();
    expectRpcError(await callTool(g, org.slug, key, 'customer_lookup', { sql: 'SELECT name FROM customers' }), -32602);
    // "Customers" wants the name the withdrawn row had: it gets it, with none of that row's settings or policy.
    await t.pg('CREATE TABLE "Customers" (id integer PRIMARY KEY, name varchar(50) NOT NULL, ssn varchar(30))');
    await t.pg(`INSERT INTO "Customers" VALUES (9, 'zed', 'ssn-9999')`);
    await revalidate(connectorId);
    const other = (await tools()).find((r) => r.tool_name === 'query_postgresql_customers')!;
    expect(other.id).not.toBe(first.customers!.id);
    const [fresh] = await settingsOf([other.id]);
    expect(fresh).toMatchObject({ enabled: true, requires_approval: false, tool_name_override: null, tool_description_override: null, policy: null });
    expect(rowsOf(await callTool(g, org.slug, key, 'query_postgresql_customers', { sql: 'SELECT ssn FROM "Customers"' }))).toEqual([{ ssn: 'ssn-9999' }]);

    await t.pg('DROP TABLE "Customers"');
    for (const s of CUSTOMERS) await t.pg(s);
    await revalidate(connectorId);
    expect(await settingsNow()).toEqual(before);
    expect((await tools()).map((r) => r.id)).not.toContain(other.id);
    const answer = await callTool(g, org.slug, key, 'customer_lookup', { sql: 'SELECT * FROM customers ORDER BY id' });
    expect(answer.text).toContain('ann');
    expect(answer.text).not.toContain('ssn-');
  });

  test('an upstream MCP tool that goes away and comes back keeps its row; a withdrawn override given to another tool is released', async () => {
    verifies('TOOLS-WITHDRAWN');
    const obj = { type: 'object', properties: {} };
    const listed: { name: string; inputSchema: unknown }[] = [
      { name: 'alpha', inputSchema: obj },
      { name: 'beta', inputSchema: obj },
    ];
    const upstream = startListingUpstream(listed);
    try {
      const c = await createConnector(g, token, { name: 'up', type: 'mcp', config: { url: upstream.url } });
      const rows = await restTools(g, token, org.orgId, c.id);
      const [alpha, beta] = ['alpha', 'beta'].map((n) => rows.find((r) => r.tool_name.endsWith(n))!);
      expect((await patchTool(beta!.id, { tool_name_override: 'beta_tool', requires_approval: true, enabled: false })).response.status).toBe(200);
      listed.pop();
      await revalidate(c.id);
      expect((await restTools(g, token, org.orgId, c.id)).map((r) => r.id)).toEqual([alpha!.id]);
      listed.push({ name: 'beta', inputSchema: obj });
      await revalidate(c.id);
      const [back] = await settingsOf([beta!.id]);
      expect(back).toMatchObject({ tool_name_override: 'beta_tool', requires_approval: true, enabled: false });

      // Withdrawn, its override stays reserved for its return until an admin gives the name to another tool.
      listed.pop();
      await revalidate(c.id);
      expect((await patchTool(alpha!.id, { tool_name_override: 'beta_tool' })).response.status).toBe(200);
      listed.push({ name: 'beta', inputSchema: obj });
      await revalidate(c.id);
      const [released] = await settingsOf([beta!.id]);
      expect(released).toMatchObject({ tool_name_override: null, requires_approval: true, enabled: false });
      expect((await listToolNames(g, org.slug, key)).filter((n) => n === 'beta_tool')).toEqual(['beta_tool']);
    } finally {
      upstream.stop();
    }
  });
});
