/**
 * What one governed read costs at the wire and in calls/s (issue 42 item 1, one round trip per read): a 10-row
 * SELECT on a 1,000-row table, as a saved statement (typed parameters, new values each call) and as free SQL (a new
 * literal each call), on PostgreSQL and MariaDB, through the connector drivers in process (the guard, the resolution
 * check, the row and byte caps, the pool; no HTTP, no audit, no quota). Each driver talks to its server through a
 * counting proxy (test/support/wire.ts) that reports statements and round trips per call.
 *
 *   node_modules/.bin/bun bench/read-path.ts [--seconds=3] [--callers=8] [--only=postgresql,mariadb]
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (db test) and MariaDB on 127.0.0.1:3306 (db test). Prints the load average with the figures.
 */
import { loadavg } from 'node:os';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { mysqlDriver } from '../src/connectors/mysql/driver.ts';
import { postgresqlDriver } from '../src/connectors/postgresql/driver.ts';
import { PG_DIALECT } from '../src/connectors/postgresql/execute.ts';
import type { ConnectorDriver, DatabaseConfig, ExecutionContext, SavedParam, SqlTarget, SqlToolSpec } from '../src/connectors/types.ts';
import { startWireCounter, type Protocol, type WireCounter, type WireCounts } from '../test/support/wire.ts';

const arg = (name: string, fallback: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SECONDS = Number(arg('seconds', '3'));
const CALLERS = Number(arg('callers', '8'));
const ONLY = arg('only', 'postgresql,mariadb').split(',');
const COUNTED_CALLS = 50;
const ROWS = 1000;
const per = (n: number): string => (n / COUNTED_CALLS).toFixed(2);

interface Side {
  type: 'postgresql' | 'mariadb';
  protocol: Protocol;
  driver: ConnectorDriver<DatabaseConfig, SqlTarget>;
  target: { host: string; port: number };
  config: (port: number) => DatabaseConfig;
  seed(table: string): Promise<() => Promise<void>>;
}

const SIDES: Side[] = [
  {
    type: 'postgresql',
    protocol: 'postgresql',
    driver: postgresqlDriver as unknown as Side['driver'],
    target: { host: '127.0.0.1', port: 5432 },
    config: (port) => ({ host: '127.0.0.1', port, database: 'test', user: 'postgres', schemas: ['public'] }),
    async seed(table) {
      const db = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test', max: 1, onnotice: () => undefined });
      await db.unsafe(`create table public.${table} (id int primary key, name text not null);
        insert into public.${table} select g, 'name ' || g from generate_series(1, ${ROWS}) g; analyze public.${table}`);
      return async () => {
        await db.unsafe(`drop table if exists public.${table}`);
        await db.end();
      };
    },
  },
  {
    type: 'mariadb',
    protocol: 'mysql',
    driver: mysqlDriver as unknown as Side['driver'],
    target: { host: '127.0.0.1', port: 3306 },
    config: (port) => ({ host: '127.0.0.1', port, database: 'test', user: 'root', schemas: ['test'] }),
    async seed(table) {
      const db = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', database: 'test' });
      await db.query(`CREATE TABLE ${table} (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)`);
      await db.query(`INSERT INTO ${table} VALUES ${Array.from({ length: ROWS }, (_, i) => `(${i + 1}, 'name ${i + 1}')`).join(',')}`);
      return async () => {
        await db.query(`DROP TABLE IF EXISTS ${table}`);
        await db.end();
      };
    },
  },
];

interface Scenario {
  name: string;
  tool: SqlToolSpec;
  args: (i: number) => Record<string, unknown>;
}

async function scenarios(side: Side, connectorId: string, config: DatabaseConfig, table: string): Promise<Scenario[]> {
  const tools = (await side.driver.introspect(connectorId, config, null)) as SqlToolSpec[];
  const tool = tools.find((t) => t.target.table === table);
  if (!tool) throw new Error(`no tool for ${table}`);
  const statement = `SELECT id, name FROM ${table} WHERE id BETWEEN :lo AND :hi`;
  const parameters: SavedParam[] = [
    { name: 'lo', type: 'integer', description: 'first id' },
    { name: 'hi', type: 'integer', description: 'last id' },
  ];
  const check = await side.driver.checkSaved!(statement, parameters, [tool.target], false);
  if (!check.ok || !check.template) throw new Error(`not saved: ${JSON.stringify(check)}`);
  const saved: SqlToolSpec = { ...tool, target: { ...check.target, saved: { ...check.template, statement, parameters, version: 1 } } };
  const lo = (i: number): number => 1 + (i % (ROWS - 10));
  return [
    { name: 'saved statement', tool: saved, args: (i) => ({ lo: lo(i), hi: lo(i) + 9 }) },
    { name: 'free SQL, new literal', tool, args: (i) => ({ sql: `SELECT id, name FROM ${table} WHERE id BETWEEN ${lo(i)} AND ${lo(i) + 9}` }) },
  ];
}

function context(connectorId: string, config: DatabaseConfig): ExecutionContext {
  return {
    connectorId,
    config,
    credential: null,
    allowWrite: false,
    allowDdl: false,
    readOnly: false,
    limits: { statementTimeoutMs: 5000, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 1_000_000 },
  };
}

async function call(side: Side, s: Scenario, ctx: ExecutionContext, i: number): Promise<void> {
  const r = await side.driver.execute(s.tool, s.args(i), ctx);
  const rows = (r.structuredContent as { rows?: unknown[] } | undefined)?.rows;
  if (r.isError || rows?.length !== 10) throw new Error(`${side.type} ${s.name}: ${JSON.stringify(r.content).slice(0, 300)}`);
}

/**
 * Counts COUNTED_CALLS calls one by one, apart: what the client sent between a call's start and its answer, and what
 * it sent after the answer (a MySQL connection's reset and set-up, which the answer does not wait for).
 */
async function countCalls(counter: WireCounter, run: (i: number) => Promise<void>): Promise<WireCounts & { before: number; beforeTrips: number }> {
  await Bun.sleep(100);
  counter.take();
  const total: WireCounts & { before: number; beforeTrips: number } = { roundTrips: 0, statements: 0, byKind: {}, texts: [], before: 0, beforeTrips: 0 };
  const add = (c: WireCounts): void => {
    total.roundTrips += c.roundTrips;
    total.statements += c.statements;
    for (const [k, n] of Object.entries(c.byKind)) total.byKind[k] = (total.byKind[k] ?? 0) + n;
  };
  for (let i = 0; i < COUNTED_CALLS; i++) {
    await run(i);
    const before = counter.take();
    total.before += before.statements;
    total.beforeTrips += before.roundTrips;
    add(before);
    await Bun.sleep(50);
    add(counter.take());
  }
  return total;
}

async function measure(side: Side, counter: WireCounter, s: Scenario, ctx: ExecutionContext): Promise<string> {
  // Warm: pool open, guard loaded, resolution verdict cached, statement prepared on the connections.
  for (let i = 0; i < 20; i++) await call(side, s, ctx, i);
  const c = await countCalls(counter, (i) => call(side, s, ctx, 1000 + i));
  const kinds = Object.entries(c.byKind)
    .map(([k, n]) => `${k} ${(n / COUNTED_CALLS).toFixed(2)}`)
    .join(', ');
  const t0 = performance.now();
  for (let i = 0; i < COUNTED_CALLS; i++) await call(side, s, ctx, 2000 + i);
  const serialMs = (performance.now() - t0) / COUNTED_CALLS;
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, w) => {
      for (let i = w; performance.now() < until; i += CALLERS) await call(side, s, ctx, i), done++;
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const perCall = (cpu.user + cpu.system) / done;
  return (
    `| ${side.type} | ${s.name} | ${per(c.before)} | ${per(c.beforeTrips)} | ${per(c.statements)} | ${per(c.roundTrips)} | ` +
    `${serialMs.toFixed(2)} | ${Math.round(done / SECONDS)} | ${Math.round(perCall)} | ${kinds} |`
  );
}

/**
 * The row cap by the protocol on PostgreSQL, measured bare (postgres.js alone through the counting proxy, one
 * reserved connection, read-only session): the gateway's wrapper `select * from (...) limit n` against postgres.js'
 * only way to put a row limit on Execute, `cursor(n)` (Execute(n) + Flush, then Close or Sync once the rows came).
 */
async function pgCursorAgainstWrapper(): Promise<string[]> {
  const table = `bench_readpath_${randomBytes(3).toString('hex')}`;
  const drop = await SIDES[0]!.seed(table);
  const counter = await startWireCounter('postgresql', { host: '127.0.0.1', port: 5432 });
  const sql = postgres({
    host: '127.0.0.1',
    port: counter.port,
    user: 'postgres',
    database: 'test',
    max: 1,
    onnotice: () => undefined,
    connection: { default_transaction_read_only: true, statement_timeout: 5000 },
  });
  const out: string[] = [];
  try {
    const conn = await sql.reserve();
    const text = (i: number): string => `SELECT id, name FROM public.${table} WHERE id > ${i % 900} ORDER BY id LIMIT 100`;
    const ways: [string, (i: number) => Promise<number>][] = [
      ['no cap (the statement bare, its 100 rows read)', async (i) => (await conn.unsafe(text(i), [], { prepare: false }).values()).length],
      [
        'the gateway wrapper (row-size filter, limit 11)',
        async (i) => (await conn.unsafe(PG_DIALECT.wrapRead!(text(i), 11, 100_000), [], { prepare: false }).values()).length,
      ],
      [
        'postgres.js cursor(11): Execute with a row limit',
        async (i) => {
          let n = 0;
          await conn.unsafe(text(i), [], { prepare: false }).cursor(11, (rows) => {
            n += rows.length;
            return sql.CLOSE as never;
          });
          return n;
        },
      ],
    ];
    for (const [name, run] of ways) {
      for (let i = 0; i < 20; i++) await run(i);
      const c = await countCalls(counter, async (i) => void (await run(i)));
      const t0 = performance.now();
      for (let i = 0; i < COUNTED_CALLS; i++) await run(i);
      const ms = (performance.now() - t0) / COUNTED_CALLS;
      out.push(
        `| postgresql, bare | ${name} | ${per(c.before)} | ${per(c.beforeTrips)} | ${per(c.statements)} | ${per(c.roundTrips)} | ${ms.toFixed(2)} | | | |`,
      );
    }
    conn.release();
  } finally {
    await sql.end({ timeout: 1 });
    await counter.close();
    await drop();
  }
  return out;
}

const lines: string[] = [];
console.log(
  `load average: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const side of SIDES.filter((s) => ONLY.includes(s.type))) {
  const table = `bench_readpath_${randomBytes(3).toString('hex')}`;
  const drop = await side.seed(table);
  const counter = await startWireCounter(side.protocol, side.target);
  const connectorId = `bench-readpath-${side.type}`;
  const config = side.config(counter.port);
  try {
    const ctx = context(connectorId, config);
    for (const s of await scenarios(side, connectorId, config, table)) lines.push(await measure(side, counter, s, ctx));
  } finally {
    await side.driver.close(connectorId);
    await counter.close();
    await drop();
  }
}
if (ONLY.includes('postgresql')) lines.push(...(await pgCursorAgainstWrapper()));
console.log(
  `\n| database | call | statements before the answer | round trips before the answer | statements in all | round trips in all | ` +
    `ms per call, one caller | calls/s (${CALLERS} callers, ${SECONDS} s) | gateway CPU µs/call | messages per call |`,
);
console.log('|:--|:--|--:|--:|--:|--:|--:|--:|--:|:--|');
for (const l of lines) console.log(l);
console.log(
  `\nload average: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
process.exit(0);
