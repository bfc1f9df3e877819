/**
 * Issue 38 item 1 on PostgreSQL, at the guard (docs/decisions/0292): the shared join cases (test/connectors/join-cases.ts)
 * against a real server. First, that every case is an attack: run ungoverned, each answers something else than what
 * the governed call must (another tenant's rows, raw masked values) or holds a secret. Then the guard with
 * `opts.tables`: what each multi-table form touches and where each reference of the governed table is, what it refuses,
 * that its caches are keyed by the list; and the guard's verdict with the per-table rewrite run on the server, every
 * case through two tools, compared row for row and searched for every secret.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import postgres from 'postgres';
import { serviceAvailable } from '../support/services.ts';
import { clearPostgresGuardCache, guardPostgresSql } from '../../src/connectors/postgresql/guard/guard.ts';
import type { GuardOptions, GuardResult, GuardTable } from '../../src/connectors/shared/sqlguard/types.ts';
import { applyPolicies, policyKey, type PolicyTable, type TableRef } from '../../src/connectors/shared/policy.ts';
import { PG_POLICY } from '../../src/connectors/postgresql/policy.ts';
import { checkPgResolution } from '../../src/connectors/postgresql/resolution.ts';
import { postgresqlDriver, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { createTargets, type Targets } from '../support/targets.ts';
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
} from '../connectors/join-cases.ts';

const available = await serviceAvailable('postgres');
const onPg = (c: JoinCase): boolean => c.only === undefined || c.only.includes('postgresql');
let t: Targets;

beforeAll(async () => {
  if (!available) return;
  t = await createTargets('h1_joinguard', 'pg');
  for (const s of JOIN_FIXTURE) await t.pg(s);
  await t.pg('CREATE TABLE unlisted_secrets (v text)');
  await t.pg("INSERT INTO unlisted_secrets VALUES ('ssn-3333-b')");
});
afterAll(async () => {
  await t?.drop();
});

describe.skipIf(!available)('the join cases are attacks (ungoverned, each would fail)', () => {
  test('the fixture holds every listed table, and the other tenant’s rows', async () => {
    const names = (await t.pg("select relname from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'v')")).map((r) => r.relname);
    for (const n of JOIN_TABLES) expect(names).toContain(n);
    const [row] = await t.pg(`select count(*)::int as n from customers where tenant <> '${JOIN_CALLER.tenant}'`);
    expect(row!.n).toBeGreaterThan(0);
  });

  for (const c of JOIN_ANSWERS.filter(onPg)) {
    test(`answer case differs ungoverned: ${c.name}`, async () => {
      // An error (the side-channel case divides by zero on the other tenant's row) differs too.
      const raw = await t.pg(sqlFor(c, 'public')).catch((e: Error) => [{ error: e.message }]);
      expect(sameRows(raw, c.rows!)).toBe(false);
    });
  }

  for (const c of JOIN_REFUSALS.filter((r) => r.refused === DISABLED_TABLE || r.refused === JOIN_POLICY.hidden_columns[0])) {
    test(`refusal case leaks ungoverned: ${c.name}`, async () => {
      const raw = await t.pg(sqlFor(c, 'public'));
      // A hidden value comes back; a disabled table's rows at least decide the answer (an oracle).
      if (c.refused === DISABLED_TABLE) expect(raw.length).toBeGreaterThan(0);
      else expect(leakedSecret(JSON.stringify(raw))).not.toBeNull();
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------------
// The guard with opts.tables: what each form touches, where each reference of a governed table is, what is refused.

const POLICY_COLUMNS = ['id', 'tenant', 'name', 'email', 'ssn'];
/** The connector's tables as the guard sees them (the fixture's, a second schema, and a name two other schemas share). */
const LIST: GuardTable[] = [
  { schema: 'public', name: 'customers', policy: true, hidden: JOIN_POLICY.hidden_columns },
  { schema: 'public', name: 'orders' },
  { schema: 'public', name: 'payroll' },
  { schema: 'public', name: 'big_orders' },
  { schema: 'h1_sales', name: 'invoices' },
  { schema: 'h1_sales', name: 'orders' },
  { schema: 'h1_sales', name: 'shared' },
  { schema: 'h1_other', name: 'shared' },
];
const at = (schema: string, name: string): number => LIST.findIndex((x) => x.schema === schema && x.name === name);
const C = at('public', 'customers');
const O = at('public', 'orders');
const TABLES = { key: 'h1-guard:v1', list: LIST };
const opts = (o: Partial<GuardOptions> = {}): GuardOptions => ({
  table: { schema: 'public', name: 'orders' },
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  tables: TABLES,
  ...o,
});
const allowed = (sql: string, o: GuardOptions = opts()): GuardResult & { ok: true } => {
  const r = guardPostgresSql(sql, o);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  return r;
};
const refused = (sql: string, o: GuardOptions = opts()): string => {
  const r = guardPostgresSql(sql, o);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused, got ${JSON.stringify(r)}`);
  return r.reason;
};
/** Each reference the guard reports is exactly a name of the governed table in the text, and says so. */
function refsAt(sql: string, r: GuardResult & { ok: true }): string[] {
  for (const ref of r.refs ?? []) expect(ref.table).toBe(C);
  return (r.refs ?? []).map((ref) => sql.slice(ref.start, ref.end));
}

describe('postgresql guard with the connector’s tables (issue 38)', () => {
  test.each([
    ['a join with aliases', 'SELECT o.id, c.email FROM orders o JOIN customers c ON c.id = o.customer_id', [C, O], ['customers']],
    ['AS aliases, qualified', 'SELECT * FROM public.orders AS o, public.customers AS c', [C, O], ['public.customers']],
    ['a self-join', 'SELECT a.id FROM customers a JOIN customers b ON a.id <> b.id', [C], ['customers', 'customers']],
    ['a derived table', 'SELECT * FROM (SELECT * FROM customers) x', [C], ['customers']],
    ['a scalar subquery', 'SELECT (SELECT max(email) FROM customers) FROM orders', [C, O], ['customers']],
    ['EXISTS', 'SELECT 1 FROM orders o WHERE EXISTS (SELECT 1 FROM "customers" c WHERE c.id = o.customer_id)', [C, O], ['"customers"']],
    ['a CTE over it', 'WITH x AS (SELECT * FROM customers) SELECT * FROM x JOIN orders ON TRUE', [C, O], ['customers']],
    ['a CTE shadowing it reads it inside', 'WITH customers AS (SELECT * FROM customers) SELECT * FROM customers, customers c2', [C], ['customers']],
    [
      'a CTE shadowing it, the table qualified outside',
      'WITH customers AS (SELECT 1 AS id) SELECT * FROM public.customers, customers',
      [C],
      ['public.customers'],
    ],
    ['a CTE named like another table', 'WITH orders AS (SELECT * FROM customers) SELECT * FROM orders', [C], ['customers']],
    [
      'a recursive CTE named like it reads nothing',
      'WITH RECURSIVE customers AS (SELECT 1 AS id UNION ALL SELECT id + 1 FROM customers WHERE id < 3) SELECT * FROM customers',
      [],
      [],
    ],
    ['a later CTE sees an earlier one', 'WITH a AS (SELECT * FROM customers), customers AS (SELECT * FROM a) SELECT * FROM customers', [C], ['customers']],
    [
      'a CTE inside a subquery does not leak its scope',
      'SELECT * FROM (WITH customers AS (SELECT 1 AS id) SELECT * FROM customers) x, customers',
      [C],
      ['customers'],
    ],
    [
      'UNION / INTERSECT / EXCEPT',
      'SELECT id FROM orders UNION SELECT id FROM customers INTERSECT SELECT id FROM big_orders EXCEPT SELECT id FROM customers',
      [C, O, at('public', 'big_orders')],
      ['customers', 'customers'],
    ],
    ['LATERAL', 'SELECT * FROM orders o, LATERAL (SELECT * FROM customers c WHERE c.id = o.customer_id) l', [C, O], ['customers']],
    ['LEFT JOIN LATERAL', 'SELECT * FROM orders o LEFT JOIN LATERAL (SELECT email FROM customers WHERE id = o.customer_id) l ON TRUE', [C, O], ['customers']],
    ['a view', 'SELECT * FROM big_orders v JOIN customers c ON c.id = v.customer_id', [C, at('public', 'big_orders')], ['customers']],
    ['another schema, qualified', 'SELECT * FROM h1_sales.invoices i JOIN orders o ON o.id = i.order_id', [O, at('h1_sales', 'invoices')], []],
    ['the same name in two schemas', 'SELECT * FROM orders, h1_sales.orders', [O, at('h1_sales', 'orders')], []],
    ['quoted names', 'SELECT * FROM "public"."customers" JOIN "orders" ON TRUE', [C, O], ['"public"."customers"']],
    ['TABLE', 'TABLE customers', [C], ['customers']],
    ['no table', 'SELECT 1', [], []],
    ['the governed table’s name as a column qualifier only', 'SELECT orders.id FROM orders', [O], []],
  ])('%s', (_name, sql, touched, refs) => {
    const r = allowed(sql);
    expect(r.touched).toEqual(touched as number[]);
    expect(refsAt(sql, r)).toEqual(refs as string[]);
  });

  test('a reference keeps its alias; an unaliased one is given its own name', () => {
    const sql = 'SELECT * FROM customers JOIN public.customers c ON TRUE';
    expect(allowed(sql).refs!.map((r) => r.alias)).toEqual(['customers', null]);
  });

  test.each([
    ['a table the connector does not list', 'SELECT * FROM orders JOIN secrets ON TRUE', 'secrets'],
    ['a catalog, unqualified', 'SELECT * FROM orders, pg_class', 'pg_class'],
    ['a catalog, qualified', 'SELECT * FROM pg_catalog.pg_settings', 'pg_catalog.pg_settings'],
    ['information_schema in a subquery', 'SELECT (SELECT count(*) FROM information_schema.columns) FROM orders', 'information_schema.columns'],
    ['a three-part name', 'SELECT * FROM db.public.orders', 'db.public.orders'],
    ['a listed name in a schema it is not in', 'SELECT * FROM h1_sales.customers', 'h1_sales.customers'],
    ['an unqualified name of another schema', 'SELECT * FROM invoices', 'h1_sales.invoices'],
    ['an unqualified name two other schemas share', 'SELECT * FROM shared', 'qualify it'],
    ['a hidden column through a join', 'SELECT c.ssn FROM orders o JOIN customers c ON TRUE', 'ssn'],
    ['a hidden column in ORDER BY of a subquery', 'SELECT (SELECT id FROM customers ORDER BY ssn LIMIT 1) FROM orders', 'ssn'],
    ['a hidden column named through a CTE column list', 'WITH x(ssn) AS (SELECT id FROM customers) SELECT ssn FROM x', 'ssn'],
    ['ONLY on a governed table', 'SELECT * FROM orders, ONLY customers', 'ONLY'],
    ['a parameter beside a governed table', 'SELECT * FROM customers WHERE tenant = $1', 'parameters'],
    [
      'a parameter in another table’s subquery beside a governed table',
      'SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE id = $2)',
      'parameters',
    ],
    ['a function in FROM', 'SELECT * FROM orders, generate_series(1, 3)', 'function in FROM'],
    ['FOR UPDATE on a read', 'SELECT * FROM orders o JOIN customers c ON TRUE FOR UPDATE', 'locks'],
  ])('refused: %s', (_name, sql, words) => {
    expect(refused(sql)).toContain(words);
  });

  test('a hidden column of a table the statement does not touch is not refused by name', () => {
    expect(allowed('SELECT o.id AS ssn, o.note FROM orders o WHERE o.note <> $1').touched).toEqual([O]);
  });

  test('a saved statement’s own parameters are admitted beside a governed table, and only those', () => {
    const saved = opts({ policy: { key: '', hidden: [], params: 1 } });
    expect(allowed('SELECT * FROM customers WHERE id = $1::int', saved).refs).toHaveLength(1);
    expect(refused('SELECT * FROM customers WHERE id = $2', saved)).toContain('parameters');
  });

  test('writes: the tool’s own table only, reading no other', () => {
    const rw = opts({ allowWrite: true });
    const own = allowed("UPDATE orders SET note = 'x' WHERE id = (SELECT max(id) FROM orders)", rw);
    expect([own.kind, own.touched]).toEqual(['update', [O]]);
    expect(allowed('INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 1)', rw).touched).toEqual([O]);
    expect(refused('UPDATE orders SET total = (SELECT count(*) FROM customers)', rw)).toContain('public.customers');
    expect(refused('INSERT INTO orders SELECT * FROM h1_sales.orders', rw)).toContain('h1_sales.orders');
    expect(refused('DELETE FROM orders USING customers WHERE customers.id = orders.customer_id', rw)).toContain('public.customers');
    expect(refused('WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d, customers', rw)).toContain('public.customers');
    expect(refused('DELETE FROM customers', rw)).toContain('not this tool');
    expect(refused('SELECT * FROM orders o JOIN customers c ON TRUE FOR UPDATE OF o', rw)).toContain('public.customers');
    // Read-only connector: refused as before.
    expect(refused('DELETE FROM orders')).toContain('DELETE');
  });

  test('DDL: the tool’s own table only', () => {
    const ddl = opts({ allowDdl: true });
    expect(allowed('ALTER TABLE orders ADD COLUMN x int', ddl).touched).toEqual([O]);
    expect(refused('ALTER TABLE customers ADD COLUMN x int', ddl)).toContain('customers');
    expect(refused('CREATE TABLE orders (id int REFERENCES customers (id))', ddl)).toContain('customers');
  });

  test('refusals say what a read may span', () => {
    expect(refused('SELECT * FROM secrets')).toStartWith("Only a single SELECT over this connector's tables is allowed");
    expect(refused('DELETE FROM customers', opts({ allowWrite: true }))).toContain('or INSERT, UPDATE, DELETE on table "public.orders" alone');
  });

  test('without tables, behaviour is as before: one table', () => {
    const single: GuardOptions = { table: { schema: 'public', name: 'orders' }, allowWrite: false, allowDdl: false, readOnly: false };
    const r = guardPostgresSql('SELECT * FROM orders o JOIN customers c ON TRUE', single);
    expect(r.ok ? 'allowed' : r.reason).toContain("which is not this tool's table");
    const ok = allowed('SELECT * FROM orders', single);
    expect(ok.touched).toBeUndefined();
  });

  test('verdicts are keyed by the list: the same text under another list is decided again', () => {
    const sql = 'SELECT c.email FROM orders o JOIN customers c ON c.id = o.customer_id';
    expect(allowed(sql).refs).toHaveLength(1);
    const open = { key: 'h1-guard:v2', list: LIST.map((x) => ({ schema: x.schema, name: x.name })) };
    const r = allowed(sql, opts({ tables: open }));
    expect(r.refs).toEqual([]);
    expect(r.touched).toEqual([C, O]);
    const gone = { key: 'h1-guard:v3', list: LIST.filter((x) => x.name !== 'customers') };
    expect(refused(sql, opts({ tables: gone }))).toContain('customers');
    // Back to the first list: its verdict again (refs in this text).
    expect(allowed(sql).refs).toHaveLength(1);
  });

  test('texts of one literal form: each verdict’s references point into its own text', () => {
    clearPostgresGuardCache();
    for (const sql of ['SELECT * FROM customers WHERE id = 1', 'SELECT * FROM customers WHERE id = 123456', 'SELECT  *  FROM customers WHERE id = 7']) {
      expect(refsAt(sql, allowed(sql))).toEqual(['customers']);
    }
    // A form without governed references is reused: the touched tables are the same for every text of it.
    const a = allowed('SELECT * FROM orders WHERE id = 1');
    const b = allowed('SELECT * FROM orders WHERE id = 222');
    expect([a.touched, b.touched]).toEqual([[O], [O]]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// The guard's verdict and the per-table rewrite, run on the real server: every join case answers exactly the governed
// rows (nothing hidden, masked or filtered comes back), and the server-side check admits exactly the touched tables.

const CUSTOMERS: PolicyTable = {
  qualified: '"public"."customers"',
  columns: POLICY_COLUMNS,
  cp: { policy: JOIN_POLICY, key: policyKey(JOIN_POLICY), maskKey: null, caller: JOIN_CALLER },
};
const tableOf = (ref: TableRef): PolicyTable => {
  if (ref.table !== C) throw new Error(`a reference to table ${ref.table}, which has no policy`);
  return CUSTOMERS;
};

describe.skipIf(!available)('the guard and the rewrite on a real server (issue 38)', () => {
  let db: postgres.Sql;
  beforeAll(() => {
    db = postgres({ ...t.pgConfig, ssl: false, max: 1, onnotice: () => undefined });
  });
  afterAll(async () => {
    await db?.end();
  });

  for (const via of ['orders', 'customers']) {
    for (const c of JOIN_ANSWERS.filter(onPg)) {
      test(`through ${via}: ${c.name}`, async () => {
        const sql = sqlFor(c, 'public');
        const r = allowed(sql, opts({ table: { schema: 'public', name: via } }));
        expect(r.touched).toContain(C);
        const applied = applyPolicies(PG_POLICY, sql, r.refs!, tableOf);
        const rows = Array.from(await db.unsafe(applied.statement, applied.values as never[]));
        expect(leakedSecret(JSON.stringify(rows))).toBeNull();
        expect(sameRows(rows, c.rows!), JSON.stringify(rows)).toBe(true);
      });
    }
  }

  for (const c of JOIN_REFUSALS.filter(onPg)) {
    test(`at the guard: ${c.name}`, () => {
      const r = guardPostgresSql(sqlFor(c, 'public'), opts({ allowWrite: true }));
      // A disabled table is the call's to refuse (prepare.ts, from the touched list); everything else the guard's.
      if (c.refused === DISABLED_TABLE) expect(r.ok && r.touched?.includes(at('public', DISABLED_TABLE))).toBe(true);
      else expect(r.ok ? 'allowed' : r.reason.toLowerCase()).toContain(c.refused!.toLowerCase());
    });
  }

  test('the server-side check admits exactly the touched relations', async () => {
    await postgresqlPoolFor(`h1-guard-${t.name}`, { ...t.pgConfig, schemas: ['public'] }, null, async (pool) => {
      const req = (statement: string, relations: { schema: string; table: string }[]) =>
        checkPgResolution(pool, {
          statement,
          kind: 'read',
          schema: 'public',
          table: 'orders',
          statementTimeoutMs: 2000,
          lockTimeoutMs: 1000,
          ttlMs: 0,
          relations,
        });
      const both = [
        { schema: 'public', table: 'orders' },
        { schema: 'public', table: 'customers' },
      ];
      expect(await req('SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id', both)).toEqual({ ok: true });
      // The guard would never let this through; the server's own resolution refuses it too.
      const other = await req('SELECT o.id, s.v FROM orders o JOIN unlisted_secrets s ON TRUE', both);
      expect(other.ok ? '' : other.reason).toContain('relation unlisted_secrets');
      // A touched relation dropped since introspection.
      const gone = await req('SELECT 1', [{ schema: 'public', table: 'no_such_table' }]);
      expect(gone.ok ? '' : gone.reason).toContain('public.no_such_table');
      // Touched nothing: a statement on no table.
      expect(await req('SELECT 1', [])).toEqual({ ok: true });
    });
    await postgresqlDriver.close(`h1-guard-${t.name}`);
  });
});
