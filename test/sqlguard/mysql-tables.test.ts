// Issue 38 item 1 on MySQL/MariaDB at guard level (docs/decisions/0292): a statement over several of the connector's
// tables. Written as an attacker would: every way to reach a table with a policy (aliases, self-joins, subqueries,
// shadowing CTEs, unions, LATERAL, views, case twins) must either be refused or reported as a reference of that table
// (so the rewrite replaces it), and hidden columns of any touched table are refused by name. No database here; the
// live suite (test/connectors/mysql-tables.test.ts) runs the same forms on MariaDB.
import { describe, expect, test } from 'bun:test';
import { guardMysqlSql } from '../../src/connectors/mysql/guard/guard.ts';
import type { GuardOptions, GuardResult, GuardTable } from '../../src/connectors/shared/sqlguard/types.ts';
import { DISABLED_TABLE, JOIN_ANSWERS, JOIN_POLICY, JOIN_REFUSALS, JOIN_TABLES, type JoinCase, sqlFor } from '../connectors/join-cases.ts';

const ORDERS = 0;
const CUSTOMERS = 1;
const NOTES = 2;
const CUSTOMER_VIEW = 3;
const list: GuardTable[] = [
  { schema: 'shop', name: 'orders' },
  { schema: 'shop', name: 'customers', hidden: ['national_id'], policy: true },
  { schema: 'shop', name: 'notes' },
  { schema: 'shop', name: 'customer_view', policy: true },
];
const tables = { key: 'k1', list };
const READ: GuardOptions = { table: { schema: 'shop', name: 'orders' }, allowWrite: false, allowDdl: false, readOnly: false, tables };
const RW: GuardOptions = { ...READ, allowWrite: true };

type Ok = GuardResult & { ok: true };
function ok(sql: string, opts: GuardOptions = READ): Ok {
  const r = guardMysqlSql(sql, opts);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  return r;
}
function refused(sql: string, opts: GuardOptions = READ): string {
  const r = guardMysqlSql(sql, opts);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused, got ${JSON.stringify(r)}`);
  return r.reason;
}
/** Each reference as [listed index, its text, alias to add]. */
function refsOf(sql: string, r: Ok): [number | undefined, string, string | null][] {
  return (r.refs ?? []).map((x) => [x.table, sql.slice(x.start, x.end), x.alias]);
}

describe('mysql guard, several tables: what a statement touches', () => {
  test('a JOIN of two listed tables is allowed; both are touched, the policy side is a reference', () => {
    const sql = 'SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id DESC';
    const r = ok(sql);
    expect(r.touched).toEqual([ORDERS, CUSTOMERS]);
    expect(refsOf(sql, r)).toEqual([[CUSTOMERS, 'customers', null]]);
  });

  test('qualified and unqualified names, backquotes and white space inside the name all resolve', () => {
    const sql = 'SELECT * FROM shop.customers, `shop` . `customers` x, customers';
    const r = ok(sql);
    expect(r.touched).toEqual([CUSTOMERS]);
    expect(refsOf(sql, r)).toEqual([
      [CUSTOMERS, 'shop.customers', 'customers'],
      [CUSTOMERS, '`shop` . `customers`', null],
      [CUSTOMERS, 'customers', 'customers'],
    ]);
  });

  test('a self-join reports every reference', () => {
    const sql = 'SELECT a.id, b.id FROM customers a JOIN customers b ON a.referrer = b.id';
    expect(refsOf(sql, ok(sql)).map((x) => x[0])).toEqual([CUSTOMERS, CUSTOMERS]);
  });

  test('subqueries in WHERE, SELECT list, derived tables, EXISTS and LATERAL are references', () => {
    for (const sql of [
      'SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers)',
      'SELECT id, (SELECT MAX(name) FROM customers) FROM orders',
      'SELECT * FROM (SELECT id FROM customers) AS d JOIN orders ON orders.customer_id = d.id',
      'SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)',
      'SELECT * FROM orders o, LATERAL (SELECT c.name FROM customers c WHERE c.id = o.customer_id) AS x',
      'SELECT * FROM orders o LEFT JOIN (customers c JOIN notes n ON n.customer_id = c.id) ON c.id = o.customer_id',
    ]) {
      const r = ok(sql);
      expect(refsOf(sql, r).map((x) => x[0])).toEqual([CUSTOMERS]);
      expect(r.touched).toContain(CUSTOMERS);
    }
  });

  test('UNION, UNION ALL, INTERSECT and EXCEPT branches are references', () => {
    for (const op of ['UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT']) {
      const sql = `SELECT id, status FROM orders ${op} SELECT id, name FROM customers`;
      const r = ok(sql);
      expect(r.touched).toEqual([ORDERS, CUSTOMERS]);
      expect(refsOf(sql, r)).toEqual([[CUSTOMERS, 'customers', 'customers']]);
    }
  });

  test('a CTE that shadows a listed name is not that table; the table inside it is', () => {
    let sql = 'WITH customers AS (SELECT * FROM orders) SELECT * FROM customers';
    let r = ok(sql);
    expect(r.touched).toEqual([ORDERS]);
    expect(r.refs).toEqual([]);
    // The shadowing CTE reads the real table: the reference inside is rewritten.
    sql = 'WITH orders AS (SELECT * FROM customers) SELECT * FROM orders';
    r = ok(sql);
    expect(r.touched).toEqual([CUSTOMERS]);
    expect(refsOf(sql, r)).toEqual([[CUSTOMERS, 'customers', 'customers']]);
    // A non-recursive CTE cannot see itself: `customers` inside is the table.
    sql = 'WITH customers AS (SELECT id, name FROM customers) SELECT * FROM customers';
    expect(refsOf(sql, ok(sql))).toEqual([[CUSTOMERS, 'customers', 'customers']]);
    // A qualified name is never a CTE.
    sql = 'WITH customers AS (SELECT 1 AS id) SELECT * FROM shop.customers';
    expect(refsOf(sql, ok(sql))).toEqual([[CUSTOMERS, 'shop.customers', 'customers']]);
    // A CTE in an inner query does not hide the table from the outer one.
    sql = 'SELECT * FROM customers WHERE id IN (WITH customers AS (SELECT 1 AS id) SELECT id FROM customers)';
    expect(refsOf(sql, ok(sql))).toEqual([[CUSTOMERS, 'customers', 'customers']]);
  });

  test('a derived table or alias named like a listed table is not that table', () => {
    const sql = 'SELECT customers.id FROM orders AS customers';
    const r = ok(sql);
    expect(r.touched).toEqual([ORDERS]);
    expect(r.refs).toEqual([]);
  });

  test('a view with a policy is governed like a table', () => {
    const sql = 'SELECT v.* FROM customer_view v JOIN orders o ON o.customer_id = v.id';
    const r = ok(sql);
    expect(r.touched).toEqual([ORDERS, CUSTOMER_VIEW]);
    expect(refsOf(sql, r)).toEqual([[CUSTOMER_VIEW, 'customer_view', null]]);
  });

  test('touched is ascending and once each; tables without a policy have no references', () => {
    const r = ok('SELECT * FROM notes JOIN orders USING (id) JOIN notes n2 USING (id)');
    expect(r.touched).toEqual([ORDERS, NOTES]);
    expect(r.refs).toEqual([]);
  });
});

describe('mysql guard, several tables: what is refused', () => {
  test('a table that is not listed is refused by name, whatever else the statement reads', () => {
    expect(refused('SELECT * FROM orders JOIN payroll ON payroll.id = orders.id')).toContain('"payroll", which is not a table of this connector');
    expect(refused('SELECT * FROM orders WHERE id IN (SELECT id FROM payroll)')).toContain('payroll');
    expect(refused('SELECT id FROM orders UNION SELECT id FROM other.customers')).toContain('other.customers');
    expect(refused('SELECT * FROM shop.orders.id')).toContain('not a table of this connector');
  });

  test('system databases are refused through every form', () => {
    for (const sql of [
      'SELECT * FROM orders JOIN mysql.user u',
      'SELECT * FROM orders WHERE 1 IN (SELECT 1 FROM information_schema.columns)',
      'WITH x AS (SELECT * FROM performance_schema.threads) SELECT * FROM x',
    ]) {
      expect(refused(sql)).toMatch(/system (database|schema)|information_schema/);
    }
  });

  test('names compare as the server compares them: exactly in mode 0, ASCII case folded in modes 1 and 2', () => {
    expect(refused('SELECT * FROM Customers')).toContain('"Customers"');
    expect(refused('SELECT * FROM SHOP.customers')).toContain('SHOP.customers');
    for (const mode of [1, 2] as const) {
      const sql = 'SELECT * FROM SHOP.CUSTOMERS JOIN Orders ON 1';
      const r = ok(sql, { ...READ, lowerCaseTableNames: mode });
      expect(r.touched).toEqual([ORDERS, CUSTOMERS]);
      expect(refsOf(sql, r)).toEqual([[CUSTOMERS, 'SHOP.CUSTOMERS', 'CUSTOMERS']]);
    }
    // A CTE spelled in another case does not shadow the table in mode 0 (MySQL compares it exactly there).
    const sql = 'WITH CUSTOMERS AS (SELECT 1 AS id) SELECT * FROM customers';
    expect(refsOf(sql, ok(sql))).toEqual([[CUSTOMERS, 'customers', 'customers']]);
  });

  test('a hidden column of a touched table is refused by name, through aliases and qualifiers, in any case', () => {
    for (const sql of [
      'SELECT c.national_id FROM orders o JOIN customers c ON c.id = o.customer_id',
      'SELECT national_id FROM orders JOIN customers ON 1',
      'SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.NATIONAL_ID LIKE "1%"',
      'SELECT * FROM orders ORDER BY (SELECT `national_id` FROM customers LIMIT 1)',
      'WITH x AS (SELECT * FROM customers) SELECT x.national_id FROM x',
      'SELECT id FROM orders UNION SELECT national_id FROM customers',
      'SELECT * FROM orders JOIN customers USING (national_id)',
      'SELECT COUNT(*) FROM customers GROUP BY national_id',
    ]) {
      expect(refused(sql)).toMatch(/column "national_id" is not available/i);
    }
  });

  test('a hidden column name of an untouched table is only a name', () => {
    ok('SELECT national_id FROM notes');
  });

  test('a ? marker is refused when a touched table has a policy (its values are bound among the markers)', () => {
    expect(refused('SELECT * FROM orders JOIN customers c ON c.id = ?')).toContain('parameters');
    ok('SELECT * FROM orders WHERE id = ?');
    // A saved tool's own markers are admitted.
    ok('SELECT * FROM orders JOIN customers c ON c.id = ?', { ...READ, policy: { key: 'p', hidden: [], params: 1 } });
  });

  test("writes stay one table: the tool's own, reading no other", () => {
    const w = ok("UPDATE orders SET status = 'x' WHERE id = 1", RW);
    expect(w).toMatchObject({ kind: 'update', readOnly: false, touched: [ORDERS] });
    // An INSERT ... VALUES reads no table: its target is what it touches.
    expect(ok('INSERT INTO orders (id) VALUES (1)', RW)).toMatchObject({ kind: 'insert', touched: [ORDERS] });
    expect(ok('DELETE FROM orders WHERE id = 1', RW)).toMatchObject({ kind: 'delete', touched: [ORDERS] });
    for (const sql of [
      'UPDATE orders SET status = (SELECT name FROM customers LIMIT 1)',
      'INSERT INTO orders (id) SELECT id FROM customers',
      'DELETE o FROM orders o JOIN notes n ON n.id = o.id',
      'DELETE FROM orders WHERE customer_id IN (SELECT id FROM customers)',
      'UPDATE orders o JOIN notes n ON n.id = o.id SET o.status = n.text',
    ]) {
      expect(refused(sql, RW)).toMatch(/own table alone|not this tool's table/);
    }
    expect(refused('UPDATE customers SET name = 1', RW)).toContain("not this tool's table");
    expect(refused('INSERT INTO notes (id) VALUES (1)', RW)).toContain("not this tool's table");
    // Locking reads are writes: the same rule.
    expect(refused('SELECT * FROM orders JOIN notes ON 1 FOR UPDATE', RW)).toContain('own table alone');
  });

  test('without opts.tables a second table is refused as before', () => {
    const { tables: _drop, ...single } = READ;
    expect(refused('SELECT * FROM orders JOIN customers ON 1', single)).toContain("not this tool's table");
    expect(ok('SELECT * FROM orders', single)).toEqual({ ok: true, kind: 'select', readOnly: true });
  });

  test("with tables, opts.policy carries only a saved statement's parameter count: the own table's list entry governs it", () => {
    // orders has no policy in the list: no reference of it is reported, even with opts.policy set (prepare.ts's form).
    const opts: GuardOptions = { ...READ, policy: { key: '', hidden: [], params: 1 } };
    const sql = 'SELECT o.id FROM orders o JOIN notes n ON n.id = ?';
    expect(ok(sql, opts).refs).toEqual([]);
    const governed: GuardOptions = {
      ...READ,
      tables: { key: 'own', list: list.map((t, i) => (i === ORDERS ? { ...t, hidden: ['total'], policy: true } : t)) },
    };
    expect(refused('SELECT o.total FROM orders o JOIN notes n ON 1', governed)).toContain('"total"');
    expect(refsOf(sql, ok(sql, { ...governed, policy: { key: '', hidden: [], params: 1 } }))).toEqual([[ORDERS, 'orders', null]]);
  });

  test('the list keys the verdict: a changed list gives a new verdict', () => {
    const sql = 'SELECT * FROM orders JOIN payroll ON 1';
    refused(sql);
    const more = { key: 'k2', list: [...list, { schema: 'shop', name: 'payroll' }] };
    expect(ok(sql, { ...READ, tables: more }).touched).toEqual([ORDERS, 4]);
  });
});

describe('mysql guard, several tables: the shared join cases (test/connectors/join-cases.ts)', () => {
  const schema = 'tg_join';
  const joinList: GuardTable[] = JOIN_TABLES.map((name) =>
    name === 'customers' ? { schema, name, hidden: JOIN_POLICY.hidden_columns, policy: true } : { schema, name },
  );
  const CUST = JOIN_TABLES.indexOf('customers');
  const PAYROLL = JOIN_TABLES.indexOf(DISABLED_TABLE);
  const opts: GuardOptions = { table: { schema, name: 'orders' }, allowWrite: true, allowDdl: false, readOnly: false, tables: { key: 'join', list: joinList } };
  const mysqlCases = (cases: readonly JoinCase[]) => cases.filter((c) => c.only === undefined || c.only.includes('mysql'));

  test('every answer case is allowed, and every reference of customers is reported for the rewrite', () => {
    for (const c of mysqlCases(JOIN_ANSWERS)) {
      const sql = sqlFor(c, schema);
      const r = ok(sql, opts);
      const named = (sql.match(/\bcustomers\b/g) ?? []).length;
      // A CTE named customers is not the table: the shadowing case names it three times, one of them the table.
      const refs = (r.refs ?? []).filter((x) => x.table === CUST).length;
      expect(refs, c.name).toBeGreaterThan(0);
      expect(refs, c.name).toBeLessThanOrEqual(named);
      for (const x of r.refs ?? []) expect(sql.slice(x.start, x.end).replace(/\s+/g, ''), c.name).toMatch(/(^|\.)customers$/);
    }
  });

  test('every refusal case is refused by the guard, or (a disabled table) reported as touched for the call to refuse', () => {
    for (const c of mysqlCases(JOIN_REFUSALS)) {
      const r = guardMysqlSql(sqlFor(c, schema), opts);
      if (c.refused === DISABLED_TABLE) {
        if (!r.ok) throw new Error(`${c.name}: ${r.reason}`);
        expect(r.touched, c.name).toContain(PAYROLL);
      } else {
        if (r.ok) throw new Error(`${c.name}: allowed`);
        expect(r.reason.toLowerCase(), c.name).toContain(c.refused!.toLowerCase());
      }
    }
  });
});
