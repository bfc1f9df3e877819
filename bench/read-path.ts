/**
 * What one governed read costs at the wire and in calls/s (issue 42 item 1, one round trip per read): a 10-row
 * SELECT on a 1,000-row table, as a saved statement (typed parameters, new values each call) and as free SQL (a new
 * literal each call), on PostgreSQL and MariaDB, through the connector drivers in process (the guard, the resolution
 * check, the row and byte caps, the pool; no HTTP, no audit, no quota). Each driver talks to its server through a
 * counting proxy (test/support/wire.ts) that reports statements and round trips per call.
 *
 *   node_modules/.bin/bun bench/read-path.ts [--seconds=3] [--callers=8] [--only=postgresql,mariadb]
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (db test) and MariaDB on 127.0.0.1:3306 (db test). Prints `uptime` with the figures.
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { mysqlDriver } from '../src/connectors/mysql/driver.ts';
import { postgresqlDriver } from '../src/connectors/postgresql/driver.ts';
import type { ConnectorDriver, DatabaseConfig, ExecutionContext, SavedParam, SqlTarget, SqlToolSpec } from '../src/connectors/types.ts';
import { startWireCounter, type Protocol, type WireCounter } from '../test/support/wire.ts';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SECONDS = Number(arg('seconds', '3'));
const CALLERS = Number(arg('callers', '8'));
const ONLY = arg('only', 'postgresql,mariadb').split(',');
const COUNTED_CALLS = 50;
const ROWS = 1000;

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

async function measure(side: Side, counter: WireCounter, s: Scenario, ctx: ExecutionContext): Promise<string> {
  // Warm: pool open, guard loaded, resolution verdict cached, statement prepared on the connections.
  for (let i = 0; i < 20; i++) await call(side, s, ctx, i);
  await Bun.sleep(100);
  counter.take();
  for (let i = 0; i < COUNTED_CALLS; i++) await call(side, s, ctx, 1000 + i);
  await Bun.sleep(200); // the MySQL reset after the answer
  const c = counter.take();
  const kinds = Object.entries(c.byKind)
    .map(([k, n]) => `${k} ${(n / COUNTED_CALLS).toFixed(2)}`)
    .join(', ');
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
    `| ${side.type} | ${s.name} | ${(c.statements / COUNTED_CALLS).toFixed(2)} | ${(c.roundTrips / COUNTED_CALLS).toFixed(2)} | ` +
    `${Math.round(done / SECONDS)} | ${Math.round(perCall)} | ${kinds} |`
  );
}

const lines: string[] = [];
console.log(`uptime: ${execSync('uptime').toString().trim()}`);
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
console.log(`\n| database | call | statements/call | round trips/call | calls/s (${CALLERS} callers, ${SECONDS} s) | gateway CPU µs/call | messages per call |`);
console.log('|:--|:--|--:|--:|--:|--:|:--|');
for (const l of lines) console.log(l);
console.log(`\nuptime: ${execSync('uptime').toString().trim()}`);
process.exit(0);
