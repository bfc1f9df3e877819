/**
 * Issue 38 item 7b (docs/decisions/0297): the row cap keeps the statement's own order. On MariaDB the old wrapper
 * `SELECT * FROM (<statement>) AS q LIMIT n` dropped the statement's ORDER BY (`ORDER BY id DESC` came back ascending).
 * Live on MariaDB and PostgreSQL: every read form with an ORDER BY returns its rows in that order when the cap cuts
 * them, with the statement's own LIMIT larger and smaller than the cap, through a UNION, a self-join (whose duplicate
 * column names a derived table refused on MariaDB), a saved statement and a tool policy's rewrite.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { MYSQL_URL, PG_URL, serviceAvailable } from '../support/services.ts';
import { mysqlDriver } from '../../src/connectors/mysql/driver.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import type {
  ConnectorDriver,
  DatabaseConfig,
  ExecutionContext,
  SqlTarget,
  SqlToolSpec,
  ToolResult,
  ToolPolicy,
  SavedParam,
} from '../../src/connectors/types.ts';
import { policyKey } from '../../src/connectors/shared/policy.ts';

const ROWS = 40;
const CAP = 5;
type Structured = { rows: Record<string, unknown>[]; truncated: boolean };

interface Side {
  driver: ConnectorDriver<DatabaseConfig, SqlTarget>;
  config: DatabaseConfig;
  credential: string | null;
  schema: string;
  drop(): Promise<void>;
}

const table = `h2_roworder_${randomBytes(4).toString('hex')}`;

async function mariadb(): Promise<Side> {
  const url = new URL(MYSQL_URL);
  const options = { host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username) || 'root', multipleStatements: true };
  const admin = await mysql.createConnection({ ...options, database: 'test' });
  const values = Array.from({ length: ROWS }, (_, i) => `(${i + 1}, 'n${i + 1}', ${(i + 1) % 2})`).join(',');
  await admin.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, name VARCHAR(20), odd INT); INSERT INTO ${table} VALUES ${values}`);
  return {
    driver: mysqlDriver as unknown as Side['driver'],
    config: { host: options.host, port: options.port, database: 'test', user: options.user, schemas: ['test'] },
    credential: decodeURIComponent(url.password) || null,
    schema: 'test',
    drop: async () => {
      await admin.query(`DROP TABLE IF EXISTS ${table}`);
      await admin.end();
    },
  };
}

async function postgresql(): Promise<Side> {
  const url = new URL(PG_URL);
  url.pathname = '/test';
  const db = postgres(url.toString(), { max: 1, onnotice: () => undefined });
  await db.unsafe(`create table public.${table} (id int primary key, name text, odd int);
    insert into public.${table} select g, 'n' || g, g % 2 from generate_series(1, ${ROWS}) g`);
  return {
    driver: postgresqlDriver as unknown as Side['driver'],
    config: { host: url.hostname, port: Number(url.port || 5432), database: 'test', user: decodeURIComponent(url.username) || 'postgres', schemas: ['public'] },
    credential: decodeURIComponent(url.password) || null,
    schema: 'public',
    drop: async () => {
      await db.unsafe(`drop table if exists public.${table}`);
      await db.end();
    },
  };
}

const descending = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from - i);

for (const [type, make, service] of [
  ['mariadb', mariadb, 'mysql'],
  ['postgresql', postgresql, 'postgres'],
] as const) {
  const available = await serviceAvailable(service);
  describe.skipIf(!available)(`row cap keeps the statement's order: ${type}`, () => {
    let side: Side;
    let tool: SqlToolSpec;
    const connectorId = `h2-roworder-${type}-${randomBytes(3).toString('hex')}`;
    const ctx = (o: Partial<ExecutionContext> = {}): ExecutionContext => ({
      connectorId,
      config: side.config,
      credential: side.credential,
      allowWrite: false,
      allowDdl: false,
      readOnly: false,
      limits: { statementTimeoutMs: 5000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000 },
      ...o,
    });
    const ids = async (args: Record<string, unknown>, c = ctx(), t = tool): Promise<{ ids: unknown[]; truncated: boolean }> => {
      const r: ToolResult = await side.driver.execute(t, args, c);
      if (r.isError) throw new Error(`call failed: ${JSON.stringify(r.content)}`);
      const s = r.structuredContent as Structured;
      return { ids: s.rows.map((row) => Number(row.id)), truncated: s.truncated };
    };

    beforeAll(async () => {
      side = await make();
      const tools = (await side.driver.introspect(connectorId, side.config, side.credential)) as SqlToolSpec[];
      const found = tools.find((t) => t.target.table === table);
      if (!found) throw new Error(`no tool for ${table}`);
      tool = found;
    });
    afterAll(async () => {
      await side?.driver.close(connectorId);
      await side?.drop();
    });

    test('ORDER BY id DESC cut by the cap comes back descending, and says it was cut', async () => {
      expect(await ids({ sql: `SELECT id, name FROM ${table} ORDER BY id DESC`, limit: CAP })).toEqual({ ids: descending(ROWS, CAP), truncated: true });
      // Two keys, one descending.
      expect((await ids({ sql: `SELECT id FROM ${table} ORDER BY odd DESC, id DESC`, limit: 3 })).ids).toEqual([39, 37, 35]);
    });

    test("the statement's own LIMIT, larger or smaller than the cap, with OFFSET", async () => {
      expect(await ids({ sql: `SELECT id FROM ${table} ORDER BY id DESC LIMIT 30`, limit: CAP })).toEqual({ ids: descending(ROWS, CAP), truncated: true });
      expect(await ids({ sql: `SELECT id FROM ${table} ORDER BY id DESC LIMIT 3`, limit: CAP })).toEqual({ ids: descending(ROWS, 3), truncated: false });
      expect((await ids({ sql: `SELECT id FROM ${table} ORDER BY id DESC LIMIT 20 OFFSET 10`, limit: CAP })).ids).toEqual(descending(30, CAP));
    });

    test('a UNION ordered as a whole, a CTE and a trailing comment keep their order', async () => {
      const union = `SELECT id FROM ${table} WHERE odd = 1 UNION ALL SELECT id FROM ${table} WHERE odd = 0 ORDER BY id DESC`;
      expect((await ids({ sql: union, limit: CAP })).ids).toEqual(descending(ROWS, CAP));
      const cte = `WITH t AS (SELECT id FROM ${table}) SELECT id FROM t ORDER BY id DESC -- newest first`;
      expect((await ids({ sql: cte, limit: CAP })).ids).toEqual(descending(ROWS, CAP));
    });

    test('a self-join whose columns share names answers in order', async () => {
      const sql = `SELECT * FROM ${table} a JOIN ${table} b ON b.id = a.id ORDER BY a.id DESC`;
      expect((await ids({ sql, limit: CAP })).ids).toEqual(descending(ROWS, CAP));
    });

    test('under a row-filter policy (the rewrite) the order holds', async () => {
      const policy: ToolPolicy = { hidden_columns: ['name'], masked_columns: [], row_filter: 'odd = 1' };
      const c = ctx({ policy: { policy, key: policyKey(policy), maskKey: null, caller: {} } });
      expect(await ids({ sql: `SELECT id FROM ${table} ORDER BY id DESC`, limit: CAP }, c)).toEqual({ ids: [39, 37, 35, 33, 31], truncated: true });
    });

    test('a saved statement with ORDER BY keeps it when the gateway cap cuts it', async () => {
      const statement = `SELECT id FROM ${table} WHERE id <= :top ORDER BY id DESC`;
      const parameters: SavedParam[] = [{ name: 'top', type: 'integer', description: 'highest id' }];
      const check = await side.driver.checkSaved!(statement, parameters, [tool.target], false);
      if (!check.ok || !check.template) throw new Error(`not saved: ${JSON.stringify(check)}`);
      const saved: SqlToolSpec = { ...tool, target: { ...check.target, saved: { ...check.template, statement, parameters, version: 1 } } };
      const c = ctx({ limits: { ...ctx().limits, maxRows: CAP } });
      expect(await ids({ top: 30 }, c, saved)).toEqual({ ids: descending(30, CAP), truncated: true });
    });
  });
}
