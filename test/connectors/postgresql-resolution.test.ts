/**
 * PostgreSQL: a tool reads only its own table, whatever the server resolves the text to (issue 7, items 1 and 2).
 * Adversarial cases against a real server: functions reached without a call in the text (attribute notation, user
 * operators, implicit/assignment/explicit casts, domains, user functions shadowing or overloading built-ins, extension
 * operators), catalog and statistics relations under every spelling, and row types used as a metadata oracle.
 *
 * Proof that a leaking function did not run: every such function takes a session-level advisory lock (key LOCK_KEY)
 * before returning another table's secret. A session lock survives the call's rollback and the read-only mode, and
 * another session sees it in pg_locks; so after each refused case the lock must be absent AND the secret must not be
 * in the result.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { PG_URL, serviceAvailable } from '../support/services.ts';
import { postgresqlDriver, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { checkPgResolution } from '../../src/connectors/postgresql/resolution.ts';
import type { ToolResult, SqlToolSpec } from '../../src/connectors/types.ts';
import type { PgExecutionContext as ExecutionContext } from '../../src/connectors/postgresql/execute.ts';
import { verifies } from '../requirements.ts';

const available = await serviceAvailable('postgres');
const SECRET = 'TOPSECRET-7c1f';
const LOCK_KEY = 7_424_242;

// `leak*` functions take the marker lock, then return the secret of another table.
const FIXTURES = `
  create type mood as enum ('happy', 'sad');
  create type color as enum ('red', 'green');
  create table items (id int primary key, name text, status mood, qty int, color color);
  insert into items values (1, 'apple', 'happy', 3, 'red'), (2, 'pear', 'sad', 4, 'green');
  create table notes (id int primary key, body text);
  create table scratch (id int);
  insert into notes values (1, 'note');
  create table secrets (s text);
  insert into secrets values ('${SECRET}');
  create table pg_settings (name text, setting text);
  insert into public.pg_settings values ('own-row', 'mine');
  create function mark() returns void language plpgsql as $$ begin perform pg_catalog.pg_advisory_lock(${LOCK_KEY}); end $$;
  create function leak(items) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create function leak(notes) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create function leakany(anyelement) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create function leakbool(int, int) returns boolean language plpgsql as $$ begin perform mark(); raise exception '%', (select s from secrets limit 1); end $$;
  create function leakprefix(int) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create operator === (leftarg = int, rightarg = int, function = leakbool);
  create operator ~~~ (rightarg = int, function = leakprefix);
  create function leaktext(mood) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create cast (mood as text) with function leaktext(mood) as implicit;
  create function leakint(mood) returns int language plpgsql as $$ begin perform mark(); raise exception '%', (select s from secrets limit 1); end $$;
  create cast (mood as int) with function leakint(mood) as assignment;
  create function checker(text) returns boolean language plpgsql as $$ begin perform mark(); raise exception '%', (select s from secrets limit 1); end $$;
  create domain dchk as text check (checker(value));
  create function lower(items) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create function upper(int) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$;
  create schema shadow;
  create table shadow.things (id int, name text);
  insert into shadow.things values (1, 'thing');
  create function shadow.lower(text) returns text language plpgsql as $$ begin perform public.mark(); return (select s from public.secrets limit 1); end $$;
  create function shadow.eqleak(int, int) returns boolean language plpgsql as $$ begin perform public.mark(); raise exception '%', (select s from public.secrets limit 1); end $$;
  create operator shadow.= (leftarg = int, rightarg = int, function = shadow.eqleak);
  create domain shadow.int4 as int check (shadow.eqleak(value, value));
  create table shadow.plain (id int, name text);
  insert into shadow.plain values (1, 'plain');
  create extension pg_trgm;
  analyze items; analyze secrets;
`;

let server: postgres.Sql;
let db: postgres.Sql;
let dbName: string;
let tools: SqlToolSpec[];
const connectorId = `res-${randomBytes(4).toString('hex')}`;
let config: { host: string; port: number; database: string; user: string; schemas: string[] };

const ctx = (o: Partial<ExecutionContext> = {}, ttl?: number): ExecutionContext => ({
  connectorId,
  config,
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  ...o,
  limits: {
    statementTimeoutMs: 2000,
    lockTimeoutMs: 1000,
    maxRows: 100,
    maxResultBytes: 1_000_000,
    ...(ttl === undefined ? {} : { resolutionCacheTtlMs: ttl }),
  },
});
const tool = (table: string, schema = 'public'): SqlToolSpec => {
  const t = tools.find((x) => x.target.table === table && x.target.schema === schema);
  if (!t) throw new Error(`no tool for ${schema}.${table}`);
  return t;
};
const text = (r: ToolResult): string => r.content.map((c) => c.text).join('\n');
const run = (sql: string, c: ExecutionContext = ctx(), table = 'items', schema = 'public') => postgresqlDriver.execute(tool(table, schema), { sql }, c);

async function marked(): Promise<number> {
  const rows = await db.unsafe(`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${LOCK_KEY}`);
  return Number(rows[0]?.n);
}

/** The call is refused or fails, the secret is nowhere in the answer, and no leaking function ran. */
async function expectNoLeak(sql: string, c?: ExecutionContext, table?: string, schema?: string): Promise<string> {
  const r = await run(sql, c, table, schema);
  const out = text(r) + JSON.stringify(r.structuredContent ?? null);
  expect(out).not.toContain(SECRET);
  expect(r.isError, `${sql} -> ${out}`).toBe(true);
  expect(await marked(), `a leaking function ran for: ${sql}`).toBe(0);
  return text(r);
}

describe.skipIf(!available)('postgresql: server-side resolution (issue 7 items 1, 2)', () => {
  beforeAll(async () => {
    dbName = `tg_res_${randomBytes(5).toString('hex')}`;
    server = postgres(PG_URL, { max: 1, onnotice: () => undefined });
    await server.unsafe(`create database ${dbName}`);
    const url = new URL(PG_URL);
    url.pathname = `/${dbName}`;
    db = postgres(url.toString(), { max: 1, onnotice: () => undefined });
    await db.unsafe(FIXTURES);
    config = {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: dbName,
      user: decodeURIComponent(url.username) || 'postgres',
      schemas: ['public', 'shadow'],
    };
    await postgresqlDriver.validate(connectorId, config, null);
    tools = await postgresqlDriver.introspect(connectorId, config, null);
  });
  afterAll(async () => {
    await postgresqlDriver.closeAll();
    await db?.end();
    await server?.unsafe(`drop database if exists ${dbName} with (force)`);
    await server?.end();
  });

  test('the leak fixtures really leak when called directly (so the assertions below can fail)', async () => {
    const rows = await db.unsafe('select i.leak as l from items i where id = 1');
    expect(rows[0]?.l).toBe(SECRET);
    expect(await marked()).toBe(1);
    await db.unsafe(`select pg_advisory_unlock_all()`);
    expect(await marked()).toBe(0);
  });

  describe('functions reached without a call in the text are refused before anything runs', () => {
    test.each([
      ['attribute notation, table name', 'SELECT items.leak FROM items'],
      ['attribute notation, alias', 'SELECT i.leak FROM items i'],
      ['attribute notation, parenthesised alias', 'SELECT (i).leak FROM items i'],
      ['attribute notation on i.*', 'SELECT (i.*).leak FROM items i'],
      ['attribute notation in WHERE', 'SELECT id FROM items WHERE items.leak IS NOT NULL'],
      ['attribute notation in ORDER BY', 'SELECT id FROM items i ORDER BY (i).leak'],
      ['attribute notation in GROUP BY / HAVING', 'SELECT count(*) FROM items i GROUP BY i.id HAVING max(i.leak) IS NOT NULL'],
      ['attribute notation in a scalar subquery', 'SELECT (SELECT x.leak FROM items x LIMIT 1) FROM items'],
      ['attribute notation in a CTE', 'WITH c AS (SELECT i.leak AS l FROM items i) SELECT * FROM c'],
      ['attribute notation in LATERAL', 'SELECT * FROM items i, LATERAL (SELECT i.leak) l'],
      ['attribute notation in EXISTS', 'SELECT 1 FROM items i WHERE EXISTS (SELECT 1 WHERE i.leak = i.name)'],
      ['attribute notation, polymorphic function', 'SELECT i.leakany FROM items i'],
      ['attribute notation on a column (polymorphic)', 'SELECT (i.name).leakany FROM items i'],
      ['whole row through a subquery', 'SELECT q.leakany FROM (SELECT * FROM items) q'],
      ['whole row through a CTE named like the table', 'WITH items AS (SELECT * FROM public.items) SELECT items.leakany FROM items'],
      ['user operator in WHERE', 'SELECT * FROM items WHERE id === 1'],
      ['user operator in ORDER BY', 'SELECT * FROM items ORDER BY id === 1'],
      ['user operator in JOIN ON', 'SELECT * FROM items a JOIN items b ON a.id === b.id'],
      ['user operator in CASE', 'SELECT CASE WHEN id === 2 THEN 1 END FROM items'],
      ['user prefix operator', 'SELECT ~~~ id FROM items'],
      ['user operator via OPERATOR(public.===)', 'SELECT * FROM items WHERE id OPERATOR(public.===) 1'],
      ['implicit user cast (enum to text)', 'SELECT lower(status) FROM items'],
      ['implicit user cast in a comparison', "SELECT * FROM items WHERE status || '' = 'x'"],
      ['implicit user cast chosen over the enum = operator', "SELECT id FROM items WHERE status = 'happy'"],
      ['explicit user cast to a built-in type', 'SELECT status::int FROM items'],
      ['explicit user cast with CAST()', 'SELECT CAST(status AS text) FROM items'],
      ['domain with a CHECK calling a function', "SELECT 'x'::dchk FROM items"],
      ['domain via CAST', 'SELECT CAST(name AS dchk) FROM items'],
      ['user function overloading an allowed name (row type)', 'SELECT lower(i) FROM items i'],
      ['user function overloading an allowed name (int)', 'SELECT upper(id) FROM items'],
      ['extension operator (pg_trgm %)', "SELECT * FROM items WHERE name % 'appl'"],
      ['extension function', "SELECT similarity(name, 'x') FROM items"],
      ['user function called by name', 'SELECT leak(i) FROM items i'],
      ['user function qualified', 'SELECT public.leak(i) FROM items i'],
      // Attribute notation reaches built-ins too (pinned, so not in pg_depend): the analysed tree is checked.
      ['built-in via attribute notation on a constant', `SELECT (${LOCK_KEY}).pg_advisory_lock FROM items`],
      ['built-in via attribute notation on an expression', `SELECT (i.id + ${LOCK_KEY - 1}).pg_advisory_lock FROM items i`],
      ['built-in via attribute notation in WHERE', `SELECT id FROM items i WHERE (i.id * 0 + ${LOCK_KEY}).pg_advisory_lock IS NULL`],
      ['built-in via attribute notation in ORDER BY', `SELECT id FROM items i ORDER BY (${LOCK_KEY}::bigint).pg_advisory_lock`],
      ['pg_typeof via attribute notation on the row', 'SELECT i.pg_typeof FROM items i'],
      ['pg_typeof via attribute notation on a column', 'SELECT (i.name).pg_typeof FROM items i'],
      ['pg_column_size via attribute notation', 'SELECT (i).pg_column_size FROM items i'],
      ['a call after an alias ending in a backslash', `SELECT 1 AS "a\\", (${LOCK_KEY}).pg_advisory_lock FROM items`],
      ['a call inside an alias-named subquery', `SELECT * FROM (SELECT (${LOCK_KEY}).pg_advisory_lock AS "{AGGREF :aggfnoid 2147 ") "\\{FUNCEXPR" `],
      ['three-part column reference', 'SELECT items.name.pg_typeof FROM items'],
    ])('%s', async (_name, sql) => {
      verifies('SQL-PG-RESOLUTION');
      await expectNoLeak(sql);
    });

    test('a file-reading built-in via attribute notation does not run', async () => {
      const host = (await Bun.file('/etc/hostname').text()).trim();
      const out = await expectNoLeak("SELECT ('/etc/hostname').pg_read_file FROM items");
      expect(out).toContain('pg_read_file');
      if (host.length > 3) expect(out).not.toContain(host);
    });

    test('the refusal names what the server resolved to', async () => {
      expect(await expectNoLeak('SELECT i.leak FROM items i')).toContain('function leak(items)');
      expect(await expectNoLeak('SELECT * FROM items WHERE id === 1')).toContain('operator ===(integer,integer)');
      expect(await expectNoLeak('SELECT lower(status) FROM items')).toContain('function leaktext(mood)');
    });

    test('writes: attribute notation, operators and assignment casts in INSERT/UPDATE/DELETE', async () => {
      const w = ctx({ allowWrite: true });
      const before = await db.unsafe('select count(*)::int as n, max(name) as m from items');
      for (const sql of [
        'UPDATE items SET name = items.leak',
        'UPDATE items SET qty = status',
        "INSERT INTO items (id, name, qty) VALUES (9, 'x', 1) RETURNING items.leak",
        'INSERT INTO items (id, qty) SELECT 10, status FROM items LIMIT 1',
        'DELETE FROM items WHERE id === 1',
        'DELETE FROM items i WHERE i.leak IS NULL RETURNING *',
        'WITH u AS (UPDATE items SET name = name WHERE id === 2 RETURNING *) SELECT * FROM u',
        "INSERT INTO items (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = excluded.leak",
        "INSERT INTO items (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = 'y' WHERE items.leak IS NOT NULL",
        `UPDATE items SET qty = qty WHERE (${LOCK_KEY}).pg_advisory_lock IS NULL`,
        'SELECT (i).leak FROM items i FOR UPDATE',
      ]) {
        await expectNoLeak(sql, w);
      }
      expect(await db.unsafe('select count(*)::int as n, max(name) as m from items')).toEqual(before);
    });

    test('DDL: user operators, attribute notation and user casts in expressions are refused by name', async () => {
      const d = ctx({ allowDdl: true });
      for (const sql of [
        'ALTER TABLE notes ADD CONSTRAINT c1 CHECK (id === 1)',
        'CREATE INDEX ON notes ((notes.leak))',
        'ALTER TABLE notes ADD COLUMN x text DEFAULT ~~~ 1',
        `ALTER TABLE notes ADD CONSTRAINT c4 CHECK ((id * 0 + ${LOCK_KEY}).pg_advisory_lock IS NOT NULL)`,
        `ALTER TABLE notes ADD COLUMN y text DEFAULT (${LOCK_KEY}).pg_advisory_lock`,
        "ALTER TABLE notes ADD CONSTRAINT c5 CHECK (length(('/etc/hostname').pg_read_file) > 0)",
        'ALTER TABLE items ADD CONSTRAINT c2 CHECK (qty > 0)', // items has a column whose type has a user cast
      ]) {
        await expectNoLeak(sql, d, sql.includes('items') ? 'items' : 'notes');
      }
      const ok = await run("ALTER TABLE notes ADD CONSTRAINT c3 CHECK (id > 0 AND (body).length < 1000 AND notes.body <> '')", d, 'notes');
      expect(ok.isError, text(ok)).toBeFalsy();
      // DDL may recreate the tool's table after dropping it.
      for (const sql of [
        'DROP TABLE scratch',
        "CREATE TABLE scratch (id int CHECK (id > 0), v text DEFAULT 'x' || 'y')",
        'INSERT INTO scratch (id) VALUES (1)',
      ]) {
        const r = await run(sql, ctx({ allowDdl: true, allowWrite: true }), 'scratch');
        expect(r.isError, `${sql}: ${text(r)}`).toBeFalsy();
      }
      expect(Array.from(await db.unsafe('select id, v from scratch'))).toEqual([{ id: 1, v: 'xy' }] as never);
    });
  });

  describe('ordinary statements still work', () => {
    test.each([
      ['enum comparison (the column type is the table own)', "SELECT id FROM items WHERE color = 'red'", '"id":1'],
      ['enum literal cast is refused by the guard, but the comparison is fine', "SELECT id FROM items WHERE color IN ('green')", '"id":2'],
      ['allowed function on text', 'SELECT lower(name) AS l FROM items ORDER BY id', 'apple'],
      ['column via (alias).name', 'SELECT (i).name FROM items i ORDER BY id', 'pear'],
      ['an allowed built-in via attribute notation', 'SELECT (i.name).upper AS u FROM items i ORDER BY id', 'APPLE'],
      [
        'SQL-syntax functions and casts',
        "SELECT extract(year FROM now()), substring(name FROM 1 FOR 2), trim(both FROM name), position('p' IN name), id::numeric, qty::float8 FROM items",
        'ap',
      ],
      [
        'an alias that imitates a tree node neither refuses nor hides calls',
        'SELECT 1 AS "{FUNCEXPR :funcid 1 :funcresulttype 25 :funcretset false :funcvariadic false :funcformat 0", lower(name) AS "x\\" FROM items ORDER BY id',
        'apple',
      ],
      ['window and aggregate functions', 'SELECT id, row_number() OVER (ORDER BY id), sum(qty) OVER () FROM items', '"row_number"'],
      ['aggregates and GROUP BY', 'SELECT color, count(*) FROM items GROUP BY color ORDER BY 2', 'red'],
      ['whole row to JSON', 'SELECT row_to_json(i) AS j FROM items i WHERE id = 1', 'apple'],
      ['built-in casts', "SELECT id::text, '2024-01-01'::date, qty::numeric(10,2), '{}'::jsonb FROM items", '2024-01-01'],
      ['CTE named like the table', 'WITH items AS (SELECT * FROM public.items) SELECT name FROM items ORDER BY id', 'apple'],
    ])('%s', async (_name, sql, expected) => {
      const r = await run(sql);
      expect(r.isError, text(r)).toBeFalsy();
      expect(JSON.stringify(r.structuredContent)).toContain(expected);
    });

    test('a write that uses only the table and built-ins runs', async () => {
      const r = await run("UPDATE items SET name = upper(name) WHERE id = 2 AND color = 'green'", ctx({ allowWrite: true }));
      expect(r.isError, text(r)).toBeFalsy();
      expect((await db.unsafe('select name from items where id = 2'))[0]?.name).toBe('PEAR');
      await db.unsafe("update items set name = 'pear' where id = 2");
    });
  });

  describe('search_path: the tool schema first, its user functions checked', () => {
    test('a user function in the tool schema shadowing a built-in is refused', async () => {
      await expectNoLeak('SELECT lower(name) FROM things', ctx(), 'things', 'shadow');
      await expectNoLeak('SELECT lower(name) FROM shadow.things', ctx(), 'things', 'shadow');
    });
    test.each([
      ['= in WHERE', 'SELECT * FROM things WHERE id = 1'],
      ['IN list', 'SELECT * FROM things WHERE id IN (1, 2)'],
      ['IN subquery', 'SELECT * FROM things WHERE id IN (SELECT id FROM things)'],
      ['= ANY(array)', "SELECT * FROM things WHERE id = ANY('{1}')"],
      ['IS DISTINCT FROM', 'SELECT * FROM things WHERE id IS DISTINCT FROM 1'],
      ['NULLIF', 'SELECT NULLIF(id, 1) FROM things'],
      ['simple CASE', "SELECT CASE id WHEN 1 THEN 'a' END FROM things"],
      ['JOIN USING', 'SELECT * FROM things a JOIN things b USING (id)'],
      ['NATURAL JOIN', 'SELECT * FROM things NATURAL JOIN things x'],
      ['row comparison', 'SELECT * FROM things WHERE (id, id) = (1, 1)'],
      ['type name shadowed by a domain with a CHECK', 'SELECT id::int4 FROM things'],
    ])('a user operator or type in the tool schema that beats the built-in one: %s', async (_name, sql) => {
      await expectNoLeak(sql, ctx(), 'things', 'shadow');
    });

    test('the keyword spelling of a type is pg_catalog-qualified by the parser and stays usable', async () => {
      const r = await run('SELECT id::integer AS i, upper(name) AS u FROM plain', ctx(), 'plain', 'shadow');
      expect(r.isError, text(r)).toBeFalsy();
      expect((r.structuredContent as { rows: unknown[] }).rows).toEqual([{ i: 1, u: 'PLAIN' }]);
    });

    test('the same built-in works on a schema without a shadow', async () => {
      const r = await run('SELECT lower(body) AS l FROM notes', ctx(), 'notes');
      expect(r.isError, text(r)).toBeFalsy();
    });
  });

  describe('catalogs and statistics are never readable, however the name is written', () => {
    test.each([
      'SELECT * FROM pg_class',
      'SELECT * FROM PG_CLASS',
      'SELECT * FROM "pg_class"',
      'SELECT * FROM pg_catalog.pg_class',
      'SELECT * FROM pg_catalog.pg_stats',
      'SELECT * FROM pg_stats',
      'SELECT * FROM pg_stat_user_tables',
      'SELECT * FROM pg_statistic',
      'SELECT * FROM information_schema.columns',
      'SELECT * FROM INFORMATION_SCHEMA.COLUMNS',
      'TABLE pg_class',
      'TABLE pg_stats',
      'SELECT * FROM items, LATERAL (SELECT * FROM pg_stats) s',
      'SELECT (SELECT count(*) FROM pg_authid) FROM items',
      'SELECT * FROM items WHERE EXISTS (SELECT 1 FROM pg_stats)',
      'WITH items AS (SELECT * FROM pg_stats) SELECT * FROM items',
      "SELECT * FROM pg_ls_dir('.')",
      'SELECT * FROM pg_catalog.pg_get_keywords()',
      'SELECT * FROM items JOIN pg_stats ON true',
      'SELECT * FROM items UNION ALL SELECT * FROM secrets',
    ])('%s', async (sql) => {
      verifies('SQL-PG-CATALOGS');
      const out = await expectNoLeak(sql);
      expect(out).not.toContain('most_common_vals');
    });

    test('a user table named like a catalog view is read, not the catalog view (unqualified and qualified)', async () => {
      for (const sql of [
        'SELECT * FROM pg_settings',
        'SELECT * FROM PG_SETTINGS',
        'SELECT * FROM "pg_settings"',
        'SELECT * FROM public.pg_settings',
        'TABLE pg_settings',
      ]) {
        const r = await run(sql, ctx(), 'pg_settings');
        expect(r.isError, `${sql}: ${text(r)}`).toBeFalsy();
        const rows = (r.structuredContent as { rows: Record<string, unknown>[] }).rows;
        expect(rows).toEqual([{ name: 'own-row', setting: 'mine' }]);
      }
    });
  });

  describe('row types of other relations are no metadata oracle', () => {
    test.each([
      'SELECT null::secrets FROM items',
      'SELECT (null::secrets).* FROM items',
      'SELECT (null::pg_authid).* FROM items',
      'SELECT (null::pg_catalog.pg_authid).rolpassword FROM items',
      'SELECT row(1)::secrets FROM items',
      'SELECT CAST(row(1) AS secrets) FROM items',
      'SELECT pg_typeof(i) FROM items i',
      "SELECT 'secrets'::regclass FROM items",
      "SELECT 'secrets'::pg_catalog.regclass::oid FROM items",
      "SELECT 'mood'::regtype FROM items",
      "SELECT 'leak'::regproc FROM items",
      "SELECT 'public'::regnamespace FROM items",
      "SELECT 'postgres'::regrole FROM items",
      "SELECT secrets 'x' FROM items",
      "SELECT json_populate_record(null::secrets, '{}') FROM items",
      "SELECT '(x)'::items FROM items",
      'SELECT null::mood FROM items',
      'SELECT null::"INT4" FROM items',
      'SELECT null::public.int4 FROM items',
    ])('%s', async (sql) => {
      verifies('SQL-PG-ROWTYPE-ORACLE');
      await expectNoLeak(sql);
    });
  });

  describe('the verdict cache', () => {
    test('a repeated statement is answered from the cache; a function created later is seen once the TTL expires', async () => {
      const sql = 'SELECT initcap(body) AS n FROM notes';
      const first = await run(sql, ctx({}, 400), 'notes');
      expect(first.isError, text(first)).toBeFalsy();
      // The DBA adds a user function that the unqualified name now resolves to (tool schema first).
      await db.unsafe(
        `create function public.initcap(text) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$`,
      );
      try {
        await Bun.sleep(450);
        await expectNoLeak(sql, ctx({}, 400), 'notes');
      } finally {
        await db.unsafe('drop function public.initcap(text)');
      }
    });

    test('TTL 0 checks every call', async () => {
      const sql = 'SELECT btrim(body) FROM notes';
      expect((await run(sql, ctx({}, 0), 'notes')).isError).toBeFalsy();
      await db.unsafe(
        `create function public.btrim(text) returns text language plpgsql as $$ begin perform mark(); return (select s from secrets limit 1); end $$`,
      );
      try {
        await expectNoLeak(sql, ctx({}, 0), 'notes');
      } finally {
        await db.unsafe('drop function public.btrim(text)');
      }
    });

    test('cost: the first call pays one analysis round trip, repeated calls nothing', async () => {
      const limits = { statementTimeoutMs: 2000, lockTimeoutMs: 1000 };
      await postgresqlPoolFor(
        connectorId,
        config,
        null,
        async (pool) => {
          const req = { kind: 'read' as const, schema: 'public', table: 'items', ...limits, ttlMs: 60_000 };
          const N = 20;
          let t = performance.now();
          for (let i = 0; i < N; i++) await checkPgResolution(pool, { ...req, statement: `SELECT id FROM items WHERE id = ${i}` });
          const uncached = (performance.now() - t) / N;
          t = performance.now();
          for (let i = 0; i < N; i++) await checkPgResolution(pool, { ...req, statement: `SELECT id FROM items WHERE id = ${i}` });
          const cached = (performance.now() - t) / N;
          console.log(`resolution check: ${uncached.toFixed(2)} ms uncached, ${(cached * 1000).toFixed(1)} µs cached`);
          expect(cached).toBeLessThan(uncached / 10);
        },
        limits,
      );
    });
  });

  describe('a role without the TEMPORARY privilege', () => {
    const role = `tg_notemp_${randomBytes(4).toString('hex')}`;
    beforeAll(async () => {
      await db.unsafe(`create role ${role} login; revoke temporary on database ${dbName} from public; grant select on items to ${role}`);
    });
    afterAll(async () => {
      await postgresqlDriver.close(`${connectorId}-nt`);
      await db.unsafe(`drop owned by ${role}; drop role if exists ${role}`);
    });

    test('validation reports it; a call fails closed with a clear tool error', async () => {
      const c = { ...config, user: role };
      let message = '';
      await postgresqlDriver.validate(`${connectorId}-nt`, c, null).catch((e: Error) => (message = e.message));
      expect(message).toContain('TEMPORARY');
      const r = await postgresqlDriver.execute(tool('items'), { sql: 'SELECT id FROM items' }, { ...ctx(), connectorId: `${connectorId}-nt`, config: c });
      expect(r.isError).toBe(true);
      expect(text(r)).toContain('TEMPORARY');
    });
  });
});
