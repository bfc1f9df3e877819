// Live integration suites for mongodb, mssql and oracle: they run only against a server named by
// TOOLGATE_TEST_MONGODB_URL / TOOLGATE_TEST_MSSQL_URL / TOOLGATE_TEST_ORACLE_URL (an account that may create and
// drop a scratch collection/table), and otherwise print why they are skipped. No such server can be installed on
// our build machines, so these suites are the one exception to "skipped suites fail in CI" (docs/connectors.md).
//
//   TOOLGATE_TEST_MONGODB_URL=mongodb://user:pw@host:27017/scratchdb?authSource=admin
//   TOOLGATE_TEST_MSSQL_URL=mssql://user:pw@host:1433/scratchdb
//   TOOLGATE_TEST_ORACLE_URL=oracle://user:pw@host:1521/FREEPDB1
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import sql from 'mssql';
import oracledb from 'oracledb';
import { getDriver } from '../../src/connectors/index.ts';
import type { DatabaseConfig, ExecutionContext, ToolResult, ToolSpec } from '../../src/connectors/types.ts';
import { notVerifiableHere, verifies } from '../requirements.ts';

const URLS = {
  mongodb: process.env.TOOLGATE_TEST_MONGODB_URL,
  mssql: process.env.TOOLGATE_TEST_MSSQL_URL,
  oracle: process.env.TOOLGATE_TEST_ORACLE_URL,
};
for (const [type, url] of Object.entries(URLS)) {
  if (!url)
    console.log(
      `[skip] ${type} live suite: TOOLGATE_TEST_${type.toUpperCase()}_URL is not set (no ${type} server on this machine); the guard and REST suites still run`,
    );
}
if (!URLS.mongodb && !URLS.mssql && !URLS.oracle) {
  notVerifiableHere('no MongoDB, SQL Server or Oracle server on this machine (set TOOLGATE_TEST_<TYPE>_URL)', 'CONN-NEW-TYPES-LIVE');
}

const suffix = randomBytes(4).toString('hex');
const TABLE = `tg_live_${suffix}`;

interface Parsed {
  config: DatabaseConfig;
  credential: string;
  url: URL;
}

function parse(raw: string, defaultPort: number): Parsed {
  const url = new URL(raw);
  return {
    url,
    credential: decodeURIComponent(url.password),
    config: {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || defaultPort),
      database: decodeURIComponent(url.pathname.slice(1)),
      user: decodeURIComponent(url.username),
      ...(url.searchParams.get('authSource') ? { auth_source: url.searchParams.get('authSource')! } : {}),
    },
  };
}

const ctx = (connectorId: string, p: Parsed, limits: Partial<ExecutionContext['limits']> = {}): ExecutionContext => ({
  connectorId,
  config: p.config,
  credential: p.credential,
  allowWrite: true, // even so: these types are read-only through Toolgate
  allowDdl: true,
  readOnly: false,
  limits: { statementTimeoutMs: 2000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000, ...limits },
});

const text = (r: ToolResult): string => r.content.map((c) => ('text' in c ? c.text : '')).join('\n');
const rows = (r: ToolResult): Record<string, unknown>[] => (r.structuredContent as { rows: Record<string, unknown>[] }).rows;
const truncated = (r: ToolResult): boolean => (r.structuredContent as { truncated: boolean }).truncated;

describe.skipIf(!URLS.mongodb)('mongodb connector against a live server', () => {
  const driver = getDriver('mongodb')!;
  const id = `live-mongo-${suffix}`;
  let p: Parsed;
  let admin: MongoClient;
  let tools: ToolSpec[];
  beforeAll(async () => {
    p = parse(URLS.mongodb!, 27017);
    admin = new MongoClient(URLS.mongodb!);
    await admin.connect();
    const coll = admin.db(p.config.database).collection(TABLE);
    await coll.insertMany(Array.from({ length: 3000 }, (_, i) => ({ n: i, name: `item ${i}`, at: new Date(Date.UTC(2024, 0, 1, 0, 0, i % 60)) })));
    await admin.db(p.config.database).collection(`${TABLE}_secrets`).insertOne({ secret: 'nope' });
    await driver.validate(id, p.config, p.credential);
    tools = await driver.introspect(id, p.config, p.credential);
  });
  afterAll(async () => {
    await driver.closeAll();
    await admin
      ?.db(p.config.database)
      .collection(TABLE)
      .drop()
      .catch(() => undefined);
    await admin
      ?.db(p.config.database)
      .collection(`${TABLE}_secrets`)
      .drop()
      .catch(() => undefined);
    await admin?.close();
  });
  const tool = () => tools.find((t) => t.name === `query_mongodb_${TABLE}`)!;

  test('one tool per collection; find and aggregate within the caps; writes and other collections refused; maxTimeMS cancels', async () => {
    verifies('CONN-NEW-TYPES-LIVE');
    expect(tool()).toBeDefined();
    const found = await driver.execute(tool(), { filter: { n: { $lt: 3 } }, projection: { _id: 0, n: 1 }, sort: { n: 1 } }, ctx(id, p));
    expect(rows(found)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    const capped = await driver.execute(tool(), { limit: 10 }, ctx(id, p));
    expect(rows(capped).length).toBe(10);
    expect(truncated(capped)).toBe(true);
    const agg = await driver.execute(tool(), { pipeline: [{ $group: { _id: null, n: { $sum: 1 } } }, { $project: { _id: 0, n: 1 } }] }, ctx(id, p));
    expect(rows(agg)).toEqual([{ n: 3000 }]);
    const out = await driver.execute(tool(), { pipeline: [{ $out: 'stolen' }] }, ctx(id, p));
    expect(out.isError).toBe(true);
    const other = await driver.execute(tool(), { pipeline: [{ $unionWith: `${TABLE}_secrets` }] }, ctx(id, p));
    expect(other.isError).toBe(true);
    const slow = await driver.execute(
      tool(),
      { pipeline: [{ $lookup: { from: TABLE, pipeline: [{ $lookup: { from: TABLE, pipeline: [], as: 'b' } }], as: 'a' } }, { $count: 'n' }] },
      ctx(id, p, { statementTimeoutMs: 200 }),
    );
    expect(slow.isError).toBe(true);
    expect(text(slow)).toContain('statement timeout');
  });
});

describe.skipIf(!URLS.mssql)('mssql connector against a live server', () => {
  const driver = getDriver('mssql')!;
  const id = `live-mssql-${suffix}`;
  let p: Parsed;
  let admin: sql.ConnectionPool;
  let tools: ToolSpec[];
  beforeAll(async () => {
    p = parse(URLS.mssql!, 1433);
    admin = new sql.ConnectionPool({
      server: p.config.host,
      port: p.config.port,
      user: p.config.user,
      password: p.credential,
      database: p.config.database,
      options: { encrypt: false, trustServerCertificate: true },
    });
    await admin.connect();
    await admin.request().batch(`CREATE TABLE dbo.${TABLE} (id int PRIMARY KEY, name nvarchar(50), big bigint, at datetime2);
      WITH n AS (SELECT TOP 3000 ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS i FROM sys.all_objects a CROSS JOIN sys.all_objects b)
      INSERT INTO dbo.${TABLE} SELECT i, CONCAT('item ', i), 9007199254740993, '2024-01-01T00:00:00' FROM n;`);
    await driver.validate(id, p.config, p.credential);
    tools = await driver.introspect(id, p.config, p.credential);
  });
  afterAll(async () => {
    await driver.closeAll();
    await admin
      ?.request()
      .batch(`DROP TABLE IF EXISTS dbo.${TABLE}`)
      .catch(() => undefined);
    await admin?.close();
  });
  const tool = () => tools.find((t) => t.name === `query_mssql_${TABLE}`)!;

  test('one tool per table; reads within the caps; writes refused; the statement timeout cancels', async () => {
    verifies('CONN-NEW-TYPES-LIVE');
    expect(tool()).toBeDefined();
    const r = await driver.execute(tool(), { sql: `SELECT TOP 2 id, big, at FROM dbo.${TABLE} ORDER BY id` }, ctx(id, p));
    expect(rows(r)).toEqual([
      { id: 1, big: '9007199254740993', at: '2024-01-01T00:00:00.000' },
      { id: 2, big: '9007199254740993', at: '2024-01-01T00:00:00.000' },
    ]);
    const capped = await driver.execute(tool(), { sql: `SELECT id FROM dbo.${TABLE}`, limit: 10 }, ctx(id, p));
    expect(rows(capped).length).toBe(10);
    expect(truncated(capped)).toBe(true);
    const write = await driver.execute(tool(), { sql: `DELETE FROM dbo.${TABLE}` }, ctx(id, p));
    expect(write.isError).toBe(true);
    const slow = await driver.execute(
      tool(),
      { sql: `SELECT COUNT_BIG(*) AS n FROM dbo.${TABLE} a CROSS JOIN dbo.${TABLE} b CROSS JOIN dbo.${TABLE} c` },
      ctx(id, p, { statementTimeoutMs: 300 }),
    );
    expect(slow.isError).toBe(true);
    expect(text(slow)).toContain('statement timeout');
    const count = await admin.request().query(`SELECT COUNT(*) AS n FROM dbo.${TABLE}`);
    expect(count.recordset[0].n).toBe(3000);
  });
});

describe.skipIf(!URLS.oracle)('oracle connector against a live server', () => {
  const driver = getDriver('oracle')!;
  const id = `live-oracle-${suffix}`;
  const T = TABLE.toUpperCase();
  let p: Parsed;
  let admin: oracledb.Connection;
  let tools: ToolSpec[];
  beforeAll(async () => {
    p = parse(URLS.oracle!, 1521);
    admin = await oracledb.getConnection({
      user: p.config.user,
      password: p.credential,
      connectString: `${p.config.host}:${p.config.port}/${p.config.database}`,
    });
    await admin.execute(`CREATE TABLE ${T} (id NUMBER PRIMARY KEY, name VARCHAR2(50), at TIMESTAMP)`);
    await admin.execute(`INSERT INTO ${T} SELECT LEVEL, 'item ' || LEVEL, TIMESTAMP '2024-01-01 00:00:00' FROM dual CONNECT BY LEVEL <= 3000`);
    await admin.commit();
    await driver.validate(id, p.config, p.credential);
    tools = await driver.introspect(id, p.config, p.credential);
  });
  afterAll(async () => {
    await driver.closeAll();
    await admin?.execute(`DROP TABLE ${T} PURGE`).catch(() => undefined);
    await admin?.close();
  });
  const tool = () => tools.find((t) => t.name === `query_oracle_${TABLE}`)!;

  test('one tool per table; reads within the caps; writes refused; callTimeout cancels', async () => {
    verifies('CONN-NEW-TYPES-LIVE');
    expect(tool()).toBeDefined();
    const r = await driver.execute(tool(), { sql: `SELECT id, at FROM ${T} WHERE id <= 2 ORDER BY id` }, ctx(id, p));
    expect(rows(r)).toEqual([
      { ID: 1, AT: '2024-01-01T00:00:00.000000' },
      { ID: 2, AT: '2024-01-01T00:00:00.000000' },
    ]);
    const capped = await driver.execute(tool(), { sql: `SELECT id FROM ${T}`, limit: 10 }, ctx(id, p));
    expect(rows(capped).length).toBe(10);
    expect(truncated(capped)).toBe(true);
    const write = await driver.execute(tool(), { sql: `DELETE FROM ${T}` }, ctx(id, p));
    expect(write.isError).toBe(true);
    const slow = await driver.execute(tool(), { sql: `SELECT COUNT(*) FROM ${T} a, ${T} b, ${T} c` }, ctx(id, p, { statementTimeoutMs: 300 }));
    expect(slow.isError).toBe(true);
    expect(text(slow)).toContain('statement timeout');
  });
});
