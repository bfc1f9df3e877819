/** The mysql connector on a real MySQL/MariaDB server: the shared conformance suite plus mysql-only checks. */
import { describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { MYSQL_URL, serviceAvailable } from '../support/services.ts';
import { configureMysqlPools, mysqlDriver, mysqlPoolFor } from '../../src/connectors/mysql/driver.ts';
import { runMysqlStatement } from '../../src/connectors/mysql/execute.ts';
import { getDriver } from '../../src/connectors/index.ts';
import { ConnectorError } from '../../src/connectors/types.ts';
import { runConnectorConformance } from './conformance.ts';
import { LONG_NAMES, type Provisioned } from './cases.ts';

const available = await serviceAvailable('mysql');
const url = new URL(MYSQL_URL);
const serverOptions: mysql.ConnectionOptions = {
  host: url.hostname,
  port: Number(url.port || 3306),
  user: decodeURIComponent(url.username) || 'root',
  password: decodeURIComponent(url.password),
  multipleStatements: true,
  timezone: 'Z',
};

const fixtures = (main: string, second: string) => `
  SET time_zone = '+00:00';
  CREATE TABLE ${main}.items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50), big BIGINT, amount DECIMAL(30,10),
    created_at TIMESTAMP(6) NULL, happened DATETIME(6), day DATE, payload BLOB, doc JSON, flags BIT(3), ratio DOUBLE);
  INSERT INTO ${main}.items (name, big, amount, created_at, happened, day, payload, doc, flags, ratio) VALUES
    ('first', 9223372036854775807, 12345678901234567890.0123456789, '2024-01-02 03:04:05.123456',
     '2024-01-02 03:04:05.123456', '2024-01-02', x'00ff10', '{"a": [1, 2], "b": "x"}', b'101', 1.5),
    ('second', 1, 1.5, NOW(), NOW(), CURDATE(), x'01', '[]', b'0', 2.5),
    ('third', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  CREATE TABLE ${main}.big (id INT PRIMARY KEY, filler VARCHAR(40));
  INSERT INTO ${main}.big SELECT seq, REPEAT('x', 20) FROM seq_1_to_3000;
  CREATE TABLE ${main}.secrets (id INT PRIMARY KEY, secret VARCHAR(50));
  INSERT INTO ${main}.secrets VALUES (1, 'the secret');
  CREATE TABLE ${main}.notes (id INT PRIMARY KEY, body VARCHAR(50));
  CREATE TABLE ${main}.\`Order Items\` (id INT);
  CREATE TABLE ${main}.${LONG_NAMES[0]} (id INT);
  CREATE TABLE ${main}.${LONG_NAMES[1]} (id INT);
  CREATE TABLE ${main}.orders (id INT); INSERT INTO ${main}.orders VALUES (1);
  CREATE TABLE ${second}.orders (id INT); INSERT INTO ${second}.orders VALUES (2);
  CREATE VIEW ${main}.items_view AS SELECT id, name FROM ${main}.items;
`;

async function provision(): Promise<Provisioned> {
  const main = `tg_conf_${randomBytes(5).toString('hex')}`;
  const second = `${main}_b`;
  const admin = await mysql.createConnection(serverOptions);
  await admin.query(`CREATE DATABASE ${main}; CREATE DATABASE ${second}`);
  // MySQL has no seq_ engine: build the 3000 rows another way there.
  const [v] = await admin.query('SELECT VERSION() AS v');
  const mariadb = /mariadb/i.test(String((v as { v: string }[])[0]?.v));
  const sql = mariadb
    ? fixtures(main, second)
    : fixtures(main, second).replace(
        /SELECT seq, REPEAT\('x', 20\) FROM seq_1_to_3000/,
        "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000) SELECT n, REPEAT('x', 20) FROM s",
      );
  await admin.query(`USE ${main}`);
  try {
    await admin.query(sql);
  } catch (err) {
    await admin.query(`DROP DATABASE ${main}; DROP DATABASE ${second}`);
    await admin.end();
    throw err;
  }
  const rows = async (q: string) => (await admin.query(q))[0] as Record<string, unknown>[];
  return {
    config: { host: serverOptions.host!, port: serverOptions.port, database: main, user: serverOptions.user!, schemas: [main, second] },
    credential: serverOptions.password || null,
    mainSchema: main,
    secondSchema: second,
    admin: rows,
    fingerprint: async () => {
      const sums = await rows(`CHECKSUM TABLE ${main}.items, ${main}.secrets EXTENDED`);
      const tables = await rows(
        `SELECT GROUP_CONCAT(TABLE_SCHEMA, '.', TABLE_NAME ORDER BY TABLE_SCHEMA, TABLE_NAME) AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('${main}', '${second}')`,
      );
      return JSON.stringify([sums, tables]);
    },
    lockTable: async (table) => {
      const holder = await mysql.createConnection({ ...serverOptions, database: main });
      await holder.query(`LOCK TABLES ${table} WRITE`);
      return async () => {
        await holder.query('UNLOCK TABLES');
        await holder.end();
      };
    },
    running: async (marker) => {
      const [r] = await admin.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE CONCAT('%', ?, '%')", [
        marker,
      ]);
      return Number((r as { n: unknown }[])[0]?.n);
    },
    teardown: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${main}; DROP DATABASE IF EXISTS ${second}`);
      await admin.end();
    },
  };
}

runConnectorConformance({
  type: 'mysql',
  driver: mysqlDriver,
  available,
  provision,
  configurePools: configureMysqlPools,
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
    flags: 5,
    ratio: 1.5,
  },
  securityCases: [
    { name: 'SET SESSION TRANSACTION READ WRITE, stacked', sql: 'SET SESSION TRANSACTION READ WRITE; DELETE FROM items', writesToo: true },
    { name: 'SET ... READ WRITE behind a comment', sql: '# hi\nSET SESSION TRANSACTION READ WRITE; DELETE FROM items', writesToo: true },
    { name: 'INTO OUTFILE', sql: "SELECT * FROM items INTO OUTFILE '{PWNED}'", writesToo: true },
    { name: 'INTO DUMPFILE', sql: "SELECT name FROM items LIMIT 1 INTO DUMPFILE '{PWNED}'", writesToo: true },
    { name: 'INTO a user variable', sql: 'SELECT name FROM items LIMIT 1 INTO @x', writesToo: true },
    { name: 'executable comment reading another table', sql: 'SELECT 1 /*!, (SELECT secret FROM secrets LIMIT 1) */ FROM items', writesToo: true },
    { name: 'executable comment holding a DROP', sql: '/*!50000 DROP TABLE items */', writesToo: true },
    { name: 'LOAD_FILE', sql: "SELECT LOAD_FILE('/etc/passwd') FROM items", writesToo: true },
    { name: 'SLEEP(600)', sql: 'SELECT SLEEP(600) FROM items', writesToo: true },
    { name: 'BENCHMARK', sql: "SELECT BENCHMARK(1000000000, MD5('x')) FROM items", writesToo: true },
    { name: 'GET_LOCK', sql: "SELECT GET_LOCK('toolgate', 10) FROM items", writesToo: true },
    { name: 'CREATE TABLE ... AS SELECT', sql: 'CREATE TABLE items_copy AS SELECT * FROM items', writesToo: true },
    { name: 'a CTE in front of a DELETE', sql: 'WITH d AS (SELECT id FROM items) DELETE FROM items WHERE id IN (SELECT id FROM d)' },
    { name: 'LOCK IN SHARE MODE', sql: 'SELECT * FROM items LOCK IN SHARE MODE' },
    { name: 'system schema', sql: 'SELECT * FROM mysql.user', writesToo: true },
    { name: 'optimizer hint setting a variable', sql: 'SELECT /*+ SET_VAR(max_execution_time=0) */ * FROM items', writesToo: true },
    // Issue 7, items 2-3 (the case-twin fixtures and every spelling are in mysql-names.test.ts).
    { name: 'system database, backquoted', sql: 'SELECT * FROM `mysql`.`innodb_index_stats`', writesToo: true },
    { name: 'performance_schema statement history', sql: 'SELECT SQL_TEXT FROM performance_schema.events_statements_history', writesToo: true },
    { name: 'sys schema view', sql: 'SELECT * FROM sys.schema_table_statistics', writesToo: true },
    { name: 'information_schema in mixed case', sql: 'SELECT * FROM Information_Schema.PROCESSLIST', writesToo: true },
    { name: 'CURRENT_USER without parentheses', sql: 'SELECT CURRENT_USER AS u FROM items', writesToo: true },
    { name: 'upper-case twin of the tool table', sql: 'SELECT * FROM ITEMS', writesToo: true },
  ],
  bypass: (p, connectorId, statement, o) =>
    mysqlPoolFor(connectorId, p.config, p.credential, (pool) => runMysqlStatement(pool, statement, { ...o, lockTimeoutMs: 500, database: p.mainSchema })).then(
      (r) => r.rows,
    ),
  sleep: { sql: 'SELECT SLEEP(600)', marker: 'SLEEP(600)' },
  sessionSnapshot: [
    // Per-statement counters and clocks change by themselves; everything else a session can carry is compared.
    "SHOW SESSION VARIABLES WHERE Variable_name NOT IN ('timestamp', 'rand_seed1', 'rand_seed2', 'warning_count', 'error_count', 'last_insert_id', 'insert_id', 'identity', 'pseudo_thread_id', 'last_gtid', 'gtid_seq_no')",
    "SELECT CONNECTION_ID() AS id, DATABASE() AS db, CURRENT_USER() AS cu, CURRENT_ROLE() AS role, @tg_x AS x, @tg_y AS y, IS_USED_LOCK('tg_lock') IS NOT NULL AS locked",
    'EXECUTE tg_leak',
    'SELECT COUNT(*) AS n FROM tg_leak_tmp',
  ],
  sessionChanges: [
    'SET @tg_x = 1',
    'SELECT @tg_y := 2',
    "SET SESSION sql_mode = 'ANSI_QUOTES'",
    'SET SESSION tx_read_only = 0',
    'SET SESSION max_statement_time = 0',
    "SET SESSION time_zone = '+05:00'",
    "SELECT GET_LOCK('tg_lock', 0)",
    "PREPARE tg_leak FROM 'SELECT 1'",
    'CREATE TEMPORARY TABLE tg_leak_tmp (x int)',
    'USE mysql',
  ],
  bigRowsSql: "SELECT REPEAT('x', 500000) AS v FROM big",
});

describe.skipIf(!available)('mysql specifics', () => {
  test('registered through src/connectors/index.ts, its implementation loaded on first use (decision 0192)', async () => {
    const registered = getDriver('mysql')!;
    expect(registered.type).toBe('mysql');
    expect(registered.configSchema).toBe(mysqlDriver.configSchema);
    // The registered entry delegates to driver.ts: the same validate, with the same refusal.
    const config = { host: serverOptions.host!, port: serverOptions.port, database: 'tg_no_such_db', user: serverOptions.user! };
    const err = await registered.validate('my-lazy', config, serverOptions.password || null).catch((e: unknown) => e);
    expect((err as ConnectorError).code).toBe('invalid_config');
  });

  test('a wrong password fails validate with auth_failed, the password not in the message', async () => {
    const secret = 'Wr0ng-Passw0rd-xyz';
    const config = { host: serverOptions.host!, port: serverOptions.port, database: 'test', user: serverOptions.user! };
    const err = await mysqlDriver.validate('my-auth', config, secret).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorError);
    expect((err as ConnectorError).code).toBe('auth_failed');
    expect((err as ConnectorError).message).toBe(`authentication failed for user ${config.user}`);
  });

  test('an unknown database fails validate with invalid_config', async () => {
    const config = { host: serverOptions.host!, port: serverOptions.port, database: 'tg_no_such_db', user: serverOptions.user! };
    const err = await mysqlDriver.validate('my-db', config, serverOptions.password || null).catch((e: unknown) => e);
    expect((err as ConnectorError).code).toBe('invalid_config');
  });
});
