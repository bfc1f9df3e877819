/** Opens the gateway's store: embedded PGlite in a data folder, or a PostgreSQL server; applies migrations. */
import { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { migrations, type Migration } from './migrations.ts';
import { openInMemoryPglite } from './pglite-image.ts';
import { pgliteWasm, type PgliteWasm } from './pglite-wasm.ts';
import { reachServer, type ReachOptions } from './reach.ts';
import * as schema from './schema.ts';

type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything that can run queries: the database or an open transaction. */
export type Queryable = Db | Tx;

export interface Store {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Runs a multi-statement SQL script (migrations only). */
  execScript(script: string): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** postgres:// URL of a server; when absent, PGlite in `dataDir` (or in memory when dataDir is null). */
  databaseUrl?: string | null;
  dataDir?: string | null;
  poolSize?: number;
  /** A server store: how long a start waits for it to answer, and where the waiting is told (store/reach.ts). */
  reach?: ReachOptions;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.databaseUrl && options.reach) await reachServer(options.databaseUrl, options.reach);
  const store = options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : await openPglite(options.dataDir ?? null);
  try {
    await migrate(store);
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

function openPostgres(url: string, poolSize: number): Store {
  const client = postgres(url, { max: poolSize, onnotice: () => {}, connection: { application_name: 'toolgate' } });
  const db = drizzlePostgres(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'postgres',
    execScript: async (script) => {
      await client.unsafe(script);
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * PGlite starts PostgreSQL with its stock 128 MB of shared buffers, all touched at start: two embedded instances
 * (store and demo database) held ~500 MB of RSS before any request. The embedded store and the demo database are
 * small, so a few MB of buffers cache them whole; a large store belongs on a PostgreSQL server (DATABASE_URL).
 * Passed as start parameters, so nothing is written into the data folder's postgresql.conf. PGlite is one backend in
 * one process, so the shared memory sized for 100 connections (their slots and lock tables, ~4 MB, all resident)
 * is sized for 2, and the WAL buffers are 1 MB (~3 MB less; a larger write burst such as a connector's introspection
 * writes its WAL to the data folder sooner; decision 0236). The module is PGlite's own with a smaller declared
 * initial memory (store/pglite-wasm.ts, decision 0235), when its binary reads as expected.
 */
export async function embeddedPgliteOptions(sharedBuffersMb: number): Promise<{ startParams: string[] } & Partial<PgliteWasm>> {
  const settings = [`shared_buffers=${sharedBuffersMb}MB`, 'temp_buffers=1MB', 'wal_buffers=1MB', 'max_connections=2'];
  return { startParams: [...PGlite.defaultStartParams, ...settings.flatMap((s) => ['-c', s])], ...(await pgliteWasm()) };
}

/**
 * Shared buffers of the embedded store: 512 pages, more than its hot rows (each MB is resident from the start;
 * decisions 0193, 0289); a page that misses them is read from the data folder through the OS cache.
 */
const STORE_SHARED_BUFFERS_MB = 4;

/**
 * Creates a PGlite data folder (initdb) in a short-lived child process when it does not exist yet. initdb in process
 * peaks near 1 GB of RSS (a helper instance and a copy of its whole 128 MB heap), and the allocator keeps much of it:
 * a first start then idled ~35 MB above a restart (decision 0191). With `migrate` (the store's folder) the child also
 * applies the store's migrations, whose garbage held the first start's store ~20-30 MB above a restart's (decision
 * 0288); the gateway's own migrate() then finds them done. On a runtime other than Bun, or when the child fails,
 * PGlite runs initdb in process as before, and the migrations run in process.
 */
export async function initPgliteDataDir(dataDir: string, options: { migrate?: boolean } = {}): Promise<void> {
  if (typeof Bun === 'undefined' || existsSync(join(dataDir, 'PG_VERSION'))) return;
  // Built next to the folder and renamed into place once complete: a child that dies leaves no half-made folder.
  const building = `${dataDir}.initdb-${process.pid}`;
  const script = `const { PGlite } = await import(${JSON.stringify(import.meta.resolve('@electric-sql/pglite'))});
const pg = new PGlite(${JSON.stringify(building)});
await pg.waitReady;
${
  options.migrate
    ? `const { drizzle } = await import(${JSON.stringify(import.meta.resolve('drizzle-orm/pglite'))});
const { migrate } = await import(${JSON.stringify(import.meta.url)});
await migrate({ db: drizzle(pg) });`
    : ''
}
await pg.close();`;
  const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'ignore', stderr: 'pipe', env: process.env });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  try {
    if (code !== 0) throw new Error(stderr.trim().split('\n')[0] || `exit code ${code}`);
    renameSync(building, dataDir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    console.error(`toolgate: initdb in a child process failed, running it in process: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * One full, synchronous garbage collection (Bun only; a no-op elsewhere), for moments no request waits on: the end of
 * start-up and a closed embedded database. Their garbage (initdb's, the migrations', a closed PGlite instance's
 * WebAssembly memory) would otherwise stay resident until the heap grows enough for a full collection (decision 0194).
 */
export function collectGarbage(): void {
  if (typeof Bun !== 'undefined') Bun.gc(true);
}

async function openPglite(dataDir: string | null): Promise<Store> {
  if (dataDir) await initPgliteDataDir(dataDir, { migrate: true });
  const options = await embeddedPgliteOptions(STORE_SHARED_BUFFERS_MB);
  const pg = dataDir
    ? new PGlite(dataDir, options)
    : await openInMemoryPglite(options, async (fresh) => {
        await migrate({ db: drizzlePglite(fresh, { schema }) as unknown as Db });
      });
  await pg.waitReady;
  const db = drizzlePglite(pg, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    execScript: async (script) => {
      await pg.exec(script);
    },
    close: () => pg.close(),
  };
}

/** Applies pending migrations inside one transaction holding an advisory lock, so concurrent instances never race. */
export async function migrate(store: Pick<Store, 'db'>, list: Migration[] = migrations): Promise<number[]> {
  const applied: number[] = [];
  await store.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(7263311001)`);
    // Created under the lock: concurrent `CREATE TABLE IF NOT EXISTS` on a fresh database races on pg_type.
    await tx.execute(
      sql.raw(`CREATE TABLE IF NOT EXISTS toolgate_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`),
    );
    const done = await tx.execute<{ version: number }>(sql`SELECT version FROM toolgate_migrations`);
    const have = new Set(rowsOf<{ version: number }>(done).map((r) => Number(r.version)));
    for (const migration of [...list].sort((a, b) => a.version - b.version)) {
      if (have.has(migration.version)) continue;
      // Statements run one by one on the transaction (the extended protocol takes one statement per message).
      for (const statement of splitStatements(migration.sql)) await tx.execute(sql.raw(statement));
      await tx.execute(sql`INSERT INTO toolgate_migrations (version, name) VALUES (${migration.version}, ${migration.name})`);
      applied.push(migration.version);
    }
  });
  return applied;
}

const dialect = new PgDialect();

/**
 * The one path for a statement written as SQL text that runs prepared (the rule: docs/decisions/0160). Statements
 * built with drizzle's builder use its `.prepare(name)` instead; both end in drizzle's own `session.prepareQuery`, the
 * driver adapter every builder query goes through, with a name: on PostgreSQL, postgres.js then prepares the text once
 * per connection (in a transaction, the transaction's connection) and sends Bind + Execute only; on PGlite it runs as
 * any query does. drizzle's `execute` passes no name, and postgres.js sends an unnamed statement with parameters as
 * Parse + Describe first and waits for the answer before it binds: one more round trip, and a parse and plan on the
 * server, each time. Only for statements whose text never varies (each connection keeps every text it prepared).
 */
export async function executePrepared<T>(db: Queryable, name: string, query: SQL): Promise<T[]> {
  return rowsOf<T>(await db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false).execute());
}

/**
 * Builder queries run prepared (`.prepare(name)`) are built once per database handle: no query building per call.
 * The cache is keyed by handle, so a transaction's handle gets its own.
 */
export function preparedFor<D extends object, P>(cache: WeakMap<D, P>, db: D, build: (db: D) => P): P {
  let prepared = cache.get(db);
  if (prepared === undefined) {
    prepared = build(db);
    cache.set(db, prepared);
  }
  return prepared;
}

/**
 * An object a database handle shares with every transaction opened on it, and no other handle does: drizzle's dialect
 * of the handle (drizzle passes it to each transaction). For state bound to a store (audit/mac.ts's key). The one
 * read of a drizzle field outside its typed API, kept here in store/.
 */
export function handleIdentity(db: Queryable): object {
  return (db as unknown as { dialect: object }).dialect;
}

const ARRAY_FORMS = {
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
} as const;

/**
 * Values as one PostgreSQL array literal (a single text parameter, cast to `uuid[]`, `date[]` or `bigint[]` in the
 * statement), for sets a statement joins with a table. Arrays and not one JSON parameter: the planner counts the
 * elements of an array it is given (`unnest`; 10 in a generic plan), while it guesses 100 rows for
 * jsonb_to_recordset, and with 100 guessed rows it joins a table by a hash over a scan of all of it instead of probing
 * its key once per value. Each value is checked against its form first (uuid, date, safe integer), so none can carry
 * the literal's braces, commas or quotes; a value that is not of its form throws before anything is sent.
 */
export function arrayParam(kind: 'uuid' | 'date' | 'bigint', values: readonly (string | number)[]): string {
  const parts = values.map((value) => {
    const ok = kind === 'bigint' ? typeof value === 'number' && Number.isSafeInteger(value) : typeof value === 'string' && ARRAY_FORMS[kind].test(value);
    if (!ok) throw new TypeError(`${JSON.stringify(value)} is not a ${kind === 'bigint' ? 'safe integer' : kind}`);
    return String(value);
  });
  return `{${parts.join(',')}}`;
}

/** Rows of a raw `execute` result: postgres-js returns an array, PGlite an object with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** Splits a migration script on statement-ending semicolons; migrations keep semicolons out of literals (bodies are dollar-quoted). */
function splitStatements(script: string): string[] {
  // A `;` at the end of a line ends a statement, except inside a dollar-quoted body (a function's `$f$ ... $f$`).
  const statements: string[] = [];
  let current = '';
  let quoted = false;
  for (const part of script.split(/(\$[A-Za-z_]*\$)/)) {
    if (/^\$[A-Za-z_]*\$$/.test(part)) {
      quoted = !quoted;
      current += part;
      continue;
    }
    if (quoted) {
      current += part;
      continue;
    }
    const pieces = part.split(/;\s*(?:\n|$)/);
    if (pieces.length === 1) {
      current += part;
      continue;
    }
    statements.push(current + pieces[0]!, ...pieces.slice(1, -1));
    current = pieces[pieces.length - 1]!;
  }
  statements.push(current);
  return statements.map((s) => s.trim()).filter(Boolean);
}

/** Whether the store answers a trivial query (the health check). */
/** Whether the store answers and holds every migration this build knows (readiness); unreachable when it does not answer. */
export async function schemaState(db: Db): Promise<'done' | 'pending' | 'unreachable'> {
  try {
    const result = await db.execute<{ version: number }>(sql`SELECT version FROM toolgate_migrations`);
    const have = new Set(rowsOf<{ version: number }>(result).map((r) => Number(r.version)));
    return migrations.every((m) => have.has(m.version)) ? 'done' : 'pending';
  } catch (err) {
    // The table itself missing (undefined_table) means nothing was migrated; anything else, no answer.
    const e = err as { code?: string; cause?: { code?: string } };
    return e.code === '42P01' || e.cause?.code === '42P01' ? 'pending' : 'unreachable';
  }
}

export async function storeReachable(db: Db): Promise<boolean> {
  try {
    await db.execute(sql`SELECT 1`);
    return true;
  } catch {
    return false;
  }
}

/** The store server's max_connections, read once at start (the connection budget keeps the store's reserve below it). */
export async function maxConnections(db: Db): Promise<number | null> {
  const rows = rowsOf<{ max_connections: string }>(await db.execute(sql`SHOW max_connections`));
  const max = Number(rows[0]?.max_connections);
  return Number.isFinite(max) ? max : null;
}

/**
 * Runs `read` on one connection of a PostgreSQL store and cancels its statement (pg_cancel_backend) when `signal`
 * aborts, i.e. when the HTTP caller went away: a slow read must not keep running for nobody. The cancel names the
 * backend and its transaction's start, so it can never hit a later transaction on the same pooled connection. PGlite
 * runs one statement at a time in this process and has nothing to cancel from outside: `read` runs as it is.
 */
export async function cancellable<T>(store: Pick<Store, 'db' | 'kind'>, signal: AbortSignal | undefined, read: (db: Queryable) => Promise<T>): Promise<T> {
  if (!signal || store.kind !== 'postgres') return read(store.db);
  signal.throwIfAborted();
  return store.db.transaction(async (tx) => {
    const [self] = rowsOf<{ pid: number; started: string }>(await tx.execute(sql`SELECT pg_backend_pid() AS pid, now()::text AS started`));
    const cancel = () => {
      store.db
        .execute(sql`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE pid = ${self!.pid} AND xact_start = ${self!.started}::timestamptz`)
        .catch(() => {});
    };
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await read(tx);
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  });
}
