/**
 * PostgreSQL resolution verdicts shared by statement shape (issue 27): texts that differ only in literal values are
 * analysed once, against a real server; a literal whose kind or range changes what the server resolves is analysed
 * again (and refused when it reaches a user object); a literal the server looks up as a name (`reg*`) keeps the
 * verdict per text; and a function created after a verdict is seen by every text of the shape once the TTL expires.
 *
 * Proof that a leaking function did not run, as in postgresql-resolution.test.ts: each takes a session advisory lock
 * (LOCK_KEY) before returning another table's secret.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { PG_URL, serviceAvailable } from '../support/services.ts';
import { postgresqlDriver, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { pgResolutionAnalyses } from '../../src/connectors/postgresql/resolution.ts';
import type { ToolResult, SqlToolSpec } from '../../src/connectors/types.ts';
import type { PgExecutionContext as ExecutionContext } from '../../src/connectors/postgresql/execute.ts';

const available = await serviceAvailable('postgres');
const SECRET = 'TOPSECRET-27ab';
const LOCK_KEY = 7_427_027;
const LIMITS = { statementTimeoutMs: 2000, lockTimeoutMs: 1000 };

// The tool schema `shp` comes first on the call's search_path, so its operators beat pg_catalog's of the same
// signature: `int4 = int8` and `int4 = numeric` leak; `int4 = int4` is the built-in one.
const FIXTURES = `
  create table public.secrets (s text);
  insert into public.secrets values ('${SECRET}');
  create schema shp;
  create table shp.items (id int primary key, name text, r regclass);
  insert into shp.items values (1, 'apple', 'shp.items'), (2, 'pear', 'shp.items');
  create table shp.other (id int);
  create function shp.mark() returns void language plpgsql as $$ begin perform pg_catalog.pg_advisory_lock(${LOCK_KEY}); end $$;
  create function shp.eq8(int, bigint) returns boolean language plpgsql as $$ begin perform shp.mark(); raise exception '%', (select s from public.secrets limit 1); end $$;
  create operator shp.= (leftarg = int, rightarg = bigint, function = shp.eq8);
  create function shp.eqn(int, numeric) returns boolean language plpgsql as $$ begin perform shp.mark(); raise exception '%', (select s from public.secrets limit 1); end $$;
  create operator shp.= (leftarg = int, rightarg = numeric, function = shp.eqn);
`;

let server: postgres.Sql;
let db: postgres.Sql;
let dbName: string;
let items: SqlToolSpec;
const connectorId = `shape-${randomBytes(4).toString('hex')}`;
let config: { host: string; port: number; database: string; user: string; schemas: string[] };

const ctx = (ttl = 60_000): ExecutionContext => ({
  connectorId,
  config,
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  limits: { ...LIMITS, maxRows: 100, maxResultBytes: 1_000_000, resolutionCacheTtlMs: ttl },
});
const text = (r: ToolResult): string => r.content.map((c) => c.text).join('\n');
const run = (sql: string, ttl?: number) => postgresqlDriver.execute(items, { sql }, ctx(ttl));
const analyses = () => postgresqlPoolFor(connectorId, config, null, async (pool) => pgResolutionAnalyses(pool), LIMITS);

async function marked(): Promise<number> {
  const rows = await db.unsafe(`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${LOCK_KEY}`);
  return Number(rows[0]?.n);
}

async function expectRows(sql: string, ttl?: number): Promise<void> {
  const r = await run(sql, ttl);
  expect(r.isError, `${sql}: ${text(r)}`).toBeFalsy();
}

async function expectRefused(sql: string, ttl?: number): Promise<string> {
  const r = await run(sql, ttl);
  const out = text(r) + JSON.stringify(r.structuredContent ?? null);
  expect(out).not.toContain(SECRET);
  expect(r.isError, `${sql} -> ${out}`).toBe(true);
  expect(await marked(), `a leaking function ran for: ${sql}`).toBe(0);
  return text(r);
}

describe.skipIf(!available)('postgresql: resolution verdicts by statement shape (issue 27)', () => {
  beforeAll(async () => {
    dbName = `tg_shape_${randomBytes(5).toString('hex')}`;
    server = postgres(PG_URL, { max: 1, onnotice: () => undefined });
    await server.unsafe(`create database ${dbName}`);
    const url = new URL(PG_URL);
    url.pathname = `/${dbName}`;
    db = postgres(url.toString(), { max: 1, onnotice: () => undefined });
    await db.unsafe(FIXTURES);
    config = { host: url.hostname, port: Number(url.port || 5432), database: dbName, user: decodeURIComponent(url.username) || 'postgres', schemas: ['shp'] };
    await postgresqlDriver.validate(connectorId, config, null);
    const tools = await postgresqlDriver.introspect(connectorId, config, null);
    items = tools.find((t) => t.target.table === 'items')!;
  });
  afterAll(async () => {
    await postgresqlDriver.closeAll();
    await db?.end();
    await server?.unsafe(`drop database if exists ${dbName} with (force)`);
    await server?.end();
  });

  test('the leaking operators really leak when used directly (so the assertions below can fail)', async () => {
    await expect(db.unsafe('set search_path = shp, pg_catalog; select id from shp.items where id = 5000000000')).rejects.toThrow(SECRET);
    expect(await marked()).toBe(1);
    await db.unsafe('select pg_advisory_unlock_all(); reset search_path');
    expect(await marked()).toBe(0);
  });

  test('texts differing only in literal values are analysed once', async () => {
    await expectRows('SELECT id, name FROM items WHERE id > 0 AND name <> $$x$$ ORDER BY id LIMIT 5');
    const before = await analyses();
    for (let i = 1; i <= 25; i++) await expectRows(`SELECT id, name FROM items WHERE id > ${i} AND name <> 'v${i}' ORDER BY id LIMIT ${i + 5}`);
    expect(await analyses()).toBe(before);
    // Another statement is another shape.
    await expectRows('SELECT name FROM items WHERE id > 1');
    expect(await analyses()).toBe(before + 1);
  });

  test('a literal of another range or kind is analysed again, and refused when it reaches a user operator', async () => {
    await expectRows('SELECT id FROM items WHERE id = 1');
    const before = await analyses();
    await expectRows('SELECT id FROM items WHERE id = 2');
    await expectRows('SELECT id FROM items WHERE id = -2147483648'); // int4 after the grammar folds the minus
    expect(await analyses()).toBe(before);
    expect(await expectRefused('SELECT id FROM items WHERE id = 5000000000')).toContain('=(integer,bigint)');
    expect(await expectRefused('SELECT id FROM items WHERE id = -2147483649')).toContain('=(integer,bigint)');
    expect(await expectRefused('SELECT id FROM items WHERE id = 1.5')).toContain('=(integer,numeric)');
    // The refusals are verdicts of their own shapes: the int4 shape still answers rows, from the cache.
    const mid = await analyses();
    await expectRows('SELECT id FROM items WHERE id = 3');
    expect(await analyses()).toBe(mid);
  });

  test('a literal the server looks up as a name (regclass) keeps its verdict per text', async () => {
    // COALESCE gives the string literal the column's type, regclass: the server looks the name up while analysing.
    await expectRows("SELECT coalesce(r, 'shp.items') AS c FROM items");
    expect(await expectRefused("SELECT coalesce(r, 'public.secrets') AS c FROM items")).toContain('relation public.secrets');
    await expectRefused("SELECT coalesce(r, 'shp.other') AS c FROM items");
    const before = await analyses();
    await expectRows("SELECT coalesce(r, 'shp.items') AS c FROM items");
    expect(await analyses()).toBe(before); // its own text, from the cache
  });

  test('a user operator created after a verdict is seen by another text of the shape once the TTL expires', async () => {
    await expectRows('SELECT name FROM items WHERE id < 10', 300);
    await db.unsafe(`create function shp.lt4(int, int) returns boolean language plpgsql as $$ begin perform shp.mark(); raise exception '%', (select s from public.secrets limit 1); end $$;
      create operator shp.< (leftarg = int, rightarg = int, function = shp.lt4)`);
    try {
      await Bun.sleep(350);
      await expectRefused('SELECT name FROM items WHERE id < 11', 300);
    } finally {
      await db.unsafe('drop operator shp.< (int, int); drop function shp.lt4(int, int)');
    }
  });
});
