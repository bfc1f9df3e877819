// Issue 38 item 1 on SQL Server and Oracle, at guard level (docs/decisions/0292; no such servers here): a statement
// over several of the connector's tables. These types have no rewrite, so the guard itself keeps hidden columns out
// of every touched table (by name, and every * while one has them), and a touched table whose policy needs a rewrite
// (masks, a row filter: `policy`) refuses the statement naming it. Names resolve as each server resolves them:
// SQL Server's default schema for one-part names and its collation's case rule, Oracle's CURRENT_SCHEMA and its
// quoted/unquoted rule, and Oracle's strict column resolution across the joined tables.
import { describe, expect, test } from 'bun:test';
import { guardMssqlSql } from '../../src/connectors/mssql/guard/guard.ts';
import { guardOracleSql } from '../../src/connectors/oracle/guard/guard.ts';
import type { GuardOptions, GuardResult, GuardTable } from '../../src/connectors/shared/sqlguard/types.ts';
import { JOIN_REFUSALS, sqlFor } from '../connectors/join-cases.ts';
import { MSSQL_DIALECT } from '../../src/connectors/mssql/driver.ts';
import { ORACLE_DIALECT } from '../../src/connectors/oracle/driver.ts';
import { isRefusal, prepareCall } from '../../src/connectors/shared/prepare.ts';
import { policyKey } from '../../src/connectors/shared/policy.ts';
import type { ExecutionContext, SqlTarget, CallPolicy, ToolPolicy } from '../../src/connectors/types.ts';

type Guard = (sql: string, o: GuardOptions) => GuardResult;

const msList: GuardTable[] = [
  { schema: 'dbo', name: 'orders' },
  { schema: 'dbo', name: 'customers', hidden: ['ssn'] },
  { schema: 'dbo', name: 'payroll', policy: true },
  { schema: 'sales', name: 'customers' },
];
const MS: GuardOptions = {
  table: { schema: 'dbo', name: 'orders' },
  allowWrite: false,
  allowDdl: false,
  readOnly: true,
  defaultSchema: 'dbo',
  tables: { key: 'ms', list: msList },
};

const oraColumns = { ORDERS: ['ID', 'CUSTOMER_ID', 'TOTAL', 'NOTE'], CUSTOMERS: ['ID', 'TENANT', 'NAME', 'EMAIL', 'SSN'] };
const oraList: GuardTable[] = [
  { schema: 'APP', name: 'ORDERS', columns: oraColumns.ORDERS },
  { schema: 'APP', name: 'CUSTOMERS', hidden: ['SSN'], columns: oraColumns.CUSTOMERS },
  { schema: 'APP', name: 'PAYROLL', policy: true, columns: ['ID', 'SALARY'] },
  { schema: 'APP', name: 'Mixed', columns: ['id'] },
];
const ORA: GuardOptions = {
  table: { schema: 'APP', name: 'ORDERS' },
  allowWrite: false,
  allowDdl: false,
  readOnly: true,
  columns: oraColumns.ORDERS,
  tables: { key: 'ora', list: oraList },
};

function touched(g: Guard, sql: string, o: GuardOptions): readonly number[] | undefined {
  const r = g(sql, o);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  expect(r.kind).toBe('select');
  return r.touched;
}
function refused(g: Guard, sql: string, o: GuardOptions): string {
  const r = g(sql, o);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused, got ${JSON.stringify(r)}`);
  return r.reason;
}

describe('SQL Server guard over several tables', () => {
  test('joins, subqueries, CTEs, set operations and APPLY over listed tables are allowed and report what they touch', () => {
    expect(touched(guardMssqlSql, 'SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id', MS)).toEqual([0, 1]);
    expect(touched(guardMssqlSql, 'SELECT id FROM dbo.orders WHERE customer_id IN (SELECT id FROM [dbo].[Customers])', MS)).toEqual([0, 1]);
    expect(touched(guardMssqlSql, 'SELECT name FROM sales.customers UNION SELECT name FROM customers', MS)).toEqual([1, 3]);
    expect(touched(guardMssqlSql, 'WITH c AS (SELECT id, name FROM customers) SELECT id, name FROM c', MS)).toEqual([1]);
    expect(
      touched(guardMssqlSql, 'SELECT o.id, x.name FROM orders o CROSS APPLY (SELECT TOP 1 name FROM customers c WHERE c.id = o.customer_id) x', MS),
    ).toEqual([0, 1]);
    // A CTE named like a table is not the table; the table inside it is.
    expect(touched(guardMssqlSql, 'WITH orders AS (SELECT id, name FROM customers) SELECT name FROM orders', MS)).toEqual([1]);
  });

  test('one-part names resolve in the default schema only; without one they must be qualified', () => {
    // `customers` is dbo.customers (default schema), never sales.customers.
    expect(touched(guardMssqlSql, 'SELECT name FROM customers', MS)).toEqual([1]);
    const { defaultSchema: _d, ...noDefault } = MS;
    expect(refused(guardMssqlSql, 'SELECT name FROM customers', noDefault)).toContain('with its schema');
    expect(touched(guardMssqlSql, 'SELECT name FROM dbo.customers', noDefault)).toEqual([1]);
  });

  test('a case-sensitive database compares names exactly', () => {
    expect(refused(guardMssqlSql, 'SELECT name FROM dbo.Customers', { ...MS, caseSensitiveNames: true })).toContain('not a table of this connector');
  });

  test('hidden columns of a touched table are refused by name and through *; elsewhere a name is only a name', () => {
    for (const sql of [
      'SELECT c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id',
      "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.SSN LIKE N'1%')",
      'WITH x AS (SELECT ssn AS s FROM customers) SELECT s FROM x',
      'SELECT note FROM orders UNION SELECT ssn FROM customers',
    ]) {
      expect(refused(guardMssqlSql, sql, MS)).toMatch(/column "ssn" is not available/i);
    }
    expect(refused(guardMssqlSql, 'SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id', MS)).toContain('*');
    expect(refused(guardMssqlSql, 'SELECT * FROM (SELECT * FROM customers) x', MS)).toContain('*');
    // sales.customers hides nothing: * and a column named ssn are fine there.
    expect(touched(guardMssqlSql, 'SELECT *, ssn FROM sales.customers', MS)).toEqual([3]);
  });

  test('a table whose policy needs a rewrite, or one not listed, refuses the statement by name', () => {
    expect(refused(guardMssqlSql, 'SELECT o.id FROM orders o JOIN payroll p ON p.id = o.id', MS)).toContain('dbo.payroll" has a column or row policy');
    expect(refused(guardMssqlSql, 'SELECT o.id FROM orders o WHERE o.id IN (SELECT id FROM secrets)', MS)).toContain(
      '"secrets", which is not a table of this connector',
    );
    expect(refused(guardMssqlSql, 'SELECT * FROM otherdb.dbo.customers', MS)).toContain('otherdb.dbo.customers');
    expect(refused(guardMssqlSql, 'SELECT name FROM sys.objects', MS)).toContain('sys.objects');
  });

  test('without opts.tables a second table is refused as before', () => {
    const { tables: _t, ...single } = MS;
    expect(refused(guardMssqlSql, 'SELECT o.id FROM orders o JOIN customers c ON 1 = 1', single)).toContain("not this tool's table");
  });
});

describe('Oracle guard over several tables', () => {
  test('joins, subqueries, CTEs and set operations over listed tables are allowed and report what they touch', () => {
    expect(touched(guardOracleSql, 'SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id', ORA)).toEqual([0, 1]);
    expect(touched(guardOracleSql, 'SELECT id FROM app.orders WHERE customer_id IN (SELECT id FROM customers)', ORA)).toEqual([0, 1]);
    expect(touched(guardOracleSql, 'SELECT name FROM customers UNION ALL SELECT note FROM orders', ORA)).toEqual([0, 1]);
    expect(
      touched(guardOracleSql, 'WITH c AS (SELECT id, name FROM customers) SELECT o.total, c.name FROM orders o JOIN c ON c.id = o.customer_id', ORA),
    ).toEqual([0, 1]);
    expect(touched(guardOracleSql, 'SELECT app.customers.name FROM app.customers', ORA)).toEqual([1]);
  });

  test('quoted names are exact, unquoted ones upper case', () => {
    expect(touched(guardOracleSql, 'SELECT m."id" FROM "Mixed" m', ORA)).toEqual([3]);
    expect(refused(guardOracleSql, 'SELECT 1 FROM mixed', ORA)).toContain('"mixed", which is not a table of this connector');
    expect(refused(guardOracleSql, 'SELECT 1 FROM "customers"', ORA)).toContain('not a table of this connector');
  });

  test('every name resolves to a column of a joined table (no function calls by bare names)', () => {
    expect(refused(guardOracleSql, 'SELECT o.id, c.nope FROM orders o JOIN customers c ON c.id = o.customer_id', ORA)).toContain('"c.nope" is not a column');
    expect(refused(guardOracleSql, 'SELECT tenant_fn FROM orders o JOIN customers c ON c.id = o.customer_id', ORA)).toContain('not a column');
    // A column of the other joined table resolves.
    touched(guardOracleSql, 'SELECT tenant, total FROM orders o JOIN customers c ON c.id = o.customer_id', ORA);
  });

  test('hidden columns of a touched table are refused by name and through *', () => {
    expect(refused(guardOracleSql, 'SELECT c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id', ORA)).toContain('"ssn"');
    expect(refused(guardOracleSql, 'SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id', ORA)).toContain('*');
    expect(refused(guardOracleSql, 'SELECT app.customers.ssn FROM app.customers', ORA)).toContain('ssn');
  });

  test('a table whose policy needs a rewrite refuses the statement by name', () => {
    expect(refused(guardOracleSql, 'SELECT o.id FROM orders o JOIN payroll p ON p.id = o.id', ORA)).toContain('APP.PAYROLL" has a column or row policy');
  });
});

describe('SQL Server and Oracle: the shared refusal cases', () => {
  // payroll carries `policy` in both lists, so the disabled-table cases are refused here by the guard itself; the hidden
  // column (ssn), unlisted tables and catalogs too. (Write cases: these guards refuse every write.)
  for (const [name, g, o, schema] of [
    ['mssql', guardMssqlSql, MS, 'dbo'],
    ['oracle', guardOracleSql, ORA, 'APP'],
  ] as const) {
    test(`${name}: every shared refusal case is refused`, () => {
      for (const c of JOIN_REFUSALS) {
        // LATERAL is not T-SQL or Oracle syntax for the same thing (APPLY / LATERAL differ); a parse refusal still counts.
        const r = g(sqlFor(c, schema), o);
        expect(r.ok, `${name}: ${c.name}`).toBe(false);
      }
    });
  }
});

describe('SQL Server and Oracle calls over several tables (shared/prepare.ts with ctx.tables)', () => {
  const cols = (names: string[]) => names.map((name) => ({ name, type: 'int' }));
  for (const [name, dialect, schema, up] of [
    ['mssql', MSSQL_DIALECT, 'dbo', (s: string) => s],
    ['oracle', ORACLE_DIALECT, 'APP', (s: string) => s.toUpperCase()],
  ] as const) {
    const target = (table: string, columns: string[]): SqlTarget => ({
      schema,
      table: up(table),
      kind: 'table',
      columns: cols(columns.map(up)),
      ...(name === 'mssql' ? { defaultSchema: 'dbo' } : {}),
    });
    const orders = target('orders', ['id', 'customer_id', 'total']);
    const customers = target('customers', ['id', 'name', 'email', 'ssn']);
    const payroll = target('payroll', ['id', 'salary']);
    const policy = (p: Partial<ToolPolicy>): CallPolicy => {
      const full: ToolPolicy = { hidden_columns: [], masked_columns: [], row_filter: null, ...p };
      return { policy: full, key: policyKey(full), maskKey: null, caller: {} };
    };
    const tables = (customersPolicy: CallPolicy, payrollEnabled = false): ExecutionContext['tables'] => ({
      key: `${name}-${customersPolicy.key}-${payrollEnabled}`,
      list: [
        { target: orders, enabled: true },
        { target: customers, enabled: true, policy: customersPolicy },
        { target: payroll, enabled: payrollEnabled },
      ],
    });
    const ctx = (t: ExecutionContext['tables']): ExecutionContext => ({
      connectorId: 'c',
      config: { host: 'x', database: 'd', user: 'u' },
      credential: null,
      allowWrite: false,
      allowDdl: false,
      readOnly: false,
      limits: { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 10, maxResultBytes: 100_000 },
      tables: t,
    });
    const tool = { name: 't', description: '', inputSchema: { type: 'object' as const, properties: {} }, target: orders };
    const call = (sql: string, t: ExecutionContext['tables']) => prepareCall(dialect, tool, { sql }, ctx(t));
    const text = (r: ReturnType<typeof call>): string => (isRefusal(r) ? String(r.content[0]?.text) : 'ran');
    const hiddenSsn = policy({ hidden_columns: [up('ssn')] });

    test(`${name}: a join runs as written, touching both tables; a hidden column of the joined table is refused`, () => {
      const join = 'SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id';
      const r = call(join, tables(hiddenSsn));
      if (isRefusal(r)) throw new Error(text(r));
      expect(r.statement).toBe(join);
      expect(r.touched?.map((x) => x.table)).toEqual([up('orders'), up('customers')]);
      expect(text(call('SELECT o.id, c.ssn FROM orders o JOIN customers c ON c.id = o.customer_id', tables(hiddenSsn)))).toMatch(/ssn/i);
    });

    test(`${name}: a disabled table is refused by name; a masked or filtered one refuses what it cannot apply`, () => {
      expect(text(call('SELECT o.id FROM orders o JOIN payroll p ON p.id = o.id', tables(hiddenSsn)))).toContain(`${schema}.${up('payroll')}`);
      expect(isRefusal(call('SELECT o.id FROM orders o JOIN payroll p ON p.id = o.id', tables(hiddenSsn, true)))).toBe(false);
      const masked = policy({ masked_columns: [{ column: up('email'), mask: 'fixed' }] });
      expect(text(call('SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id', tables(masked)))).toMatch(/column or row polic/);
      const filtered = policy({ row_filter: '1 = 1' });
      expect(text(call('SELECT c.name FROM customers c', tables(filtered)))).toMatch(/column or row polic/);
    });
  }
});
