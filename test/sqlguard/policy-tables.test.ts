/**
 * Issue 38 (docs/decisions/0292): policies per table in one statement. applyPolicies replaces each reference by ITS
 * table's derived table and binds every table's values after the statement's own (numbered) or by text position
 * (positional); prepareCall builds the guard's list from ctx.tables, refuses a touched disabled table by name, applies
 * each touched table's policy, and reports the touched tables. The numbered rewrite is run on a real server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import postgres from 'postgres';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { applyPolicies, policyKey, type PolicyTable, type TableRef } from '../../src/connectors/shared/policy.ts';
import { PG_POLICY } from '../../src/connectors/postgresql/policy.ts';
import { MYSQL_POLICY } from '../../src/connectors/mysql/policy.ts';
import { PG_DIALECT } from '../../src/connectors/postgresql/execute.ts';
import { PG_SYNTAX } from '../../src/connectors/postgresql/saved.ts';
import { parseTemplate } from '../../src/connectors/shared/saved.ts';
import { isRefusal, prepareCall, type PreparedCall } from '../../src/connectors/shared/prepare.ts';
import { loadPgGuard } from '../../src/connectors/postgresql/guard/lazy.ts';
import type { CallTable, ExecutionContext, SqlTarget, SqlToolSpec, ToolResult, CallPolicy, ToolPolicy } from '../../src/connectors/types.ts';

const available = await serviceAvailable('postgres');
await loadPgGuard();

const PEOPLE: ToolPolicy = { hidden_columns: ['ssn'], masked_columns: [{ column: 'email', mask: 'fixed', text: '[m]' }], row_filter: 'tenant = :caller.t' };
const ORDERS: ToolPolicy = { hidden_columns: [], masked_columns: [], row_filter: 'region = :caller.r AND owner = :caller.t' };
const cp = (p: ToolPolicy, caller: Record<string, string>): CallPolicy => ({ policy: p, key: policyKey(p), maskKey: null, caller });
const PEOPLE_T: PolicyTable = { qualified: '"public"."people"', columns: ['id', 'tenant', 'email', 'ssn'], cp: cp(PEOPLE, { t: 'a', r: 'eu' }) };
const ORDERS_T: PolicyTable = { qualified: '"public"."orders"', columns: ['id', 'person_id', 'region', 'owner'], cp: cp(ORDERS, { t: 'a', r: 'eu' }) };
const byIndex = (ref: TableRef): PolicyTable => (ref.table === 0 ? PEOPLE_T : ORDERS_T);
/** `SELECT ... FROM people p JOIN orders o ...`: where the two names stand. */
const SQL = 'SELECT p.email, o.id FROM people p JOIN orders o ON o.person_id = p.id WHERE o.id > $1';
const REFS: TableRef[] = [
  { start: SQL.indexOf('people'), end: SQL.indexOf('people') + 6, alias: null, table: 0 },
  { start: SQL.indexOf('orders'), end: SQL.indexOf('orders') + 6, alias: null, table: 1 },
];

describe('applyPolicies: each reference by its own table’s policy (issue 38)', () => {
  test('numbered: each table’s derived table, the statement’s own $1 first, one number per distinct value', () => {
    const out = applyPolicies(PG_POLICY, SQL, REFS, byIndex, { values: ['10'] });
    expect(out.statement).toBe(
      'SELECT p.email, o.id FROM (SELECT "id", "tenant", CASE WHEN "email" IS NULL THEN NULL ELSE $4::pg_catalog.text END AS "email" FROM "public"."people" WHERE (tenant = $3::pg_catalog.text) OFFSET 0) p' +
        ' JOIN (SELECT "id", "person_id", "region", "owner" FROM "public"."orders" WHERE (region = $2::pg_catalog.text AND owner = $3::pg_catalog.text) OFFSET 0) o ON o.person_id = p.id WHERE o.id > $1',
    );
    // Bound from the end: orders' values first, then people's; 'a' (both tables' tenant) once.
    expect(out.values).toEqual(['10', 'eu', 'a', '[m]']);
    expect(out.resolution).not.toMatch(/\$[2-9]/);
    expect(out.resolution).toContain('$1');
  });

  test('a caller without one table’s attribute: that table gives no rows, the other keeps its filter', () => {
    const noRegion: PolicyTable = { ...ORDERS_T, cp: cp(ORDERS, { t: 'a' }) };
    const out = applyPolicies(PG_POLICY, SQL, REFS, (r) => (r.table === 0 ? PEOPLE_T : noRegion));
    expect(out.statement).toContain('FROM "public"."orders" WHERE FALSE OFFSET 0');
    expect(out.statement).toContain('FROM "public"."people" WHERE (tenant = $');
  });

  test('positional: every table’s values where its reference stands, among the statement’s own markers', () => {
    const sql = 'SELECT ? AS a FROM people p JOIN orders o ON o.person_id = p.id WHERE o.id > ?';
    const refs: TableRef[] = [
      { start: sql.indexOf('people'), end: sql.indexOf('people') + 6, alias: null, table: 0 },
      { start: sql.indexOf('orders'), end: sql.indexOf('orders') + 6, alias: null, table: 1 },
    ];
    const out = applyPolicies(MYSQL_POLICY, sql, refs, byIndex, { values: ['x', 5], offsets: [7, sql.lastIndexOf('?')] });
    // x, then people's (mask text, tenant), then orders' (region, tenant), then 5.
    expect(out.values).toEqual(['x', '[m]', 'a', 'eu', 'a', 5]);
    expect(out.statement.split('?').length - 1).toBe(out.values.length);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// prepareCall with ctx.tables (no server: the guard and the rewrite only).

const col = (name: string, type = 'text') => ({ name, type });
const target = (table: string, columns: string[], schema = 'public'): SqlTarget => ({ schema, table, kind: 'table', columns: columns.map((c) => col(c)) });
const T_PEOPLE = target('people', ['id', 'tenant', 'email', 'ssn']);
const T_ORDERS = target('orders', ['id', 'person_id', 'region', 'owner']);
const T_PAY = target('pay', ['id', 'person_id', 'amount']);
const toolOf = (t: SqlTarget): SqlToolSpec =>
  ({ name: `query_${t.table}`, description: '', inputSchema: { type: 'object', properties: {} }, target: t }) as SqlToolSpec;
const LIST: CallTable[] = [
  { target: T_PEOPLE, enabled: true, policy: cp(PEOPLE, { t: 'a' }) },
  { target: T_ORDERS, enabled: true },
  { target: T_PAY, enabled: false },
];
const ctxOf = (o: Partial<ExecutionContext> = {}): ExecutionContext =>
  ({
    allowWrite: true,
    allowDdl: false,
    readOnly: false,
    limits: { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows: 10, maxResultBytes: 100_000 },
    tables: { key: 'h1-prep:v1', list: LIST },
    ...o,
  }) as ExecutionContext;
const prepared = (out: PreparedCall | ToolResult): PreparedCall => {
  if (isRefusal(out)) throw new Error(`refused: ${JSON.stringify(out.content)}`);
  return out;
};
const refusalText = (out: PreparedCall | ToolResult): string => {
  if (!isRefusal(out)) throw new Error(`expected a refusal, got ${out.statement}`);
  return (out.content[0] as { text: string }).text;
};

describe('prepareCall with the connector’s tables (issue 38)', () => {
  test('a join: both tables touched, the governed one rewritten, the other as written', () => {
    const out = prepared(prepareCall(PG_DIALECT, toolOf(T_ORDERS), { sql: 'SELECT p.email FROM orders o JOIN people p ON p.id = o.person_id' }, ctxOf()));
    expect(out.touched).toEqual([T_PEOPLE, T_ORDERS]);
    expect(out.statement).toContain(
      'FROM orders o JOIN (SELECT "id", "tenant", CASE WHEN "email" IS NULL THEN NULL ELSE $1::pg_catalog.text END AS "email" FROM "public"."people" WHERE (tenant = $2::pg_catalog.text) OFFSET 0) p ON',
    );
    expect(out.values).toEqual(['[m]', 'a']);
    expect(out.resolutionStatement).toContain('NULL::pg_catalog.text');
  });

  test('a read of ungoverned tables only: no rewrite, no values', () => {
    const out = prepared(prepareCall(PG_DIALECT, toolOf(T_PEOPLE), { sql: 'SELECT count(*) FROM orders' }, ctxOf()));
    expect(out.touched).toEqual([T_ORDERS]);
    expect(out.values).toBeUndefined();
  });

  test('a touched disabled table refuses the call, naming it, in every form', () => {
    for (const sql of [
      'SELECT * FROM pay',
      'SELECT * FROM orders WHERE id IN (SELECT person_id FROM pay)',
      'WITH x AS (SELECT * FROM public.pay) SELECT 1 FROM x',
    ]) {
      expect(refusalText(prepareCall(PG_DIALECT, toolOf(T_ORDERS), { sql }, ctxOf()))).toContain('"public.pay"');
    }
  });

  test('a write on a table whose row has a policy is refused; on an ungoverned one it runs as written', () => {
    expect(refusalText(prepareCall(PG_DIALECT, toolOf(T_PEOPLE), { sql: "UPDATE people SET email = 'x'" }, ctxOf()))).not.toBe('');
    const w = prepared(prepareCall(PG_DIALECT, toolOf(T_ORDERS), { sql: "UPDATE orders SET owner = 'x'" }, ctxOf()));
    expect([w.write, w.touched, w.statement]).toEqual([true, [T_ORDERS], "UPDATE orders SET owner = 'x'"]);
  });

  test('the tool’s own policy applies to its table when its row carries none', () => {
    const list: CallTable[] = [{ target: T_PEOPLE, enabled: true }, LIST[1]!];
    const c = ctxOf({ tables: { key: 'h1-prep:v2', list }, policy: cp(PEOPLE, { t: 'b' }) });
    const out = prepared(prepareCall(PG_DIALECT, toolOf(T_PEOPLE), { sql: 'SELECT * FROM people JOIN orders ON TRUE' }, c));
    expect(out.values).toEqual(['[m]', 'b']);
    expect(refusalText(prepareCall(PG_DIALECT, toolOf(T_PEOPLE), { sql: 'SELECT ssn FROM people' }, c))).toContain('ssn');
  });

  test('a saved statement with a JOIN: its arguments first, every touched table’s policy after', () => {
    const parameters = [{ name: 'min', type: 'integer' as const, description: 'lowest id' }];
    const statement = 'SELECT p.email, o.id FROM orders o JOIN people p ON p.id = o.person_id WHERE o.id >= :min';
    const saved = { statement, parameters, version: 1, ...parseTemplate(statement, parameters, PG_SYNTAX) };
    const tool = toolOf({ ...T_ORDERS, saved });
    const out = prepared(prepareCall(PG_DIALECT, tool, { min: 3 }, ctxOf()));
    expect(out.touched).toEqual([T_PEOPLE, T_ORDERS]);
    expect(out.values).toEqual(['3', '[m]', 'a']);
    expect(out.statement).toContain('WHERE (tenant = $3::pg_catalog.text)');
    expect(out.resolutionParams).toBe(1);
  });

  test('a dialect whose guard does not read the list: checked on the tool’s own table under its row’s policy', () => {
    const single = { ...PG_DIALECT, tables: undefined };
    expect(refusalText(prepareCall(single, toolOf(T_ORDERS), { sql: 'SELECT * FROM orders JOIN people ON TRUE' }, ctxOf()))).toContain('people');
    const own = prepared(prepareCall(single, toolOf(T_PEOPLE), { sql: 'SELECT * FROM people' }, ctxOf()));
    expect([own.touched, own.values]).toEqual([[T_PEOPLE], ['[m]', 'a']]);
  });
});

describe.skipIf(!available)('the numbered rewrite on a real server', () => {
  let t: Targets;
  let db: postgres.Sql;
  beforeAll(async () => {
    t = await createTargets('h1_poltables', 'pg');
    for (const s of [
      'CREATE TABLE people (id int PRIMARY KEY, tenant text, email text, ssn text)',
      "INSERT INTO people VALUES (1, 'a', 'one@a', 's1'), (2, 'b', 'two@b', 's2')",
      'CREATE TABLE orders (id int PRIMARY KEY, person_id int, region text, owner text)',
      "INSERT INTO orders VALUES (10, 1, 'eu', 'a'), (11, 1, 'us', 'a'), (12, 2, 'eu', 'b'), (13, 2, 'eu', 'a')",
    ])
      await t.pg(s);
    db = postgres({ ...t.pgConfig, ssl: false, max: 1, onnotice: () => undefined });
  });
  afterAll(async () => {
    await db?.end();
    await t?.drop();
  });

  test('both policies hold in one statement, the statement’s own parameter bound first', async () => {
    const out = applyPolicies(PG_POLICY, SQL, REFS, byIndex, { values: ['0'] });
    const rows: Record<string, unknown>[] = Array.from(await db.unsafe(out.statement, out.values as never[]));
    // People of tenant a, orders in eu owned by a: order 10 only (13 is person 2's, of tenant b).
    expect(rows).toEqual([{ email: '[m]', id: 10 }]);
  });
});
