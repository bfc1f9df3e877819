/**
 * `npm run bench:drivers`: the PostgreSQL driver comparison behind the choice of postgres.js, in-process, local only.
 *
 *   1. Creates a fresh database on the local PostgreSQL (127.0.0.1:5432, user postgres) holding the same
 *      10,000-row `items` table as `npm run bench`; it is dropped at the end, also after a failure or Ctrl-C.
 *   2. For each driver, with a pool of 10 connections and 16 then 64 concurrent callers in this process:
 *      a warm-up, then a measured run of the benchmark's SELECT returning 10 rows, timing every query.
 *   3. Prints driver, callers, queries/s, p50, p99, the ratio to `pg` with unnamed statements, and the CPU time of
 *      this process per query (the client side; PostgreSQL's backends share the same cores).
 *
 * Drivers: `pg` Pool with unnamed statements (`pool.query(text, values)`: parsed and planned on every call), `pg`
 * with a named prepared statement (`{name, text, values}`), postgres.js (its default named prepared statements,
 * pipelined on a connection), Bun.sql (`new SQL(...)`: prepared and pipelined), and the gateway's own read path
 * (`postgresqlDriver.execute`: guard, row-limit wrapper, the one-statement path on postgres.js, result shaping).
 * The bare drivers send `... WHERE id > $1 ...` with $1 = 5000; the gateway path gets the literal SQL an agent
 * sends (`id > 5000`), as in `npm run bench`.
 *
 * Flags: --duration=S (measured seconds per run, default 5), --warmup=S (default 1), --callers=16,64,
 * --only=pg,pg-named,postgres.js,bun.sql,gateway (a subset of the drivers).
 * Exit code: 0 on success, 2 when the run itself failed.
 */
import pg from 'pg';
import postgres from 'postgres';
import { cleanupOnExit, PG, ROWS, seedItems, TABLE } from './common.ts';
import { SQL } from 'bun';
import { cpus } from 'node:os';
import { configurePostgresqlPools, postgresqlDriver } from '../src/connectors/postgresql/driver.ts';
import type { DatabaseConfig, ExecutionContext } from '../src/connectors/types.ts';

// ---------------------------------------------------------------------------------------------------
// Settings

const argv = process.argv.slice(2);
function flag(name: string): string | undefined {
  const hit = argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  return hit === undefined ? undefined : (hit.split('=')[1] ?? '');
}
const DURATION_S = Number(flag('duration') ?? 5);
const WARMUP_S = Number(flag('warmup') ?? 1);
const CALLERS = (flag('callers') ?? '16,64').split(',').map(Number);
const ONLY = flag('only')?.split(',') ?? null;

/** The gateway's connector pool size (DEFAULT_POOL_SETTINGS.max), as in `npm run bench`. */
const POOL_SIZE = 10;
const FROM_ID = 5000;
const SELECT = `SELECT id, sku, name, price, qty FROM ${TABLE} WHERE id > $1 ORDER BY id LIMIT 10`;
/** What an agent sends through the gateway: the same query with the value written in (bench/run.ts's SELECT). */
const SELECT_LITERAL = SELECT.replace('$1', String(FROM_ID));
const DATABASE = `toolgate_bench_drivers_${process.pid}_${Date.now().toString(36)}`;
const URL_ = `postgres://${PG.user}@${PG.host}:${PG.port}/${DATABASE}`;

// ---------------------------------------------------------------------------------------------------
// Database and clean-up

const exit = cleanupOnExit();
const cleanup = exit.run;

async function createDatabase(): Promise<string> {
  const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  exit.add(async () => {
    const drop = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
    try {
      await drop.unsafe(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
    } finally {
      await drop.end({ timeout: 2 });
    }
  });
  let version: string;
  try {
    version = String((await admin.unsafe('SHOW server_version'))[0]?.server_version);
    await admin.unsafe(`CREATE DATABASE "${DATABASE}"`);
  } finally {
    await admin.end({ timeout: 2 });
  }
  await seedItems(DATABASE);
  return version;
}

// ---------------------------------------------------------------------------------------------------
// Drivers

interface Driver {
  key: string;
  name: string;
  /** Opens the pool (lazily or not); `query` runs one SELECT and resolves to its number of rows. */
  open: () => Promise<{ query: () => Promise<number>; close: () => Promise<void> }>;
}

const DRIVERS: Driver[] = [
  {
    key: 'pg',
    name: 'pg, unnamed',
    open: async () => {
      const pool = new pg.Pool({ ...PG, database: DATABASE, max: POOL_SIZE });
      return {
        query: async () => (await pool.query(SELECT, [FROM_ID])).rowCount ?? 0,
        close: () => pool.end(),
      };
    },
  },
  {
    key: 'pg-named',
    name: 'pg, named prepared',
    open: async () => {
      const pool = new pg.Pool({ ...PG, database: DATABASE, max: POOL_SIZE });
      const config: pg.QueryConfig<[number]> = { name: 'bench_items_page', text: SELECT, values: [FROM_ID] };
      return {
        query: async () => (await pool.query(config)).rowCount ?? 0,
        close: () => pool.end(),
      };
    },
  },
  {
    key: 'postgres.js',
    name: 'postgres.js',
    open: async () => {
      const sql = postgres(URL_, { max: POOL_SIZE, onnotice: () => undefined });
      return {
        // A tagged template: postgres.js' default, a named prepared statement per connection.
        query: async () => (await sql`SELECT id, sku, name, price, qty FROM items WHERE id > ${FROM_ID} ORDER BY id LIMIT 10`).length,
        close: () => sql.end({ timeout: 2 }),
      };
    },
  },
  {
    key: 'bun.sql',
    name: 'Bun.sql',
    open: async () => {
      const sql = new SQL(URL_, { max: POOL_SIZE });
      return {
        // A tagged template: Bun.sql's default (prepare: true), a named prepared statement per connection.
        query: async () => (await sql`SELECT id, sku, name, price, qty FROM items WHERE id > ${FROM_ID} ORDER BY id LIMIT 10`).length,
        close: () => sql.close({ timeout: 2 }),
      };
    },
  },
  {
    key: 'gateway',
    name: 'gateway read path',
    open: async () => {
      const connectorId = `bench-drivers-${process.pid}`;
      const config: DatabaseConfig = { host: PG.host, port: PG.port, database: DATABASE, user: PG.user };
      configurePostgresqlPools({ max: POOL_SIZE });
      const tool = (await postgresqlDriver.introspect(connectorId, config, null)).find((t) => t.target.table === TABLE);
      if (!tool) throw new Error(`introspection found no ${TABLE} tool`);
      // The limits the MCP endpoint passes by default (src/config.ts).
      const ctx: ExecutionContext = {
        connectorId,
        config,
        credential: null,
        allowWrite: false,
        allowDdl: false,
        readOnly: true,
        limits: { statementTimeoutMs: 5000, lockTimeoutMs: 2000, maxRows: 1000, maxResultBytes: 1_048_576 },
      };
      const args = { sql: SELECT_LITERAL };
      return {
        query: async () => {
          const r = await postgresqlDriver.execute(tool, args, ctx);
          if (r.isError) throw new Error(`gateway read failed: ${r.content[0]?.text}`);
          return (r.structuredContent?.rows as unknown[] | undefined)?.length ?? 0;
        },
        close: () => postgresqlDriver.close(connectorId),
      };
    },
  },
];

// ---------------------------------------------------------------------------------------------------
// Load

interface Row {
  driver: string;
  callers: number;
  qps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of this process (the client: driver, event loop, timing) per query, user + system, in µs. */
  cpuUs: number;
}

/** `callers` concurrent loops until `until` (performance.now()); the latency of each query goes into `latencies`. */
async function load(query: () => Promise<number>, callers: number, until: number, latencies: number[] | null): Promise<number> {
  let errors = 0;
  const loop = async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      try {
        if ((await query()) !== 10) errors++;
      } catch {
        errors++;
      }
      latencies?.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: callers }, loop));
  return errors;
}

const percentile = (sorted: Float64Array, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function measure(driver: Driver): Promise<Row[]> {
  const { query, close } = await driver.open();
  try {
    const first = await query();
    if (first !== 10) throw new Error(`${driver.name}: expected 10 rows, got ${first}`);
    const rows: Row[] = [];
    for (const callers of CALLERS) {
      await load(query, callers, performance.now() + WARMUP_S * 1000, null);
      const latencies: number[] = [];
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      const errors = await load(query, callers, start + DURATION_S * 1000, latencies);
      const elapsed = (performance.now() - start) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const sorted = Float64Array.from(latencies).sort();
      const row: Row = {
        driver: driver.name,
        callers,
        qps: latencies.length / elapsed,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        errors,
        cpuUs: (cpu.user + cpu.system) / Math.max(1, latencies.length),
      };
      console.error(
        `bench: ${row.driver.padEnd(18)} c=${String(callers).padStart(2)}  ${row.qps.toFixed(0).padStart(6)} queries/s  ` +
          `p50 ${row.p50.toFixed(2)} ms  p99 ${row.p99.toFixed(2)} ms  errors ${errors}  client CPU ${row.cpuUs.toFixed(0)} µs/query`,
      );
      rows.push(row);
    }
    return rows;
  } finally {
    await close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Report

function table(rows: Row[]): string {
  const base = new Map(rows.filter((r) => r.driver === DRIVERS[0]!.name).map((r) => [r.callers, r.qps]));
  const head = ['driver', 'callers', 'queries/s', 'p50 ms', 'p99 ms', 'errors', 'vs pg unnamed', 'client CPU µs/query'];
  const lines = rows.map((r) => {
    const b = base.get(r.callers);
    return [
      r.driver,
      String(r.callers),
      r.qps.toFixed(0),
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      String(r.errors),
      b ? `${(r.qps / b).toFixed(2)}x` : '-',
      r.cpuUs.toFixed(0),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const started = Date.now();
  const serverVersion = await createDatabase();
  const drivers = DRIVERS.filter((d) => !ONLY || ONLY.includes(d.key));
  const rows: Row[] = [];
  for (const driver of drivers) rows.push(...(await measure(driver)));
  console.log(
    `\nPostgreSQL driver comparison: Bun ${Bun.version}, PostgreSQL ${serverVersion}, ${cpus().length} CPUs; ` +
      `pool ${POOL_SIZE}, ${WARMUP_S} s warm-up + ${DURATION_S} s per run; ${ROWS}-row table, 10 rows per query.\n`,
  );
  console.log(table(rows));
  console.log(`\nTotal ${((Date.now() - started) / 1000).toFixed(0)} s.`);
}

let code = 0;
try {
  await main();
} catch (err) {
  console.error(`bench: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  code = 2;
} finally {
  await cleanup();
}
process.exit(code);
