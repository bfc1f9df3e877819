/**
 * Names resolve as the real server resolves them (issue 7, items 2 and 3), on the MariaDB here, where
 * lower_case_table_names is 0 (Linux): `accounts`, `ACCOUNTS` and `Accounts` are three tables, and a database and
 * its upper-case twin are two databases. Each twin holds a distinct secret row; a tool must never return one,
 * through any spelling. Modes 1 and 2 cannot be switched on at run time (the mode is fixed when the server's data
 * directory is initialised): test/sqlguard/mysql-names.test.ts covers them at guard level.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { MYSQL_URL, serviceAvailable } from '../support/services.ts';
import { mysqlDriver, mysqlPoolFor } from '../../src/connectors/mysql/driver.ts';
import { runMysqlStatement } from '../../src/connectors/mysql/execute.ts';
import { GUARD_SQL_MODE } from '../../src/connectors/mysql/pool.ts';
import { ConnectorError, type DatabaseConfig, type ExecutionContext, type ToolResult, type SqlToolSpec } from '../../src/connectors/types.ts';
import { verifies } from '../requirements.ts';

const available = await serviceAvailable('mysql');
const url = new URL(MYSQL_URL);
const server: mysql.ConnectionOptions = {
  host: url.hostname,
  port: Number(url.port || 3306),
  user: decodeURIComponent(url.username) || 'root',
  password: decodeURIComponent(url.password),
  multipleStatements: true,
};

const db = `tg_names_${randomBytes(5).toString('hex')}`;
const TWIN_DB = db.toUpperCase();
const connectorId = `names-${randomBytes(4).toString('hex')}`;
const SECRETS = ['TWIN-TABLE-UPPER', 'TWIN-TABLE-MIXED', 'TWIN-DATABASE', 'OTHER-TABLE'];

let admin: mysql.Connection;
let mode = -1;
let config: DatabaseConfig;
let tools: SqlToolSpec[];

const ctx = (o: Partial<ExecutionContext> = {}): ExecutionContext => ({
  connectorId,
  config,
  credential: server.password || null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  ...o,
  limits: { statementTimeoutMs: 2000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000 },
});
const tool = (table: string): SqlToolSpec => {
  const t = tools.find((x) => x.target.table === table);
  if (!t) throw new Error(`no tool for ${table}`);
  return t;
};
const text = (r: ToolResult): string => r.content.map((c) => c.text).join('\n');
const rowsOf = (r: ToolResult) => (r.structuredContent as { rows: Record<string, unknown>[] }).rows;

/** No secret of another object appears in what the caller gets back, whether rows or an error. */
function expectNoSecret(r: ToolResult, sql: string): void {
  for (const s of SECRETS) if (text(r).includes(s)) throw new Error(`${JSON.stringify(sql)} returned ${s}: ${text(r)}`);
}

describe.skipIf(!available)('mysql: names resolve as the server resolves them (lower_case_table_names = 0)', () => {
  beforeAll(async () => {
    admin = await mysql.createConnection(server);
    const [r] = await admin.query('SELECT @@lower_case_table_names AS l');
    mode = Number((r as { l: unknown }[])[0]?.l);
    if (mode !== 0) return; // the twins below cannot exist; the guard-level suite covers modes 1 and 2
    await admin.query(`CREATE DATABASE \`${db}\`; CREATE DATABASE \`${TWIN_DB}\``);
    await admin.query(`
      CREATE TABLE \`${db}\`.accounts (id INT, v VARCHAR(40)); INSERT INTO \`${db}\`.accounts VALUES (1, 'own-row');
      CREATE TABLE \`${db}\`.ACCOUNTS (id INT, v VARCHAR(40), extra INT); INSERT INTO \`${db}\`.ACCOUNTS VALUES (2, 'TWIN-TABLE-UPPER', 0);
      CREATE TABLE \`${db}\`.Accounts (id INT, v VARCHAR(40)); INSERT INTO \`${db}\`.Accounts VALUES (3, 'TWIN-TABLE-MIXED');
      CREATE TABLE \`${db}\`.secrets (id INT, v VARCHAR(40)); INSERT INTO \`${db}\`.secrets VALUES (4, 'OTHER-TABLE');
      CREATE TABLE \`${TWIN_DB}\`.accounts (id INT, v VARCHAR(40)); INSERT INTO \`${TWIN_DB}\`.accounts VALUES (5, 'TWIN-DATABASE');
    `);
    // Stored functions that read another table: one named like a function MariaDB lacks (MySQL has it), one named
    // like a built-in both have (the built-in wins today; an older server without it would run this one).
    await admin.query(`
      CREATE FUNCTION \`${db}\`.regexp_like(a TEXT, b TEXT) RETURNS TEXT READS SQL DATA RETURN (SELECT v FROM \`${db}\`.secrets LIMIT 1);
      CREATE FUNCTION \`${db}\`.any_value(a TEXT) RETURNS TEXT READS SQL DATA RETURN (SELECT v FROM \`${db}\`.secrets LIMIT 1);
      CREATE FUNCTION \`${db}\`.lower(a TEXT) RETURNS TEXT READS SQL DATA RETURN (SELECT v FROM \`${db}\`.secrets LIMIT 1);
    `);
    config = { host: server.host!, port: server.port, database: db, user: server.user! };
    await mysqlDriver.validate(connectorId, config, server.password || null);
    tools = await mysqlDriver.introspect(connectorId, config, server.password || null);
  });
  afterAll(async () => {
    await mysqlDriver.closeAll();
    await admin?.query(`DROP DATABASE IF EXISTS \`${db}\`; DROP DATABASE IF EXISTS \`${TWIN_DB}\``);
    await admin?.end();
  });

  test('this server is case-sensitive, and the twins really hold other rows', async () => {
    expect(mode).toBe(0);
    const [up] = await admin.query(`SELECT v FROM \`${db}\`.ACCOUNTS`);
    expect(up as unknown).toEqual([{ v: 'TWIN-TABLE-UPPER' }]);
    const [twin] = await admin.query(`SELECT v FROM ${TWIN_DB}.accounts`);
    expect(twin as unknown).toEqual([{ v: 'TWIN-DATABASE' }]);
  });

  test('introspection: one tool per twin, columns not repeated, no table of the twin database, mode recorded', () => {
    const mine = tools.map((t) => `${t.name} ${t.target.schema}.${t.target.table}`).sort();
    expect(mine).toEqual(
      [
        `query_mysql_accounts ${db}.accounts`,
        `query_mysql_accounts_2 ${db}.ACCOUNTS`,
        `query_mysql_accounts_3 ${db}.Accounts`,
        `query_mysql_secrets ${db}.secrets`,
      ].sort(),
    );
    expect(tool('accounts').target.columns.map((c) => c.name)).toEqual(['id', 'v']);
    expect(tool('ACCOUNTS').target.columns.map((c) => c.name)).toEqual(['id', 'v', 'extra']);
    expect(tool('accounts').description).toContain('(columns: id int(11), v varchar(40))');
    for (const t of tools) expect(t.target.lowerCaseTableNames).toBe(0);
  });

  test("a tool never returns a case twin's rows, through any spelling", async () => {
    verifies('SQL-OTHER-TABLE');
    const twins = [
      'SELECT * FROM ACCOUNTS',
      'SELECT * FROM Accounts',
      'SELECT * FROM `ACCOUNTS`',
      'SELECT * FROM "ACCOUNTS"',
      `SELECT * FROM ${db}.ACCOUNTS`,
      `SELECT * FROM \`${db}\`.\`Accounts\``,
      `SELECT * FROM ${TWIN_DB}.accounts`,
      `SELECT * FROM \`${TWIN_DB}\`.\`accounts\``,
      `SELECT * FROM ${db.replace('tg', 'TG')}.accounts`,
      'SELECT * FROM accounts UNION ALL SELECT id, v FROM ACCOUNTS',
      'SELECT a.id, b.v FROM accounts a JOIN Accounts b ON 1 = 1',
      'SELECT (SELECT v FROM ACCOUNTS LIMIT 1) AS v FROM accounts',
      'SELECT * FROM accounts WHERE v IN (SELECT v FROM Accounts)',
      `SELECT * FROM accounts WHERE EXISTS (SELECT 1 FROM ${TWIN_DB}.accounts WHERE v LIKE 'TWIN%')`,
      'SELECT * FROM (SELECT id, v FROM ACCOUNTS) accounts',
      'SELECT * FROM accounts, LATERAL (SELECT v AS w FROM ACCOUNTS) x',
      'WITH c AS (SELECT id, v FROM ACCOUNTS) SELECT * FROM c',
      // MariaDB resolves this ACCOUNTS to the CTE, MySQL (mode 0) to the twin table: the guard refuses both readings.
      'WITH accounts AS (SELECT id, v FROM accounts) SELECT * FROM ACCOUNTS',
      'WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT id, v FROM accounts) SELECT * FROM a',
    ];
    for (const sql of twins) {
      for (const allowWrite of [false, true]) {
        const r = await mysqlDriver.execute(tool('accounts'), { sql }, ctx({ allowWrite }));
        expectNoSecret(r, sql);
        if (!r.isError) throw new Error(`${JSON.stringify(sql)} was not refused: ${text(r)}`);
      }
    }
  });

  test('writes never reach a twin', async () => {
    const before = JSON.stringify(await admin.query(`SELECT * FROM \`${db}\`.ACCOUNTS; SELECT * FROM \`${TWIN_DB}\`.accounts`).then((x) => x[0]));
    for (const sql of [
      "UPDATE ACCOUNTS SET v = 'x'",
      `DELETE FROM ${TWIN_DB}.accounts`,
      "INSERT INTO Accounts VALUES (9, 'x')",
      "UPDATE accounts a JOIN ACCOUNTS b ON 1 = 1 SET b.v = 'x'",
      'DELETE A FROM accounts a',
    ]) {
      const r = await mysqlDriver.execute(tool('accounts'), { sql }, ctx({ allowWrite: true }));
      expect({ sql, error: r.isError }).toEqual({ sql, error: true });
    }
    expect(JSON.stringify(await admin.query(`SELECT * FROM \`${db}\`.ACCOUNTS; SELECT * FROM \`${TWIN_DB}\`.accounts`).then((x) => x[0]))).toBe(before);
  });

  test("the exact spellings, and a CTE named like the table, read the tool's own rows", async () => {
    for (const sql of [
      'SELECT id, v FROM accounts',
      'SELECT id, v FROM `accounts`',
      `SELECT id, v FROM ${db}.accounts`,
      `SELECT id, v FROM \`${db}\` . \`accounts\``,
      'WITH Accounts AS (SELECT id, v FROM accounts) SELECT * FROM Accounts',
      'SELECT ACCOUNTS.id, ACCOUNTS.v FROM accounts AS ACCOUNTS',
    ]) {
      const r = await mysqlDriver.execute(tool('accounts'), { sql }, ctx());
      expect({ sql, rows: r.isError ? text(r) : rowsOf(r) }).toEqual({ sql, rows: [{ id: 1, v: 'own-row' }] });
    }
    // And each twin's own tool reads its own table, not the lower-case one.
    const upper = await mysqlDriver.execute(tool('ACCOUNTS'), { sql: 'SELECT v FROM ACCOUNTS' }, ctx());
    expect(rowsOf(upper)).toEqual([{ v: 'TWIN-TABLE-UPPER' }]);
    expect((await mysqlDriver.execute(tool('ACCOUNTS'), { sql: 'SELECT v FROM accounts' }, ctx())).isError).toBe(true);
  });

  test("catalogs are never readable through a table's tool, however spelled", async () => {
    verifies('SQL-OTHER-TABLE');
    for (const sql of [
      'SELECT * FROM information_schema.COLUMNS',
      'SELECT TABLE_NAME FROM INFORMATION_SCHEMA.tables',
      'SELECT * FROM Information_Schema.STATISTICS',
      'SELECT * FROM `information_schema`.`PROCESSLIST`',
      'SELECT * FROM "information_schema"."COLUMNS"',
      'SELECT * FROM information_schema.INNODB_SYS_TABLES',
      'SELECT * FROM mysql.user',
      'SELECT * FROM mysql.column_stats',
      'SELECT * FROM performance_schema.threads',
      'SELECT * FROM sys.version',
      "SELECT (SELECT GROUP_CONCAT(COLUMN_NAME) FROM information_schema.COLUMNS WHERE TABLE_NAME = 'secrets') AS c FROM accounts",
      'SELECT CURRENT_USER AS u FROM accounts',
      'SELECT USER() AS u FROM accounts',
      'SELECT VERSION() AS v FROM accounts',
      'SELECT @@version AS v',
    ]) {
      const r = await mysqlDriver.execute(tool('accounts'), { sql }, ctx({ allowWrite: true }));
      expect({ sql, error: r.isError }).toEqual({ sql, error: true });
      expect(text(r)).not.toContain('root@');
      expect(text(r)).not.toMatch(/MariaDB-|TABLE_CATALOG|authentication_string/);
    }
  });

  test("an allowed function name never resolves to a stored function of the tool's database", async () => {
    // On this server the unqualified call really runs the stored function: the guard must not admit the name.
    await admin.query(`USE \`${db}\``);
    const [leak] = await admin.query(`SELECT REGEXP_LIKE(v, 'x') AS r, ANY_VALUE(v) AS a FROM \`${db}\`.accounts`);
    expect(leak as unknown).toEqual([{ r: 'OTHER-TABLE', a: 'OTHER-TABLE' }]);
    expect(tool('accounts').target.storedFunctions).toEqual(['LOWER']);
    for (const sql of [
      "SELECT REGEXP_LIKE(v, 'x') AS r FROM accounts",
      'SELECT ANY_VALUE(v) AS a FROM accounts',
      'SELECT LOWER(v) AS l FROM accounts',
      'SELECT lower(v) FROM accounts',
    ]) {
      const r = await mysqlDriver.execute(tool('accounts'), { sql }, ctx());
      expectNoSecret(r, sql);
      expect({ sql, error: r.isError }).toEqual({ sql, error: true });
    }
    expect(rowsOf(await mysqlDriver.execute(tool('accounts'), { sql: 'SELECT UPPER(v) AS u FROM accounts' }, ctx()))).toEqual([{ u: 'OWN-ROW' }]);
  });

  test('validate compares database names as the server does and refuses system databases', async () => {
    const cred = server.password || null;
    const twinCase = { ...config, database: db.replace('tg_', 'Tg_') };
    expect(((await mysqlDriver.validate(`${connectorId}-c`, twinCase, cred).catch((e: unknown) => e)) as ConnectorError).code).toBe('invalid_config');
    for (const schemas of [['mysql'], ['information_schema'], ['INFORMATION_SCHEMA'], ['performance_schema'], ['sys'], [db, 'mysql']]) {
      const err = await mysqlDriver.validate(`${connectorId}-s`, { ...config, schemas }, cred).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectorError);
      expect((err as ConnectorError).message).toContain('is a system database');
    }
    // On this case-sensitive server `MYSQL` would be an ordinary database: it does not exist here.
    const err = await mysqlDriver.validate(`${connectorId}-u`, { ...config, schemas: ['MYSQL'] }, cred).catch((e: unknown) => e);
    expect((err as ConnectorError).message).toContain('does not exist');
  });

  test('every pooled session reads statements under the sql_mode the guard assumes (no ANSI_QUOTES, no ORACLE)', async () => {
    const rows = await mysqlPoolFor(connectorId, config, server.password || null, (p) =>
      runMysqlStatement(p, 'SELECT @@SESSION.sql_mode AS m', { readOnly: true, database: db, statementTimeoutMs: 2000, lockTimeoutMs: 500 }),
    );
    expect(rows.rows).toEqual([{ m: GUARD_SQL_MODE }]);
  });
});
