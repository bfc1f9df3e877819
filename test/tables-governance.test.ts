/**
 * Issue 38 items 1-3 and 7a at the runtime (docs/decisions/0292, 0299, 0300), live on PostgreSQL and MariaDB through
 * MCP tools/call: a statement reads several tables of its connector and each table it touches is governed by its own
 * tool row, whichever tool the agent called. A JOIN across enabled tables answers; a disabled side is refused by
 * name; one side's mask and row filter hold; an approval on one side holds the call, which runs once approved; the
 * audit row lists every table read; a saved JOIN is created, listed with its typed inputSchema, called and governed
 * the same way; the `single` layout lists one tool that answers a JOIN under the same rows.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, listToolNames, rpc, type Credential, type RpcAnswer } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { sdkFor } from './support/sdk.ts';
import * as sdk from '../sdk/index.ts';

setDefaultTimeout(60_000);
const [pgUp, myUp] = await Promise.all([serviceAvailable('postgres'), serviceAvailable('mysql')]);

const FIXTURE = [
  'CREATE TABLE customers (id integer PRIMARY KEY, tenant varchar(10) NOT NULL, name varchar(50) NOT NULL, email varchar(100), ssn varchar(30))',
  "INSERT INTO customers VALUES (1, 'a', 'ann-a', 'ann@a.example', 'ssn-1111-a'), (2, 'a', 'abe-a', 'abe@a.example', 'ssn-2222-a')," +
    " (3, 'b', 'bob-secret-b', 'bob@b.example', 'ssn-3333-b')",
  'CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, total integer NOT NULL)',
  'INSERT INTO orders VALUES (1, 1, 100), (2, 2, 200), (3, 3, 300)',
  'CREATE TABLE payroll (id integer PRIMARY KEY, customer_id integer NOT NULL, salary varchar(30) NOT NULL)',
  "INSERT INTO payroll VALUES (1, 1, 'salary-987654'), (2, 3, 'salary-555111')",
];
/** Never in any answer: hidden values, raw masked values, tenant b's rows, the disabled table's values. */
const SECRETS = ['ssn-1111-a', 'ssn-2222-a', 'ssn-3333-b', 'ann@a.example', 'abe@a.example', 'bob@b.example', 'bob-secret-b', 'salary-987654', 'salary-555111'];
const POLICY = {
  hidden_columns: ['ssn'],
  masked_columns: [{ column: 'email', mask: 'fixed' as const, text: 'masked-mail' }],
  row_filter: 'tenant = :caller.tenant',
};
const APPROVERS = ['items-approver@example.com'];
const JOIN = 'SELECT o.id, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id';
const ROWS_A = [
  { id: 1, name: 'ann-a', email: 'masked-mail' },
  { id: 2, name: 'abe-a', email: 'masked-mail' },
];

function expectNoLeak(a: RpcAnswer): void {
  for (const secret of SECRETS) expect(a.text).not.toContain(secret);
}
function rows(a: RpcAnswer): Record<string, unknown>[] {
  const result = a.body?.result;
  if (!result || result.isError) throw new Error(`tool call failed: ${a.text}`);
  expectNoLeak(a);
  return result.structuredContent.rows;
}
function refusal(a: RpcAnswer): string {
  expect(a.body.result?.isError, a.text).toBe(true);
  expectNoLeak(a);
  return a.body.result.content[0].text as string;
}

interface World {
  g: TestGateway;
  t: Targets;
  org: Onboarded;
  client: ReturnType<typeof sdkFor>['client'];
  connectorId: string;
  /** Tool ids by table name. */
  toolOf: Record<string, string>;
  /** Agent-facing names by table name. */
  nameOf: Record<string, string>;
  key: Credential;
  schema: string;
}

async function world(kind: 'pg' | 'my'): Promise<World> {
  const [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_h3_gov', kind)]);
  for (const s of FIXTURE) await t[kind](s);
  const org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  const type = kind === 'pg' ? 'postgresql' : 'mysql';
  const connector = await createConnector(g, token, { name: `shop ${kind}`, type, config: kind === 'pg' ? t.pgConfig : t.myConfig });
  expect(connector.status).toBe('active');
  const client = sdkFor(g, token).client;
  const tools = (await sdk.listTools({ client, path: { orgId: org.orgId } })).data!.tools;
  const toolOf: Record<string, string> = {};
  const nameOf: Record<string, string> = {};
  for (const table of ['customers', 'orders', 'payroll', 'items', 'notes']) {
    const tool = tools.find((x) => x.tool_name === `query_${type}_${table}`)!;
    toolOf[table] = tool.id;
    nameOf[table] = tool.name;
  }
  const set = async (table: string, body: Record<string, unknown>) => {
    const r = await sdk.updateToolMetadata({ client, path: { orgId: org.orgId, toolId: toolOf[table]! }, body });
    expect(r.response.status, JSON.stringify(r.error)).toBe(200);
  };
  await set('customers', { policy: POLICY });
  await set('payroll', { enabled: false });
  await set('items', { requires_approval: true, approval_emails: APPROVERS, approval_ttl_seconds: 900 });
  const made = await sdk.createApiKey({ client, body: { name: 'tenant a', attributes: { tenant: 'a' } } });
  expect(made.response.status).toBe(201);
  return { g, t, org, client, connectorId: connector.id, toolOf, nameOf, key: { apiKey: made.data!.key }, schema: kind === 'pg' ? 'public' : t.name };
}

for (const kind of ['pg', 'my'] as const) {
  describe.skipIf(!(kind === 'pg' ? pgUp : myUp))(`tables governed across statements on ${kind === 'pg' ? 'PostgreSQL' : 'MariaDB'} (issue 38)`, () => {
    let w: World;
    const call = (tool: string, args: Record<string, unknown>) => callTool(w.g, w.org.slug, w.key, tool, args);
    const sql = (table: string, statement: string) => call(w.nameOf[table]!, { sql: statement });
    beforeAll(async () => {
      w = await world(kind);
    }, 120_000);
    afterAll(async () => {
      await w?.g.close();
      await w?.t.drop();
    }, 60_000);

    test('a JOIN across two enabled tables answers, with one side’s mask and row filter applied; its audit row lists both tables', async () => {
      expect(rows(await sql('orders', JOIN))).toEqual(ROWS_A);
      // The same statement through the other table's tool: the tool only names the audit row.
      expect(rows(await sql('customers', JOIN))).toEqual(ROWS_A);
      // A subquery and a CTE reach the policy table through its derived table too.
      const sub = 'SELECT o.id FROM orders o WHERE o.customer_id IN (SELECT id FROM customers) ORDER BY o.id';
      expect(rows(await sql('orders', sub)).map((r) => Number(r.id))).toEqual([1, 2]);
      await w.g.deps.audit.drain();
      const events = (await sdk.listAuditEvents({ client: w.client, query: { action: 'tool.called', limit: 10 } })).data!.events;
      const joined = events.find((e) => e.details.tool_name === w.nameOf.orders && (e.details.tables as string[] | undefined)?.length === 2);
      expect(joined?.details.tables).toEqual([`${w.schema}.customers`, `${w.schema}.orders`]);
    });

    test('the hidden column cannot be read through the join [G]', async () => {
      const text = refusal(await sql('orders', 'SELECT o.id, c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id'));
      expect(text).toContain('ssn');
      refusal(await sql('orders', "SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.ssn LIKE 'ssn-1%'"));
    });

    test('with one side disabled the JOIN is refused, naming that table', async () => {
      const text = refusal(await sql('orders', 'SELECT o.id, p.salary FROM orders o JOIN payroll p ON p.customer_id = o.customer_id'));
      expect(text).toContain('payroll');
    });

    test('an approval on one side holds the call (that side’s approvers, its TTL); approved, it runs once', async () => {
      // Without the flagged table nothing is held.
      expect(rows(await sql('orders', 'SELECT id FROM orders ORDER BY id')).length).toBe(3);
      const held = await sql('orders', 'SELECT o.id, i.name FROM orders o JOIN items i ON i.id = o.id ORDER BY o.id');
      expect(held.body.result.structuredContent?.status, held.text).toBe('pending_approval');
      const approvalId = held.body.result.structuredContent.approvalId as string;
      const listed = (await sdk.listApprovals({ client: w.client, query: { status: 'pending' } })).data!.approvals.find((a) => a.id === approvalId)!;
      expect(listed.approver_emails).toEqual(APPROVERS);
      const ttl = (Date.parse(listed.expires_at) - Date.parse(listed.created_at)) / 1000;
      expect(ttl).toBe(900);
      const approved = await sdk.approveApproval({ client: w.client, path: { approvalId } });
      expect(approved.response.status, JSON.stringify(approved.error)).toBe(200);
      expect(approved.data!.status).toBe('executed');
      expect((approved.data!.result as { structuredContent: { rows: unknown[] } }).structuredContent.rows).toEqual([
        { id: 1, name: 'apple' },
        { id: 2, name: 'pear' },
        { id: 3, name: 'plum' },
      ]);
      const again = await sdk.approveApproval({ client: w.client, path: { approvalId } });
      expect(again.response.status).toBe(409);
      const status = await callTool(w.g, w.org.slug, w.key, 'check_approval_status', { approvalId });
      expect(status.body.result.structuredContent.status).toBe('executed');
      // The approval.executed audit row lists the tables the statement touched, as tool.called does.
      await w.g.deps.audit.drain();
      const executed = (await sdk.listAuditEvents({ client: w.client, query: { action: 'approval.executed', limit: 5 } })).data!.events;
      expect(executed.find((e) => e.target_id === approvalId)?.details.tables).toEqual([`${w.schema}.items`, `${w.schema}.orders`]);
    });

    test('two flagged sides: the approvers are both rows’ (united), the TTL the shorter; the audit row of the held call lists the tables', async () => {
      const notes = await sdk.updateToolMetadata({
        client: w.client,
        path: { orgId: w.org.orgId, toolId: w.toolOf.notes! },
        body: { requires_approval: true, approval_emails: ['notes-approver@example.com', APPROVERS[0]!], approval_ttl_seconds: 300 },
      });
      expect(notes.response.status).toBe(200);
      const held = await sql('orders', 'SELECT i.name, n.body FROM items i JOIN notes n ON n.id = i.id ORDER BY i.id');
      expect(held.body.result.structuredContent?.status, held.text).toBe('pending_approval');
      const approvalId = held.body.result.structuredContent.approvalId as string;
      const listed = (await sdk.listApprovals({ client: w.client, query: { status: 'pending' } })).data!.approvals.find((a) => a.id === approvalId)!;
      expect(listed.approver_emails).toEqual([APPROVERS[0]!, 'notes-approver@example.com']);
      expect((Date.parse(listed.expires_at) - Date.parse(listed.created_at)) / 1000).toBe(300);
      await w.g.deps.audit.drain();
      const events = (await sdk.listAuditEvents({ client: w.client, query: { action: 'tool.called', limit: 5 } })).data!.events;
      expect(events.find((e) => e.outcome === 'held')?.details.tables).toEqual([`${w.schema}.items`, `${w.schema}.notes`]);
      const rejected = await sdk.rejectApproval({ client: w.client, path: { approvalId } });
      expect(rejected.data?.status).toBe('rejected');
      await sdk.updateToolMetadata({ client: w.client, path: { orgId: w.org.orgId, toolId: w.toolOf.notes! }, body: { requires_approval: false } });
    });

    test('a saved JOIN is created, listed with its typed inputSchema, called and governed by both tables’ rows', async () => {
      const body = {
        name: `orders_with_customers_${kind}`,
        description: 'Orders from a total on, with their customer',
        statement: 'SELECT o.id, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.total >= :min ORDER BY o.id',
        parameters: [{ name: 'min', type: 'integer' as const, description: 'Lowest total' }],
      };
      const made = await sdk.createSavedTool({ client: w.client, path: { connectorId: w.connectorId }, body });
      expect(made.response.status, JSON.stringify(made.error)).toBe(201);
      const listed = await rpc(w.g, w.org.slug, w.key, 'tools/list', {});
      const tool = (listed.body.result.tools as { name: string; inputSchema: { properties: Record<string, { type: string }> } }[]).find(
        (x) => x.name === body.name,
      )!;
      expect(tool.inputSchema.properties.min!.type).toBe('integer');
      expect(rows(await call(body.name, { min: 150 }))).toEqual(ROWS_A.slice(1));
      expect(rows(await call(body.name, { min: 0 }))).toEqual(ROWS_A);
      // Saving never widens a table's policy (item 7a): a saved JOIN naming the hidden column is refused.
      const leaky = await sdk.createSavedTool({
        client: w.client,
        path: { connectorId: w.connectorId },
        body: { ...body, name: `leaky_${kind}`, statement: 'SELECT o.id, c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id >= :min' },
      });
      expect([leaky.response.status, (leaky.error as { error?: string }).error]).toEqual([422, 'saved_tool_invalid']);
      // A saved JOIN over the disabled table is refused when called.
      const payroll = await sdk.createSavedTool({
        client: w.client,
        path: { connectorId: w.connectorId },
        body: {
          ...body,
          name: `payroll_${kind}`,
          statement: 'SELECT o.id, p.salary FROM orders o JOIN payroll p ON p.customer_id = o.customer_id WHERE o.id >= :min',
        },
      });
      if (payroll.response.status === 201) expect(refusal(await call(`payroll_${kind}`, { min: 0 }))).toContain('payroll');
      else expect((payroll.error as { message: string }).message).toContain('payroll');
    });

    test('the single layout lists the connector SQL tool and its schema tool; the SQL tool answers a JOIN under the same rows; per_table brings the table tools back', async () => {
      const type = kind === 'pg' ? 'postgresql' : 'mysql';
      const patched = await sdk.updateConnector({ client: w.client, path: { connectorId: w.connectorId }, body: { tool_layout: 'single' } });
      expect([patched.response.status, patched.data?.tool_layout]).toEqual([200, 'single']);
      const names = await listToolNames(w.g, w.org.slug, w.key);
      const single = `query_shop_${kind}`;
      expect(names).toContain(single);
      expect(names.filter((n) => n.startsWith(`query_${type}_`))).toEqual([]);
      // The connector's two tools in this layout: its SQL tool and its schema tool (decisions 0299, 0313).
      expect(names.filter((n) => n.endsWith(`shop_${kind}`))).toEqual([`describe_shop_${kind}`, single].sort());
      expect(rows(await call(single, { sql: JOIN }))).toEqual(ROWS_A);
      expect(refusal(await call(single, { sql: 'SELECT o.id, p.salary FROM orders o JOIN payroll p ON p.customer_id = o.customer_id' }))).toContain('payroll');
      const held = await call(single, { sql: 'SELECT name FROM items' });
      expect(held.body.result.structuredContent?.status, held.text).toBe('pending_approval');
      // A table tool is not served in the single layout.
      expect((await sql('orders', 'SELECT 1')).body.error?.code).toBe(-32602);
      const back = await sdk.updateConnector({ client: w.client, path: { connectorId: w.connectorId }, body: { tool_layout: 'per_table' } });
      expect(back.data?.tool_layout).toBe('per_table');
      expect(await listToolNames(w.g, w.org.slug, w.key)).toContain(w.nameOf.orders!);
    });
  });
}
