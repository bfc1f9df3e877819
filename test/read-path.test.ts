/**
 * Issue 42 item 1, one round trip per read (docs/decisions/0400, 0401): what a governed read sends to its database,
 * counted at the wire by a proxy between the driver and the real server (test/support/wire.ts), and the guarantees
 * that must hold with it. Live on PostgreSQL (db test) and MariaDB (db test), through the connector drivers, one
 * pooled connection per connector (so "the next call" is on the same session):
 *  - PostgreSQL: a read (free SQL or saved statement) is one statement and one round trip; MariaDB: a free-SQL read
 *    sends one command before its answer (its session was set up after the previous call), a saved-statement read
 *    one command in all (its session and prepared statement are kept);
 *  - the row cap and the byte cap cut exactly (a 1,000-row table), a long query is cancelled by the statement
 *    timeout, a write is refused on a read-only tool and SET attempts are refused;
 *  - nothing an agent's SQL does to the session reaches the next call on the same connection, also when the SQL
 *    gets past the guard (the runners called directly);
 *  - a MySQL write answers its affected-row count (it answered `[{}]`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { serviceAvailable } from './support/services.ts';
import { startWireCounter, type WireCounter, type WireCounts } from './support/wire.ts';
import { configureMysqlPools, mysqlDriver, mysqlPoolFor } from '../src/connectors/mysql/driver.ts';
import { runMysqlStatement } from '../src/connectors/mysql/execute.ts';
import { configurePostgresqlPools, postgresqlDriver, postgresqlPoolFor } from '../src/connectors/postgresql/driver.ts';
import { PG_DIALECT } from '../src/connectors/postgresql/execute.ts';
import { runPgFast, runPgStatement } from '../src/connectors/postgresql/run.ts';
import { rowsResult } from '../src/connectors/shared/result.ts';
import type { ConnectorDriver, DatabaseConfig, ExecutionContext, SavedParam, SqlTarget, SqlToolSpec, ToolResult } from '../src/connectors/types.ts';

const ROWS = 1000;
const LIMITS = { statementTimeoutMs: 1000, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 100_000 };
type Structured = { rows: Record<string, unknown>[]; rowCount: number; truncated: boolean };

// One connection per connector pool: every call of a connector runs on the same session.
configurePostgresqlPools({ max: 1 });
configureMysqlPools({ max: 1 });

interface Side {
  type: 'postgresql' | 'mariadb';
  driver: ConnectorDriver<DatabaseConfig, SqlTarget>;
  /** Runs SQL on the server directly (not through the proxy). */
  admin(sql: string): Promise<Record<string, unknown>[]>;
  end(): Promise<void>;
  schema: string;
  port: number;
  protocol: 'postgresql' | 'mysql';
  /** A statement that runs far longer than the timeout, within the guard's reach (a triple self-join of the table). */
  slow: (t: string) => string;
}

async function pgSide(): Promise<Side> {
  const db = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 1, onnotice: () => undefined });
  return {
    type: 'postgresql',
    driver: postgresqlDriver as unknown as Side['driver'],
    admin: async (sql) => [...(await db.unsafe(sql))] as Record<string, unknown>[],
    end: () => db.end({ timeout: 1 }),
    schema: 'public',
    port: 5432,
    protocol: 'postgresql',
    slow: (t) => `SELECT count(*) FROM ${t} a, ${t} b, ${t} c`,
  };
}

async function mariadbSide(): Promise<Side> {
  const db = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database: 'test' });
  return {
    type: 'mariadb',
    driver: mysqlDriver as unknown as Side['driver'],
    admin: async (sql) => (await db.query(sql))[0] as Record<string, unknown>[],
    end: () => db.end(),
    schema: 'test',
    port: 3306,
    protocol: 'mysql',
    slow: (t) => `SELECT COUNT(*) FROM ${t} a, ${t} b, ${t} c`,
  };
}

for (const [make, service] of [
  [pgSide, 'postgres'],
  [mariadbSide, 'mysql'],
] as const) {
  const available = await serviceAvailable(service);
  describe.skipIf(!available)(`one round trip per read: ${service}`, () => {
    let side: Side;
    let counter: WireCounter;
    let config: DatabaseConfig;
    let tool: SqlToolSpec;
    let saved: SqlToolSpec;
    const table = `rp_${randomBytes(4).toString('hex')}`;
    const connectorId = `read-path-${service}-${randomBytes(3).toString('hex')}`;
    const ctx = (o: Partial<ExecutionContext> = {}): ExecutionContext => ({
      connectorId,
      config,
      credential: null,
      allowWrite: false,
      allowDdl: false,
      readOnly: false,
      limits: LIMITS,
      ...o,
    });
    const call = (args: Record<string, unknown>, c = ctx(), t = tool): Promise<ToolResult> => side.driver.execute(t, args, c);
    const ok = async (args: Record<string, unknown>, c = ctx(), t = tool): Promise<Structured> => {
      const r = await call(args, c, t);
      if (r.isError) throw new Error(`call failed: ${JSON.stringify(r.content)}`);
      return r.structuredContent as Structured;
    };
    const text = (r: ToolResult): string => r.content.map((c) => ('text' in c ? c.text : '')).join(' ');
    /** What one call sent before its answer, and after it (the MySQL reset and set-up, which the answer does not wait for). */
    const counted = async (run: () => Promise<unknown>): Promise<{ before: WireCounts; after: WireCounts }> => {
      await Bun.sleep(150);
      counter.take();
      await run();
      const before = counter.take();
      await Bun.sleep(150);
      return { before, after: counter.take() };
    };

    beforeAll(async () => {
      side = await make();
      await side.admin(`CREATE TABLE ${table} (id INT PRIMARY KEY, name VARCHAR(200) NOT NULL)`);
      await side.admin(
        side.type === 'postgresql'
          ? `INSERT INTO ${table} SELECT g, 'name ' || g FROM generate_series(1, ${ROWS}) g`
          : `INSERT INTO ${table} VALUES ${Array.from({ length: ROWS }, (_, i) => `(${i + 1}, 'name ${i + 1}')`).join(',')}`,
      );
      counter = await startWireCounter(side.protocol, { host: '127.0.0.1', port: side.port });
      config = {
        host: '127.0.0.1',
        port: counter.port,
        database: 'test',
        user: side.type === 'postgresql' ? 'postgres' : 'root',
        schemas: [side.schema],
      };
      const tools = (await side.driver.introspect(connectorId, config, null)) as SqlToolSpec[];
      tool = tools.find((t) => t.target.table === table)!;
      const statement = `SELECT id, name FROM ${table} WHERE id BETWEEN :lo AND :hi ORDER BY id`;
      const parameters: SavedParam[] = [
        { name: 'lo', type: 'integer', description: 'first id' },
        { name: 'hi', type: 'integer', description: 'last id' },
      ];
      const check = await side.driver.checkSaved!(statement, parameters, [tool.target], false);
      if (!check.ok || !check.template) throw new Error(`not saved: ${JSON.stringify(check)}`);
      saved = { ...tool, target: { ...check.target, saved: { ...check.template, statement, parameters, version: 1 } } };
    });
    afterAll(async () => {
      await side?.driver.close(connectorId);
      await counter?.close();
      await side?.admin(`DROP TABLE IF EXISTS ${table}`);
      await side?.end();
    });

    test('a free-SQL read: one statement before its answer, each call with a new literal', async () => {
      const free = (k: number) => ({ sql: `SELECT id, name FROM ${table} WHERE id BETWEEN ${k} AND ${k + 9} ORDER BY id` });
      for (let k = 1; k <= 3; k++) await ok(free(k)); // pool open, guard loaded, resolution verdict cached
      for (let k = 10; k < 13; k++) {
        let rows: Structured | null = null;
        const { before, after } = await counted(async () => (rows = await ok(free(k))));
        expect(rows!.rows.map((r) => Number(r.id))).toEqual(Array.from({ length: 10 }, (_, i) => k + i));
        expect({ statements: before.statements, roundTrips: before.roundTrips }).toEqual({ statements: 1, roundTrips: 1 });
        if (side.type === 'postgresql') expect(after.statements).toBe(0);
        // MariaDB, after the answer: COM_RESET_CONNECTION, then USE and one SET for the next call.
        else expect(after.byKind).toEqual({ RESET_CONNECTION: 1, QUERY: 2 });
      }
    });

    test('a saved-statement read: one statement in all, with new values each call', async () => {
      for (let k = 1; k <= 3; k++) await ok({ lo: k, hi: k + 9 }, ctx(), saved);
      for (let k = 20; k < 23; k++) {
        let rows: Structured | null = null;
        const { before, after } = await counted(async () => (rows = await ok({ lo: k, hi: k + 9 }, ctx(), saved)));
        expect(rows!.rows.map((r) => Number(r.id))).toEqual(Array.from({ length: 10 }, (_, i) => k + i));
        expect({ statements: before.statements + after.statements, roundTrips: before.roundTrips + after.roundTrips }).toEqual({
          statements: 1,
          roundTrips: 1,
        });
        // Prepared once per connection: only Bind/Execute (PostgreSQL) or COM_STMT_EXECUTE (MariaDB) go out.
        expect(Object.keys(before.byKind).sort()).toEqual(side.type === 'postgresql' ? ['B', 'E', 'S'] : ['STMT_EXECUTE']);
      }
    });

    test('the row cap cuts exactly and says so (1,000 rows, cap 10)', async () => {
      const r = await ok({ sql: `SELECT id FROM ${table} ORDER BY id`, limit: 10 });
      expect(r.rows.map((x) => Number(x.id))).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
      expect(r.truncated).toBe(true);
      // The gateway's own cap, the statement's limit beyond it.
      const capped = await ok({ sql: `SELECT id FROM ${table} ORDER BY id LIMIT 500` }, ctx({ limits: { ...LIMITS, maxRows: 10 } }));
      expect(capped.rows.length).toBe(10);
      expect(capped.truncated).toBe(true);
      // Exactly at the cap: not truncated.
      const exact = await ok({ sql: `SELECT id FROM ${table} WHERE id <= 10 ORDER BY id`, limit: 10 });
      expect({ n: exact.rows.length, truncated: exact.truncated }).toEqual({ n: 10, truncated: false });
    });

    test('the byte cap cuts exactly: the rows kept are those the collector keeps from the full ordered answer', async () => {
      const maxResultBytes = 2000;
      const r = await ok({ sql: `SELECT id, name FROM ${table} ORDER BY id` }, ctx({ limits: { ...LIMITS, maxResultBytes } }));
      const all = (await side.admin(`SELECT id, name FROM ${table} ORDER BY id LIMIT 100`)).map((x) => ({ id: Number(x.id), name: String(x.name) }));
      const expected = rowsResult(all, LIMITS.maxRows, maxResultBytes).structuredContent as Structured;
      expect(r.rows.map((x) => Number(x.id))).toEqual(expected.rows.map((x) => Number(x.id)));
      expect(r.rows.length).toBeGreaterThan(5);
      expect(r.rows.length).toBeLessThan(100);
      expect(r.truncated).toBe(true);
      // The pooled connection is usable at once for the next call.
      expect((await ok({ sql: `SELECT id FROM ${table} WHERE id = 7` })).rows.map((x) => Number(x.id))).toEqual([7]);
    });

    test('a long query is cancelled by the statement timeout, and the next call runs', async () => {
      const t0 = performance.now();
      const r = await call({ sql: side.slow(table) });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/time/i);
      expect(performance.now() - t0).toBeLessThan(LIMITS.statementTimeoutMs + 4000);
      expect((await ok({ sql: `SELECT id FROM ${table} WHERE id = 3` })).rows.length).toBe(1);
    });

    test('a write is refused on a read-only tool, and so is every way of switching the session', async () => {
      const attempts = [
        `INSERT INTO ${table} VALUES (5001, 'x')`,
        `UPDATE ${table} SET name = 'x' WHERE id = 1`,
        ...(side.type === 'postgresql'
          ? [
              'SET transaction_read_only = off',
              'SET SESSION default_transaction_read_only = off',
              'SET statement_timeout = 0',
              `SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)`,
              `SELECT set_config('statement_timeout', '0', false) FROM ${table}`,
              'RESET ALL',
            ]
          : [
              'SET SESSION tx_read_only = 0',
              'SET SESSION transaction_read_only = 0',
              'SET SESSION max_statement_time = 0',
              'SET @@session.tx_read_only = 0',
              `SELECT @@session.tx_read_only := 0 FROM ${table}`,
              `SET STATEMENT max_statement_time = 0 FOR SELECT COUNT(*) FROM ${table}`,
              'USE information_schema',
            ]),
      ];
      // A write-enabled connector, but a read-only tool; and the plain read-only connector.
      for (const c of [ctx({ allowWrite: true, readOnly: true }), ctx()]) {
        for (const sql of attempts) expect({ sql, refused: (await call({ sql }, c)).isError }).toEqual({ sql, refused: true });
      }
      expect((await side.admin(`SELECT count(*) AS n FROM ${table} WHERE id = 5001 OR name = 'x'`))[0]!.n).toEqual(side.type === 'postgresql' ? '0' : 0);
      // The next call still runs under the timeout.
      expect((await call({ sql: side.slow(table) })).isError).toBe(true);
    });

    test('past the guard: a session change made by the SQL itself never reaches the next call on the same connection', async () => {
      if (side.type === 'postgresql') {
        await postgresqlPoolFor(connectorId, config, null, async (pool) => {
          const settings = async () =>
            (await pool.sql.unsafe('select current_setting($1) as t, current_setting($2) as r', ['statement_timeout', 'default_transaction_read_only']))[0] as
              | Record<string, unknown>
              | undefined;
          expect(await settings()).toEqual({ t: '1s', r: 'on' });
          // The fast path's wrapper makes a utility statement a syntax error.
          const wrapped = PG_DIALECT.wrapRead!('set statement_timeout = 0', 10, 1000);
          await expect(runPgFast(pool.sql, wrapped, { statementTimeoutMs: 1000 })).rejects.toThrow();
          // The transaction path (bare SQL, no wrapper, no guard): the leftover check resets the session.
          for (const sql of [
            'set statement_timeout = 0',
            'set default_transaction_read_only = off',
            `select pg_catalog.set_config('statement_timeout', '0', false)`,
          ]) {
            await runPgStatement(pool.sql, sql, { readOnly: true, statementTimeoutMs: 1000, lockTimeoutMs: 1000 });
            expect(await settings()).toEqual({ t: '1s', r: 'on' });
          }
          // The server reported default_transaction_read_only = off for a moment: the pool leaves the fast path for good.
          expect(pool.tainted).toBe(true);
        });
        return;
      }
      await mysqlPoolFor(connectorId, config, null, async (p) => {
        const o = { readOnly: true, database: 'test', statementTimeoutMs: 1000, lockTimeoutMs: 1000 };
        const settings = async () =>
          (await runMysqlStatement(p, 'SELECT @@session.tx_read_only AS r, @@session.max_statement_time AS t, DATABASE() AS d, @x AS x', o)).rows[0] as
            | Record<string, unknown>
            | undefined;
        await runMysqlStatement(p, `SELECT id FROM ${table} WHERE id = 1`, o);
        await Bun.sleep(100);
        expect(await settings()).toEqual({ r: 1, t: 1, d: 'test', x: null });
        for (const sql of [
          'SET SESSION tx_read_only = 0, max_statement_time = 0',
          'USE information_schema',
          'SET @x = 1',
          `SELECT @x := 2 FROM ${table} LIMIT 1`,
        ]) {
          await runMysqlStatement(p, sql, o);
          await Bun.sleep(100);
          expect({ sql, s: await settings() }).toEqual({ sql, s: { r: 1, t: 1, d: 'test', x: null } });
        }
        // A write on a read-only call fails, after a call that tried to switch the session to read-write.
        await runMysqlStatement(p, 'SET SESSION tx_read_only = 0', o);
        await expect(runMysqlStatement(p, `INSERT INTO ${table} VALUES (5002, 'y')`, o)).rejects.toThrow(/read only|read-only/i);
      });
    });

    test.if(service === 'mysql')('a MySQL write answers its affected-row count (not [{}]), free SQL and saved statement', async () => {
      const w = ctx({ allowWrite: true });
      const insert = await call({ sql: `INSERT INTO ${table} VALUES (6001, 'w1'), (6002, 'w2')` }, w);
      expect(insert.structuredContent).toEqual({ rows: [], rowCount: 2, truncated: false });
      expect(text(insert)).toBe('[]');
      const statement = `UPDATE ${table} SET name = :name WHERE id > 6000`;
      const parameters: SavedParam[] = [{ name: 'name', type: 'string', description: 'new name' }];
      const check = await side.driver.checkSaved!(statement, parameters, [tool.target], true);
      if (!check.ok || !check.template) throw new Error(`not saved: ${JSON.stringify(check)}`);
      const update: SqlToolSpec = { ...tool, target: { ...check.target, saved: { ...check.template, statement, parameters, version: 1 } } };
      expect((await call({ name: 'w' }, w, update)).structuredContent).toEqual({ rows: [], rowCount: 2, truncated: false });
      // The session went back to read-only after the write: the next read-only call cannot write.
      await Bun.sleep(100);
      await mysqlPoolFor(connectorId, config, null, async (p) => {
        const o = { readOnly: true, database: 'test', statementTimeoutMs: 1000, lockTimeoutMs: 1000 };
        await expect(runMysqlStatement(p, `DELETE FROM ${table} WHERE id > 6000`, o)).rejects.toThrow(/read only|read-only/i);
      });
      await side.admin(`DELETE FROM ${table} WHERE id > 6000`);
    });
  });
}
