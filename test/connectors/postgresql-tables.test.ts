/**
 * Issue 38 item 1 live on PostgreSQL (docs/decisions/0292): the driver called with `ctx.tables`, the connector's
 * tables each governed by its own row. The shared join cases (join-cases.ts) run through two different tools (which
 * tool the agent called must not matter), each answer compared row for row and searched for every secret; then what
 * the shared cases do not cover: names in a second schema, a caller without the filter's attribute, writes, the
 * server-side resolution check admitting exactly the touched tables.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import type { PgExecutionContext } from '../../src/connectors/postgresql/execute.ts';
import type { CallTable, SqlToolSpec, ToolResult, CallPolicy } from '../../src/connectors/types.ts';
import { policyKey } from '../../src/connectors/shared/policy.ts';
import {
  DISABLED_TABLE,
  JOIN_ANSWERS,
  JOIN_CALLER,
  JOIN_FIXTURE,
  JOIN_POLICY,
  JOIN_REFUSALS,
  type JoinCase,
  leakedSecret,
  sameRows,
  sqlFor,
} from './join-cases.ts';

const available = await serviceAvailable('postgres');
const connectorId = `h1-tables-${randomBytes(4).toString('hex')}`;
const onPg = (c: JoinCase): boolean => c.only === undefined || c.only.includes('postgresql');
let t: Targets;
let tools: SqlToolSpec[];

const EXTRA = [
  'CREATE SCHEMA h1_sales',
  'CREATE TABLE h1_sales.invoices (id integer PRIMARY KEY, order_id integer NOT NULL, amount integer NOT NULL)',
  'INSERT INTO h1_sales.invoices VALUES (1, 10, 110), (2, 12, 330)',
  // Same name as a public table: unqualified, the tool's schema's one is meant.
  'CREATE TABLE h1_sales.orders (id integer PRIMARY KEY, customer_id integer NOT NULL, total integer NOT NULL, note varchar(50))',
  "INSERT INTO h1_sales.orders VALUES (99, 3, 999, 'sales-schema-order')",
  // Views over a governed table, over a disabled one, and over a view (docs/decisions/0292 item 4).
  'CREATE VIEW customer_names AS SELECT id, name FROM customers',
  'CREATE VIEW payroll_view AS SELECT id, customer_id FROM payroll',
  'CREATE VIEW big_orders_again AS SELECT * FROM big_orders WHERE total < 1000',
  // On the server but never listed: no statement may read it.
  'CREATE TABLE unlisted_secrets (v text)',
  "INSERT INTO unlisted_secrets VALUES ('ssn-3333-b')",
];

const tool = (table: string, schema = 'public'): SqlToolSpec => {
  const found = tools.find((x) => x.target.table === table && x.target.schema === schema);
  if (!found) throw new Error(`no tool for ${schema}.${table}`);
  return found;
};

const policyFor = (caller: Record<string, string>): CallPolicy => ({ policy: JOIN_POLICY, key: policyKey(JOIN_POLICY), maskKey: null, caller });

/** The connector's tables as the catalog would hand them over: customers under the policy, payroll disabled. */
function tablesFor(caller: Record<string, string> = JOIN_CALLER, version = 'v1'): NonNullable<PgExecutionContext['tables']> {
  const listed = tools.filter((x) => x.target.table !== 'unlisted_secrets');
  const list: CallTable[] = listed.map((x) => ({
    target: x.target,
    enabled: x.target.table !== DISABLED_TABLE,
    ...(x.target.table === 'customers' ? { policy: policyFor(caller) } : {}),
  }));
  return { key: `${connectorId}:${version}`, list };
}

const ctx = (o: Partial<PgExecutionContext> = {}): PgExecutionContext => ({
  connectorId,
  config: { ...t.pgConfig, schemas: ['public', 'h1_sales'] },
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  tables: tablesFor(),
  limits: { statementTimeoutMs: 3000, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 1_000_000 },
  ...o,
});

const textOf = (r: ToolResult): string => r.content.map((c) => (c as { text?: string }).text ?? '').join('\n');
const everything = (r: ToolResult): string => textOf(r) + JSON.stringify(r.structuredContent ?? null);
const rowsOf = (r: ToolResult): Record<string, unknown>[] => {
  if (r.isError) throw new Error(`refused: ${textOf(r)}`);
  return JSON.parse(textOf(r));
};
const call = (sql: string, via = 'orders', c: PgExecutionContext = ctx(), schema = 'public') => postgresqlDriver.execute(tool(via, schema), { sql }, c);

beforeAll(async () => {
  if (!available) return;
  t = await createTargets('h1_pgtables', 'pg');
  for (const s of [...JOIN_FIXTURE, ...EXTRA]) await t.pg(s);
  tools = await postgresqlDriver.introspect(connectorId, { ...t.pgConfig, schemas: ['public', 'h1_sales'] }, null);
});
afterAll(async () => {
  await postgresqlDriver.close(connectorId);
  await t?.drop();
});

describe.skipIf(!available)('postgresql: statements over several tables, each governed as its own tool (issue 38)', () => {
  for (const via of ['orders', 'customers']) {
    for (const c of JOIN_ANSWERS.filter(onPg)) {
      test(`answers through ${via}: ${c.name}`, async () => {
        const r = await call(sqlFor(c, 'public'), via);
        expect(leakedSecret(everything(r))).toBeNull();
        const rows = rowsOf(r);
        expect(sameRows(rows, c.rows!), JSON.stringify(rows)).toBe(true);
      });
    }
    for (const c of JOIN_REFUSALS.filter(onPg)) {
      test(`refused through ${via}: ${c.name}`, async () => {
        // Writes are allowed on the connector here: what refuses is the one-table rule, not read-only mode.
        const r = await call(sqlFor(c, 'public'), via, ctx({ allowWrite: true }));
        expect(r.isError, textOf(r)).toBe(true);
        expect(textOf(r).toLowerCase()).toContain(c.refused!.toLowerCase());
        expect(leakedSecret(everything(r))).toBeNull();
      });
    }
  }

  test('the refused writes changed nothing', async () => {
    const [row] = await t.pg('select count(*)::int as n, sum(total)::int as s from orders');
    expect(row).toEqual({ n: 4, s: 1000 });
  });

  test('a JOIN of two enabled tables without policies answers every row', async () => {
    const r = await call('SELECT o.id, i.amount FROM orders o JOIN h1_sales.invoices i ON i.order_id = o.id ORDER BY o.id');
    expect(rowsOf(r)).toEqual([
      { id: 10, amount: 110 },
      { id: 12, amount: 330 },
    ]);
  });

  test('a JOIN whose columns share a name keeps each value: a later one named by its table, else numbered (0327)', async () => {
    const r = await call('SELECT o.id, i.id, 7 AS id, i.amount FROM orders o JOIN h1_sales.invoices i ON i.order_id = o.id ORDER BY o.id');
    expect(rowsOf(r)).toEqual([
      { id: 10, 'invoices.id': 1, id_2: 7, amount: 110 },
      { id: 12, 'invoices.id': 2, id_2: 7, amount: 330 },
    ]);
    expect((r.structuredContent as { rows: unknown[] }).rows).toEqual(rowsOf(r));
    // A self-join's SELECT *: every column of the second copy kept, in the statement's order.
    const self = rowsOf(await call('SELECT * FROM orders a JOIN orders b ON b.id = a.id + 1 WHERE a.id = 10'));
    expect(self).toEqual([
      { id: 10, customer_id: 1, total: 100, note: 'first', 'orders.id': 11, 'orders.customer_id': 2, 'orders.total': 200, 'orders.note': 'second' },
    ]);
    expect(Object.keys(self[0]!)).toEqual(['id', 'customer_id', 'total', 'note', 'orders.id', 'orders.customer_id', 'orders.total', 'orders.note']);
  });

  test('repeated column names under the row cap: the cap still cuts and says so', async () => {
    const r = await call(
      'SELECT a.id, b.id FROM orders a JOIN orders b ON b.id >= a.id ORDER BY a.id, b.id',
      'orders',
      ctx({ limits: { ...ctx().limits, maxRows: 3 } }),
    );
    const s = r.structuredContent as { rows: unknown[]; truncated: boolean };
    expect(s.rows).toEqual([
      { id: 10, 'orders.id': 10 },
      { id: 10, 'orders.id': 11 },
      { id: 10, 'orders.id': 12 },
    ]);
    expect(s.truncated).toBe(true);
  });

  test('an unqualified name resolves in the tool’s schema, as the server resolves it', async () => {
    expect(rowsOf(await call('SELECT count(*)::int AS n FROM orders', 'customers'))).toEqual([{ n: 4 }]);
    expect(rowsOf(await call('SELECT note FROM h1_sales.orders'))).toEqual([{ note: 'sales-schema-order' }]);
    const r = await call('SELECT * FROM invoices');
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('h1_sales.invoices');
  });

  test('through a tool of the second schema, its unqualified names are that schema’s', async () => {
    const r = await call('SELECT o.note, i.amount FROM orders o LEFT JOIN invoices i ON i.order_id = o.id', 'invoices', ctx(), 'h1_sales');
    expect(rowsOf(r)).toEqual([{ note: 'sales-schema-order', amount: null }]);
  });

  test('a caller without the filter’s attribute is refused naming it, through any statement touching the table; others still answer', async () => {
    // Issue 38 item 6 (decision 0307): a missing caller attribute is a tool error naming it, never a silent empty result.
    const c = ctx({ tables: tablesFor({}) });
    for (const sql of [
      'SELECT count(*)::int AS n FROM customers',
      'SELECT count(*)::int AS n FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id IS NULL',
    ]) {
      const r = await call(sql, 'orders', c);
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain('"tenant"');
      expect(textOf(r)).toContain('public.customers');
    }
    expect(rowsOf(await call('SELECT count(*)::int AS n FROM orders', 'orders', c))).toEqual([{ n: 4 }]);
  });

  test('another caller sees its own tenant’s rows through the same statement', async () => {
    const r = await call(
      'SELECT c.id, c.email FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY c.id',
      'orders',
      ctx({ tables: tablesFor({ tenant: 'b' }) }),
    );
    // Tenant b's rows, the email masked (NULL stays NULL).
    expect(rowsOf(r)).toEqual([
      { id: 3, email: 'masked-mail' },
      { id: 4, email: null },
    ]);
  });

  test('a write on the tool’s own table runs; one that also reads another table is refused', async () => {
    const c = ctx({ allowWrite: true });
    const ok = await postgresqlDriver.execute(tool('invoices', 'h1_sales'), { sql: 'UPDATE invoices SET amount = amount WHERE id = 1' }, c);
    expect(ok.isError, textOf(ok)).toBeFalsy();
    const bad = await postgresqlDriver.execute(
      tool('invoices', 'h1_sales'),
      { sql: 'UPDATE invoices SET amount = (SELECT max(total) FROM public.orders) WHERE id = 1' },
      c,
    );
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain('public.orders');
    const wrongTable = await postgresqlDriver.execute(tool('invoices', 'h1_sales'), { sql: 'DELETE FROM public.orders' }, c);
    expect(wrongTable.isError).toBe(true);
  });

  test('a write on a table with a policy is refused (a policy only reads)', async () => {
    const r = await call("UPDATE customers SET name = 'x' WHERE id = 1", 'customers', ctx({ allowWrite: true }));
    expect(r.isError).toBe(true);
    const [row] = await t.pg('select name from customers where id = 1');
    expect(row!.name).toBe('ann-a');
  });

  test('a table whose row is disabled is refused even when it is the only one read', async () => {
    const r = await call('SELECT count(*) FROM payroll');
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain(`public.${DISABLED_TABLE}`);
  });

  test('a saved statement with a JOIN is accepted at save, and its calls are governed by every table it reads', async () => {
    const parameters = [{ name: 'min', type: 'integer' as const, description: 'lowest order id' }];
    const statement = 'SELECT o.id, c.name, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id >= :min ORDER BY o.id';
    const targets = tools.map((x) => x.target);
    const checked = await postgresqlDriver.checkSaved!(statement, parameters, targets, false);
    if (!checked.ok) throw new Error(checked.reason);
    expect(['orders', 'customers']).toContain(checked.target.table);
    const saved: SqlToolSpec = {
      ...tool(checked.target.table),
      target: { ...checked.target, saved: { statement, parameters, version: 1, ...checked.template! } },
    };
    const r = await postgresqlDriver.execute(saved, { min: 11 }, ctx());
    expect(leakedSecret(everything(r))).toBeNull();
    expect(rowsOf(r)).toEqual([{ id: 11, name: 'abe-a', email: 'masked-mail' }]);
    // Issue 38 item 7a: a saved statement naming a hidden column reads nothing through it.
    const naming = 'SELECT id, ssn FROM customers WHERE id >= :min';
    const hidden = await postgresqlDriver.checkSaved!(naming, parameters, targets, false);
    if (!hidden.ok) throw new Error(hidden.reason);
    const savedHidden: SqlToolSpec = {
      ...tool('customers'),
      target: { ...hidden.target, saved: { statement: naming, parameters, version: 1, ...hidden.template! } },
    };
    const refusedCall = await postgresqlDriver.execute(savedHidden, { min: 0 }, ctx());
    expect(refusedCall.isError).toBe(true);
    expect(leakedSecret(everything(refusedCall))).toBeNull();
    // A join with a table the connector does not list is refused at save.
    const unlisted = await postgresqlDriver.checkSaved!('SELECT o.id FROM orders o JOIN pg_class c ON TRUE WHERE o.id = :min', parameters, targets, false);
    expect(unlisted.ok).toBe(false);
  });

  test('views: introspection records what each reads', () => {
    const bases = (v: string) => tool(v).target.bases?.map((r) => `${r.schema}.${r.table}`);
    expect(bases('big_orders')).toEqual(['public.orders']);
    expect(bases('big_orders_again')).toEqual(['public.big_orders']);
    expect(bases('customer_names')).toEqual(['public.customers']);
    expect(bases('orders')).toBeUndefined();
  });

  test('a view over a governed or disabled table is refused, naming both; one over plain tables touches them too', async () => {
    for (const [sql, words] of [
      ['SELECT * FROM customer_names', 'public.customers'],
      ['SELECT o.id, n.name FROM orders o JOIN customer_names n ON n.id = o.customer_id', 'policy'],
      ['SELECT * FROM payroll_view', 'public.payroll'],
    ] as const) {
      for (const via of ['orders', 'customer_names']) {
        const r = await call(sql, via);
        expect(r.isError, `${sql} via ${via}`).toBe(true);
        expect(textOf(r)).toContain(words);
        expect(leakedSecret(everything(r))).toBeNull();
      }
    }
    const touched = await postgresqlDriver.touchedTables!(tool('orders'), { sql: 'SELECT count(*) FROM big_orders_again' }, ctx());
    expect(Array.isArray(touched) ? touched.map((x) => x.table) : touched).toEqual(['big_orders_again', 'big_orders', 'orders']);
    expect(rowsOf(await call('SELECT count(*)::int AS n FROM big_orders_again'))).toEqual([{ n: 3 }]);
  });

  test('touchedTables: what a call would touch, before anything runs (the runtime holds it for their approvals)', async () => {
    const join = await postgresqlDriver.touchedTables!(tool('orders'), { sql: 'SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id' }, ctx());
    expect(Array.isArray(join) ? join.map((x) => x.table) : join).toEqual(['customers', 'orders']);
    const other = await postgresqlDriver.touchedTables!(tool('orders'), { sql: 'SELECT 1 FROM h1_sales.invoices' }, ctx());
    expect(Array.isArray(other) ? other.map((x) => `${x.schema}.${x.table}`) : other).toEqual(['h1_sales.invoices']);
    const disabled = await postgresqlDriver.touchedTables!(tool('orders'), { sql: 'SELECT * FROM payroll' }, ctx());
    expect(Array.isArray(disabled) ? 'not refused' : disabled.isError).toBe(true);
    const single = await postgresqlDriver.touchedTables!(tool('orders'), { sql: 'SELECT * FROM orders' }, ctx({ tables: undefined }));
    expect(Array.isArray(single) ? single.map((x) => x.table) : single).toEqual(['orders']);
  });

  test('a new list key (a policy changed) is used at once: the same text under other governance', async () => {
    const sql = 'SELECT count(*)::int AS n FROM orders o JOIN customers c ON c.id = o.customer_id';
    expect(rowsOf(await call(sql))).toEqual([{ n: 2 }]);
    const open = tablesFor();
    const lifted: NonNullable<PgExecutionContext['tables']> = {
      key: `${connectorId}:v2`,
      list: open.list.map((x) => (x.target.table === 'customers' ? { target: x.target, enabled: true } : x)),
    };
    expect(rowsOf(await call(sql, 'orders', ctx({ tables: lifted })))).toEqual([{ n: 4 }]);
    const disabled: NonNullable<PgExecutionContext['tables']> = {
      key: `${connectorId}:v3`,
      list: open.list.map((x) => (x.target.table === 'customers' ? { ...x, enabled: false } : x)),
    };
    const r = await call(sql, 'orders', ctx({ tables: disabled }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('public.customers');
  });
});
