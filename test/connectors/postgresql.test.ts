/** The postgresql connector on a real PostgreSQL server: the shared conformance suite plus postgres-only checks. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { PG_URL, serviceAvailable } from '../support/services.ts';
import { configurePostgresqlPools, postgresqlDriver, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { runPgFast, runPgStatement } from '../../src/connectors/postgresql/run.ts';
import { getDriver } from '../../src/connectors/index.ts';
import { pgCallErrorText } from '../../src/connectors/postgresql/errors.ts';
import { INTERNAL_FAILURE_TEXT } from '../../src/connectors/shared/errors.ts';
import { verifies } from '../requirements.ts';
import { runConnectorConformance } from './conformance.ts';
import { LONG_NAMES, type Provisioned } from './cases.ts';

const available = await serviceAvailable('postgres');

const FIXTURES = `
  create table items (id serial primary key, name text, big int8, amount numeric(30,10), created_at timestamptz,
    happened timestamp, day date, payload bytea, doc jsonb, tags int[], ratio float8, stamps timestamptz[], flag boolean);
  insert into items (name, big, amount, created_at, happened, day, payload, doc, tags, ratio, stamps, flag) values
    ('first', 9223372036854775807, 12345678901234567890.0123456789, '2024-01-02 05:04:05.123456+02',
     '2024-01-02 03:04:05.123456', '2024-01-02', '\\x00ff10', '{"a": [1, 2], "b": "x"}', '{1,2,3}', 'NaN',
     '{"2024-01-02 03:04:05+00"}', true),
    ('second', 1, 1.5, now(), now(), current_date, '\\x01', '[]', '{}', 1.5, '{}', false),
    ('third', null, null, null, null, null, null, null, null, null, null, null);
  create table big (id int primary key, filler text);
  insert into big select g, repeat('x', 20) from generate_series(1, 3000) g;
  create table secrets (id int primary key, secret text);
  insert into secrets values (1, 'the secret');
  create table notes (id int primary key, body text);
  create table "Order Items" (id int);
  create table ${LONG_NAMES[0]} (id int);
  create table ${LONG_NAMES[1]} (id int);
  create schema sales;
  create table public.orders (id int); insert into public.orders values (1);
  create table sales.orders (id int); insert into sales.orders values (2);
  create view items_view as select id, name from items;
`;

const FINGERPRINT = `
  select (select md5(coalesce(string_agg(t::text, ',' order by id), '')) from items t)
      || (select md5(coalesce(string_agg(t::text, ',' order by id), '')) from secrets t)
      || (select last_value::text || is_called::text from items_id_seq)
      || (select count(*)::text from pg_largeobject_metadata)
      || (select string_agg(c.relname, ',' order by c.relname) from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname in ('public', 'sales') and c.relkind in ('r', 'v', 'm', 'S')) as f`;

async function provision(): Promise<Provisioned> {
  const name = `tg_conf_${randomBytes(5).toString('hex')}`;
  const server = postgres(PG_URL, { max: 1, onnotice: () => undefined });
  await server.unsafe(`create database ${name}`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const db = postgres(url.toString(), { max: 1, onnotice: () => undefined });
  await db.unsafe(FIXTURES);
  return {
    config: {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: name,
      user: decodeURIComponent(url.username) || 'postgres',
      schemas: ['public', 'sales'],
    },
    credential: decodeURIComponent(url.password) || null,
    mainSchema: 'public',
    secondSchema: 'sales',
    admin: async (sql) => Array.from(await db.unsafe(sql)),
    fingerprint: async () => String((await db.unsafe(FINGERPRINT))[0]?.f),
    lockTable: async (table) => {
      const conn = await db.reserve();
      await conn.unsafe(`begin; lock table ${table} in access exclusive mode`);
      return async () => {
        await conn.unsafe('rollback');
        conn.release();
      };
    },
    running: async (marker) => {
      const rows = await db.unsafe(
        `select count(*)::int as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and strpos(query, $1) > 0`,
        [marker],
      );
      return Number(rows[0]?.n);
    },
    teardown: async () => {
      await db.end();
      await server.unsafe(`drop database if exists ${name} with (force)`);
      await server.end();
    },
  };
}

runConnectorConformance({
  type: 'postgresql',
  driver: postgresqlDriver,
  available,
  provision,
  configurePools: configurePostgresqlPools,
  expectedValues: {
    id: 1,
    name: 'first',
    big: '9223372036854775807',
    amount: '12345678901234567890.0123456789',
    created_at: '2024-01-02T03:04:05.123456Z',
    happened: '2024-01-02T03:04:05.123456',
    day: '2024-01-02',
    payload: 'AP8Q',
    doc: { a: [1, 2], b: 'x' },
    tags: [1, 2, 3],
    ratio: 'NaN',
    stamps: ['2024-01-02T03:04:05Z'],
    flag: true,
  },
  securityCases: [
    {
      name: 'SET SESSION CHARACTERISTICS ... READ WRITE, stacked',
      sql: 'SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM items',
      writesToo: true,
    },
    {
      name: 'SET SESSION CHARACTERISTICS behind a comment',
      sql: '-- hi\nSET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DELETE FROM items',
      writesToo: true,
    },
    {
      name: 'END inside a comment-led stack',
      sql: '/* x */ SELECT 1; END; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; DROP TABLE items',
      writesToo: true,
    },
    { name: 'writable CTE', sql: 'WITH d AS (DELETE FROM items RETURNING *) SELECT * FROM d' },
    { name: 'SELECT ... INTO a new table', sql: 'SELECT * INTO items_copy FROM items', writesToo: true },
    { name: 'COPY ... TO PROGRAM', sql: "COPY items TO PROGRAM 'touch {PWNED}'", writesToo: true },
    { name: 'COPY (query) TO PROGRAM', sql: "COPY (SELECT * FROM items) TO PROGRAM 'touch {PWNED}'", writesToo: true },
    { name: 'pg_read_file', sql: "SELECT pg_read_file('/etc/passwd') FROM items", writesToo: true },
    { name: 'lo_export', sql: "SELECT lo_export(lo_from_bytea(0, 'A'::bytea), '{PWNED}') FROM items", writesToo: true },
    { name: 'setval', sql: "SELECT setval('items_id_seq', 1000) FROM items", writesToo: true },
    { name: 'dblink_exec', sql: "SELECT dblink_exec('dbname=postgres', 'DROP TABLE items') FROM items", writesToo: true },
    { name: 'pg_sleep(600)', sql: 'SELECT pg_sleep(600) FROM items', writesToo: true },
    {
      name: 'set_config to leave read-only for later calls',
      sql: "SELECT set_config('default_transaction_read_only', 'off', false) FROM items",
      writesToo: true,
    },
    { name: 'schema-qualified other table', sql: 'SELECT * FROM public.secrets', writesToo: true },
    { name: 'catalog table', sql: 'SELECT * FROM pg_catalog.pg_authid', writesToo: true },
    { name: 'DO block', sql: "DO $$ BEGIN EXECUTE 'DROP TABLE items'; END $$", writesToo: true },
  ],
  bypass: (p, connectorId, statement, o) =>
    postgresqlPoolFor(connectorId, p.config, p.credential, ({ sql }) =>
      runPgStatement(sql, statement, {
        readOnly: o.readOnly,
        statementTimeoutMs: o.statementTimeoutMs,
        lockTimeoutMs: 500,
        schema: 'public',
        signal: o.signal,
      }),
    ).then((r) => r.rows),
  sleep: { sql: 'select pg_sleep(600)', marker: 'pg_sleep(600)' },
  sessionSnapshot: [
    `select pg_backend_pid() as pid, current_user::text as cu, session_user::text as su,
       (select string_agg(name || '=' || setting, ',' order by name) from pg_settings where source not in ('default', 'override')) as settings,
       (select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid())::int as advisory,
       (select count(*) from pg_prepared_statements where from_sql)::int as prepared,
       (select count(*) from pg_cursors where name <> '')::int as cursors,
       (select count(*) from pg_listening_channels())::int as listening,
       (select count(*) from pg_class where relnamespace = pg_my_temp_schema())::int as temp_objects`,
    // A custom setting's placeholder outlives even a rolled-back set_config, empty: only a value would be a leak.
    "select nullif(current_setting('toolgate.leak', true), '') as custom, current_setting('work_mem') as work_mem, setting as ro from pg_settings where name = 'default_transaction_read_only'",
  ],
  sessionChanges: [
    "select set_config('work_mem', '77kB', false)",
    "select set_config('toolgate.leak', 'yes', false)",
    "select set_config('default_transaction_read_only', 'off', false)",
    "set work_mem = '78kB'",
    'set session characteristics as transaction read write',
    'select pg_advisory_lock(4242)',
    'prepare tg_leak as select 1',
    'declare tg_leak_cursor cursor with hold for select 1',
    'listen tg_leak_channel',
    'create temp table tg_leak_tmp (x int)',
    'set role pg_monitor',
    'set session authorization pg_monitor',
  ],
  bigRowsSql: "SELECT repeat('x', 500000) AS v FROM big",
});

describe.skipIf(!available)('postgresql specifics', () => {
  let p: Provisioned;
  const id = `pg-spec-${randomBytes(3).toString('hex')}`;
  const limits = { statementTimeoutMs: 1000, lockTimeoutMs: 500, maxRows: 100, maxResultBytes: 100_000 };
  beforeAll(async () => {
    p = await provision();
  });
  afterAll(async () => {
    configurePostgresqlPools({ max: 10 });
    await postgresqlDriver.close(id);
    await p?.teardown();
  });

  test('registered through src/connectors/index.ts, its implementation loaded on first use (decision 0192)', async () => {
    const registered = getDriver('postgresql')!;
    expect(registered.type).toBe('postgresql');
    expect(registered.kind).toBe('database');
    expect(registered.configSchema).toBe(postgresqlDriver.configSchema);
    // The registered entry delegates to driver.ts: its introspect and its calls are this driver's.
    const items = (await registered.introspect(id, p.config, p.credential)).find((t) => t.target.table === 'items')!;
    const ctx = { connectorId: id, config: p.config, credential: p.credential, allowWrite: false, allowDdl: false, readOnly: false, limits };
    expect((await registered.execute(items, { sql: 'SELECT id FROM items WHERE id = 1' }, ctx)).structuredContent?.rows).toEqual([{ id: 1 }]);
    const refused = await registered.execute(items, { sql: 'DELETE FROM items' }, ctx);
    expect(refused.isError).toBe(true);
    await postgresqlDriver.close(id);
  });

  test('reads on the first schema run as one statement on a read-only session; it refuses writes by itself', async () => {
    verifies('SQL-ONE-STATEMENT-PROTOCOL');
    configurePostgresqlPools({ max: 1 }); // one connection: every check below sees the same session
    const items = (await postgresqlDriver.introspect(id, p.config, p.credential)).find((t) => t.target.table === 'items')!;
    const ctx = { connectorId: id, config: p.config, credential: p.credential, allowWrite: false, allowDdl: false, readOnly: false, limits };
    expect((await postgresqlDriver.execute(items, { sql: 'SELECT id FROM items WHERE id = 1' }, ctx)).structuredContent?.rows).toEqual([{ id: 1 }]);
    await postgresqlPoolFor(id, p.config, p.credential, async (pool) => {
      expect(pool.session).toEqual({ statementTimeoutMs: 1000, lockTimeoutMs: 500, schema: 'public' });
      expect((pool.sql.parameters as Record<string, unknown>).default_transaction_read_only).toBe('on');
      await expect(runPgFast(pool.sql, 'delete from items', { statementTimeoutMs: 1000 })).rejects.toMatchObject({ code: '25006' });
      await expect(runPgFast(pool.sql, 'select 1; delete from items', { statementTimeoutMs: 1000 })).rejects.toMatchObject({ code: '42601' });
      // A statement that switched the session to read-write (only possible past the guard) taints the pool...
      await runPgFast(pool.sql, "select set_config('default_transaction_read_only', 'off', false)", { statementTimeoutMs: 1000 });
      expect(pool.tainted).toBe(true);
    });
    // ...and reads go back to explicit read-only transactions, on that very connection.
    expect((await postgresqlDriver.execute(items, { sql: 'SELECT id FROM items WHERE id = 2' }, ctx)).structuredContent?.rows).toEqual([{ id: 2 }]);
    await postgresqlPoolFor(id, p.config, p.credential, async ({ sql }) => {
      await expect(runPgStatement(sql, 'delete from items', { readOnly: true, statementTimeoutMs: 1000, lockTimeoutMs: 500 })).rejects.toMatchObject({
        code: '25006',
      });
    });
    await postgresqlDriver.close(id);
  });

  test('a session setting changed inside a transaction dies with it', async () => {
    configurePostgresqlPools({ max: 1 });
    const run = (s: string) =>
      postgresqlPoolFor(`${id}-guc`, p.config, p.credential, ({ sql }) =>
        runPgStatement(sql, s, { readOnly: true, statementTimeoutMs: 1000, lockTimeoutMs: 500 }),
      );
    await run("select set_config('statement_timeout', '0', false), set_config('default_transaction_read_only', 'off', false)");
    const after = await run("select current_setting('statement_timeout') as st, current_setting('transaction_read_only') as ro");
    expect(after.rows).toEqual([{ st: '1s', ro: 'on' }]);
    await postgresqlDriver.close(`${id}-guc`);
  });

  test('issue 7: one 200 MB value is never read: the server stops it, the answer is a truncated result', async () => {
    const items = (await postgresqlDriver.introspect(id, p.config, p.credential)).find((t) => t.target.table === 'items')!;
    const ctx = {
      connectorId: id,
      config: p.config,
      credential: p.credential,
      allowWrite: false,
      allowDdl: false,
      readOnly: false,
      limits: { ...limits, statementTimeoutMs: 30_000, maxResultBytes: 1_000_000 },
    };
    Bun.gc(true);
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const r = await postgresqlDriver.execute(items, { sql: "SELECT id, repeat('x', 200000000) AS v FROM items WHERE id = 1" }, ctx);
    const small = await postgresqlDriver.execute(
      items,
      { sql: "SELECT id, CASE WHEN id = 2 THEN repeat('y', 200000000) ELSE 'a' END AS v FROM items ORDER BY id" },
      ctx,
    );
    clearInterval(sampler);
    console.log(`[issue 7] postgresql: 200 MB values, cap 1 MB: RSS grew ${((peak - base) / 1e6).toFixed(1)} MB`);
    expect(r.structuredContent).toEqual({ rows: [], rowCount: 0, truncated: true });
    // Rows before the oversized one are kept.
    expect(small.structuredContent).toEqual({ rows: [{ id: 1, v: 'a' }], rowCount: 1, truncated: true });
    expect((peak - base) / 1e6).toBeLessThan(150);
  }, 60_000);

  test("issue 7: errors that are not the server's never show their text", async () => {
    const errCtx = { config: p.config, credential: p.credential, connectTimeoutMs: 1000 };
    for (const err of [
      new RangeError('Invalid string length'),
      new TypeError("Cannot read properties of null (reading 'write')"),
      Object.assign(new Error('Cannot create a string longer than 0x1fffffe8 characters'), { code: 'ERR_STRING_TOO_LONG' }),
    ]) {
      const t = pgCallErrorText(err, errCtx);
      expect(t).toBe(INTERNAL_FAILURE_TEXT);
      expect(t).not.toContain(err.message);
    }
  });

  test('INSERT ... RETURNING gives the returned rows and the affected count', async () => {
    const notes = (await postgresqlDriver.introspect(id, p.config, p.credential)).find((t) => t.target.table === 'notes')!;
    const ctx = { connectorId: id, config: p.config, credential: p.credential, allowWrite: true, allowDdl: false, readOnly: false, limits };
    const r = await postgresqlDriver.execute(notes, { sql: "INSERT INTO notes (id, body) VALUES (10, 'a'), (11, 'b') RETURNING id" }, ctx);
    expect(r.structuredContent).toEqual({ rows: [{ id: 10 }, { id: 11 }], rowCount: 2, truncated: false });
  });

  test('query parameters get a clear message', async () => {
    const items = (await postgresqlDriver.introspect(id, p.config, p.credential)).find((t) => t.target.table === 'items')!;
    const ctx = { connectorId: id, config: p.config, credential: p.credential, allowWrite: false, allowDdl: false, readOnly: false, limits };
    const r = await postgresqlDriver.execute(items, { sql: 'SELECT * FROM items WHERE id = $1' }, ctx);
    expect(r.isError).toBe(true);
  });
});
