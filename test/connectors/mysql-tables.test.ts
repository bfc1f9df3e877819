/**
 * Issue 38 item 1 live on MariaDB (docs/decisions/0292): a statement over several of the connector's tables through
 * the mysql driver's call path (guard, per-table policy rewrite, row cap), with the shared join cases
 * (test/connectors/join-cases.ts): a policy on `customers` (hidden ssn, masked email, the caller's tenant only), a
 * disabled `payroll`. First each answer case is shown to be an attack ungoverned (it answers something else); then
 * the governed call answers exactly the expected rows, every refusal case is refused naming what it must, and no
 * secret appears in any answer.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { mysqlDriver } from '../../src/connectors/mysql/driver.ts';
import { policyKey } from '../../src/connectors/shared/policy.ts';
import type { CallTable, ExecutionContext, SqlToolSpec, ToolResult } from '../../src/connectors/types.ts';
import {
  DISABLED_TABLE,
  JOIN_ANSWERS,
  JOIN_CALLER,
  JOIN_FIXTURE,
  JOIN_POLICY,
  JOIN_REFUSALS,
  JOIN_TABLES,
  type JoinCase,
  leakedSecret,
  sameRows,
  sqlFor,
} from './join-cases.ts';

const available = await serviceAvailable('mysql');
let t: Targets;
let tools: SqlToolSpec[];
let mariadb = false;
const connectorId = `h2-mysql-tables-${process.pid}`;

/** MariaDB has no LATERAL (MySQL 8 has): those cases run where the server reads them. */
const runs = (c: JoinCase): boolean => (c.only === undefined || c.only.includes('mysql')) && !(mariadb && /\bLATERAL\b/i.test(c.sql));

const tool = (name: string): SqlToolSpec => {
  const found = tools.find((x) => x.target.table === name);
  if (!found) throw new Error(`no tool for ${name}`);
  return found;
};

/** The connector's tables as the catalog hands them to a call: customers under JOIN_POLICY, payroll disabled. */
function tablesFor(overrides: Partial<Record<string, Partial<CallTable>>> = {}): ExecutionContext['tables'] {
  const list: CallTable[] = tools.map((x) => ({
    target: x.target,
    enabled: x.target.table !== DISABLED_TABLE,
    ...(x.target.table === 'customers' ? { policy: { policy: JOIN_POLICY, key: policyKey(JOIN_POLICY), maskKey: null, caller: JOIN_CALLER } } : {}),
    ...overrides[x.target.table],
  }));
  return { key: `h2-live-${JSON.stringify(overrides)}`, list };
}

const ctx = (o: Partial<ExecutionContext> = {}): ExecutionContext => ({
  connectorId,
  config: { ...t.myConfig, schemas: [t.name] },
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  limits: { statementTimeoutMs: 5000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000 },
  tables: tablesFor(),
  ...o,
});

const textOf = (r: ToolResult): string => r.content.map((c) => ('text' in c ? String(c.text) : '')).join('\n');
const rowsOf = (r: ToolResult): Record<string, unknown>[] => (r.structuredContent as { rows: Record<string, unknown>[] }).rows;

beforeAll(async () => {
  if (!available) return;
  t = await createTargets('h2_join', 'my');
  for (const s of JOIN_FIXTURE) await t.my(s);
  // Views over governed tables (decision 0292 item 4): their own, not in the shared fixture.
  await t.my('CREATE VIEW customer_view AS SELECT id, name, email, ssn FROM customers');
  await t.my('CREATE VIEW view_of_view AS SELECT v.name AS n FROM customer_view v');
  await t.my('CREATE VIEW pay_view AS SELECT p.salary FROM payroll p');
  const [v] = await t.my('SELECT VERSION() AS v');
  mariadb = /mariadb/i.test(String(v?.v));
  tools = (await mysqlDriver.introspect(connectorId, { ...t.myConfig, schemas: [t.name] }, null)) as SqlToolSpec[];
});
afterAll(async () => {
  await mysqlDriver.close(connectorId);
  await t?.drop();
});

describe.skipIf(!available)('mysql: the join cases are attacks ungoverned', () => {
  test('the fixture is listed, the other tenant is there', async () => {
    for (const n of JOIN_TABLES) expect(tools.map((x) => x.target.table)).toContain(n);
    const [row] = await t.my(`SELECT COUNT(*) AS n FROM customers WHERE tenant <> '${JOIN_CALLER.tenant}'`);
    expect(Number(row!.n)).toBeGreaterThan(0);
  });
  test('every answer case answers something else when run raw', async () => {
    for (const c of JOIN_ANSWERS.filter(runs)) {
      const raw = await t.my(sqlFor(c, t.name)).catch((e: Error) => [{ error: e.message }]);
      expect(sameRows(raw, c.rows!), c.name).toBe(false);
    }
  });
});

describe.skipIf(!available)('mysql: statements over several tables, governed table by table', () => {
  test('every answer case answers exactly its rows, with no secret', async () => {
    // Not vacuous: all but the PostgreSQL-only cases (and LATERAL on MariaDB) run.
    expect(JOIN_ANSWERS.filter(runs).length).toBeGreaterThanOrEqual(JOIN_ANSWERS.length - 5);
    for (const c of JOIN_ANSWERS.filter(runs)) {
      const r = await mysqlDriver.execute(tool('orders'), { sql: sqlFor(c, t.name) }, ctx());
      if (r.isError) throw new Error(`${c.name}: ${textOf(r)}`);
      expect(sameRows(rowsOf(r), c.rows!), `${c.name}: ${JSON.stringify(rowsOf(r))}`).toBe(true);
      expect(leakedSecret(JSON.stringify(r)), c.name).toBeNull();
    }
  });

  test('every refusal case is refused naming what it must, and leaks nothing', async () => {
    for (const c of JOIN_REFUSALS.filter(runs)) {
      const r = await mysqlDriver.execute(tool('orders'), { sql: sqlFor(c, t.name) }, ctx({ allowWrite: true }));
      expect(r.isError, c.name).toBe(true);
      expect(textOf(r).toLowerCase(), c.name).toContain(c.refused!.toLowerCase());
      expect(leakedSecret(JSON.stringify(r)), c.name).toBeNull();
    }
    // The writes were refused: nothing changed.
    expect((await t.my('SELECT COUNT(*) AS n FROM orders'))[0]!.n).toBe(4);
  });

  test('which tool is called does not matter: the same JOIN through the customers tool is governed the same', async () => {
    const c = JOIN_ANSWERS[0]!;
    const r = await mysqlDriver.execute(tool('customers'), { sql: sqlFor(c, t.name) }, ctx());
    expect(sameRows(rowsOf(r), c.rows!)).toBe(true);
  });

  test('enabling payroll lets the join answer; disabling orders refuses a join naming orders', async () => {
    const sql = 'SELECT c.name, p.salary FROM customers c JOIN payroll p ON p.customer_id = c.id ORDER BY c.id';
    const on = await mysqlDriver.execute(tool('customers'), { sql }, ctx({ tables: tablesFor({ payroll: { enabled: true } }) }));
    expect(rowsOf(on)).toEqual([{ name: 'ann-a', salary: 'salary-987654' }]);
    const off = await mysqlDriver.execute(
      tool('customers'),
      { sql: 'SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id' },
      ctx({ tables: tablesFor({ orders: { enabled: false } }) }),
    );
    expect(off.isError).toBe(true);
    expect(textOf(off)).toContain('orders');
  });

  test('a caller without the tenant attribute reads no customers through any join', async () => {
    const noTenant = tablesFor({ customers: { policy: { policy: JOIN_POLICY, key: policyKey(JOIN_POLICY), maskKey: null, caller: {} } } });
    const r = await mysqlDriver.execute(
      tool('orders'),
      { sql: 'SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id ORDER BY o.id' },
      ctx({ tables: noTenant }),
    );
    // Either refused naming the missing attribute, or no customer row at all; never a name.
    if (!r.isError) expect(rowsOf(r).every((row) => row.name === null)).toBe(true);
    expect(leakedSecret(JSON.stringify(r))).toBeNull();
    expect(JSON.stringify(r)).not.toContain('ann-a');
  });

  test('a view over a governed table: its bases are recorded, and reading it (or a view of it) is refused naming the table', async () => {
    expect(tool('customer_view').target.bases).toEqual([{ schema: t.name, table: 'customers' }]);
    expect(tool('view_of_view').target.bases?.map((b) => b.table)).toContain('customer_view');
    for (const [sql, named] of [
      ['SELECT name, email, ssn FROM customer_view', 'customers'],
      ['SELECT o.id, v.email FROM orders o JOIN customer_view v ON v.id = o.customer_id', 'customers'],
      ['SELECT n FROM view_of_view', 'customers'],
      ['SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM pay_view)', DISABLED_TABLE],
    ] as const) {
      const r = await mysqlDriver.execute(tool('orders'), { sql }, ctx());
      expect(r.isError, sql).toBe(true);
      expect(textOf(r), sql).toContain(`${t.name}.${named}`);
      expect(leakedSecret(JSON.stringify(r)), sql).toBeNull();
    }
    // Ungoverned they leak: the refusal is what stands between.
    expect(leakedSecret(JSON.stringify(await t.my('SELECT email, ssn FROM customer_view')))).not.toBeNull();
  });

  test("a join's columns of the same name each keep their value (the later one named by its table)", async () => {
    const sql = 'SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id DESC';
    const r = await mysqlDriver.execute(tool('orders'), { sql, limit: 1 }, ctx());
    if (r.isError) throw new Error(textOf(r));
    expect(rowsOf(r)).toEqual([{ id: 11, customer_id: 2, total: 200, note: 'second', 'c.id': 2, tenant: 'a', name: 'abe-a', email: 'masked-mail' }]);
  });
});
