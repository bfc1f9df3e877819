/**
 * The `mssql` connector driver (SQL Server, Azure SQL): the `mssql` package over tedious, one ConnectionPool per
 * connector, one tool per table or view. Calls are read-only (docs/decisions/0116-new-types-read-only.md):
 *
 *  - the guard (guard/guard.ts) admits one SELECT over the tool's table;
 *  - SQL Server has no read-only transaction, so each call runs inside a transaction that is always rolled back,
 *    under SNAPSHOT isolation when the database allows it (no shared locks held on the rows it reads; otherwise
 *    READ COMMITTED), with SET LOCK_TIMEOUT; docs/connectors.md recommends a login holding only SELECT on the exposed
 *    schemas (db_datareader or narrower), which is what makes writes impossible on the server's side;
 *  - rows are streamed and the request is cancelled (a TDS ATTENTION: the server stops the statement) at the row or
 *    byte cap, at tedious' requestTimeout (the statement timeout) and when the call is aborted.
 */
import sql from 'mssql';
import { ConnectorError, type DatabaseConfig, type ExecutionContext, type SqlTarget, type SqlToolSpec, type ToolResult } from '../types.ts';
import { busyText, ConnectorBusyError, PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';
import { errorResult, RowCollector, type Row } from '../shared/result.ts';
import { toolNames } from '../shared/naming.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, type Described } from '../shared/errors.ts';
import { netErrorCode } from '../shared/netcause.ts';
import { assertConnectTarget, refusedTargetText } from '../shared/outbound.ts';
import { dialChecked } from '../../net/dial.ts';
import type { OutboundPolicy } from '../../net/policy.ts';
import { int64TextToJson, toJsonSafe } from '../shared/jsonsafe.ts';
import { DEFAULT_MSSQL_PORT, mssqlConfigSchema } from './config.ts';
import { guardMssqlSql } from './guard/guard.ts';
import type { PreparedCall } from '../shared/prepare.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';

export const DEFAULT_MSSQL_SCHEMAS = ['dbo'];
/** Schemas of the server's own catalogs: never exposed. */
const SYSTEM_SCHEMAS = new Set([
  'SYS',
  'INFORMATION_SCHEMA',
  'GUEST',
  'DB_OWNER',
  'DB_ACCESSADMIN',
  'DB_SECURITYADMIN',
  'DB_DDLADMIN',
  'DB_BACKUPOPERATOR',
  'DB_DATAREADER',
  'DB_DATAWRITER',
  'DB_DENYDATAREADER',
  'DB_DENYDATAWRITER',
]);
const SYSTEM_DATABASES = new Set(['MASTER', 'MODEL', 'MSDB', 'TEMPDB']);

/** Extra time given to the server's own cancellation before the client gives up on the request. */
const CLIENT_GRACE_MS = 1000;

interface MsPool {
  pool: sql.ConnectionPool;
  ready: Promise<sql.ConnectionPool> | null;
}

export function mssqlConfig(
  config: DatabaseConfig,
  credential: string | null,
  settings: PoolSettings,
  statementTimeoutMs = 30_000,
  outbound?: OutboundPolicy,
): sql.config {
  const tls = config.tls ?? 'disable';
  return {
    server: config.host,
    port: config.port ?? DEFAULT_MSSQL_PORT,
    user: config.user,
    password: credential ?? '',
    database: config.database,
    connectionTimeout: settings.connectTimeoutMs,
    // tedious cancels the request on the server (ATTENTION) when this expires.
    requestTimeout: statementTimeoutMs,
    pool: { max: settings.max, min: 0, idleTimeoutMillis: settings.idleMs },
    options: {
      encrypt: tls !== 'disable',
      trustServerCertificate: tls !== 'verify-full',
      appName: 'toolgate',
      useUTC: true,
      enableArithAbort: true,
      abortTransactionOnError: true,
      // tedious's socket hook: every connection (the configured server, and a server Azure SQL routes to) goes to an
      // address the outbound policy checked at that moment; tedious keeps the name for TLS.
      ...(outbound
        ? {
            // tedious calls it with the host and port it is about to connect to (its types omit the argument).
            connector: ((opts: { host: string; port: number }) =>
              dialChecked(outbound, { host: opts.host, port: opts.port, database: config.database }, settings.connectTimeoutMs)) as unknown as () => Promise<
              import('node:net').Socket
            >,
          }
        : {}),
    },
  };
}

function ready(p: MsPool): Promise<sql.ConnectionPool> {
  if (!p.ready) {
    const connecting = p.pool.connect();
    p.ready = connecting;
    connecting.catch(() => {
      if (p.ready === connecting) p.ready = null;
    });
  }
  return p.ready;
}

const pools = new PoolRegistry<MsPool, { statementTimeoutMs: number; outbound?: OutboundPolicy }>({
  open: (config, credential, settings, open) => ({
    pool: new sql.ConnectionPool(mssqlConfig(config, credential, settings, open?.statementTimeoutMs, open?.outbound)),
    ready: null,
  }),
  end: async (p) => {
    await p.pool.close().catch(() => undefined);
  },
});

export function configureMssqlPools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

interface ErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
}

interface MsErr {
  code?: string;
  number?: number;
  message?: string;
  originalError?: { message?: string; code?: string };
}

function describeConnect(err: unknown, ctx: ErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_MSSQL_PORT;
  const e = (typeof err === 'object' && err !== null ? err : {}) as MsErr;
  const net = describeNetworkError({ code: netErrorCode(err), cause: err }, host, port, ctx.connectTimeoutMs);
  if (net) return net;
  if (e.code === 'ELOGIN') {
    if (/database/i.test(e.message ?? '')) return { message: `user ${user} may not open database ${database}`, code: 'auth_failed' };
    return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
  }
  if (e.code === 'ETIMEOUT' && e.number === undefined && /connect/i.test(e.message ?? '')) {
    return { message: `could not connect to ${host}:${port}: no answer within ${Math.round(ctx.connectTimeoutMs / 1000)} s`, code: 'timeout' };
  }
  if (e.code === 'ESOCKET') return { message: `could not connect to ${host}:${port}`, code: 'connection_failed' };
  if (e.code === 'EENCRYPT' || e.code === 'ETLS') return { message: `TLS with ${host}:${port} failed`, code: 'connection_failed' };
  return null;
}

function connectorError(err: unknown, ctx: ErrorContext, fallback: ConnectorError['code']): ConnectorError {
  return connectorFailure(err, err instanceof ConnectorError ? null : describeConnect(err, ctx), ctx.credential, fallback);
}

function callErrorText(err: unknown, ctx: ErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  const e = (err ?? {}) as MsErr;
  if (e.code === 'ABORTED') return 'The call was aborted.';
  if (e.code === 'STATEMENT_TIMEOUT' || (e.code === 'ETIMEOUT' && e.number === undefined && !/connect/i.test(e.message ?? ''))) {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  let text: string;
  switch (e.number) {
    case 1222: // lock request time out period exceeded
      text = `The query waited more than ${ctx.lockTimeoutMs} ms for a lock and was cancelled (lock timeout).`;
      break;
    case 229: // permission denied on object
    case 230:
      text = `Permission denied: ${e.message}.`;
      break;
    case undefined:
      return INTERNAL_FAILURE_TEXT;
    default:
      text = `The database rejected the query: ${e.message} (error ${e.number}).`;
  }
  return scrub(text, ctx.credential);
}

const errorContext = (config: DatabaseConfig, credential: string | null, limits?: ExecutionContext['limits']): ErrorContext => ({
  config,
  credential,
  connectTimeoutMs: pools.currentSettings.connectTimeoutMs,
  statementTimeoutMs: limits?.statementTimeoutMs,
  lockTimeoutMs: limits?.lockTimeoutMs,
});

function checkConfig(config: DatabaseConfig): void {
  if (SYSTEM_DATABASES.has(config.database.toUpperCase()))
    throw new ConnectorError(`database ${config.database} is a system database; its tables cannot be exposed as tools`, 'invalid_config');
  const system = (config.schemas ?? []).filter((s) => SYSTEM_SCHEMAS.has(s.toUpperCase()));
  if (system.length) throw new ConnectorError(`schema ${system.join(', ')} is a system schema; its tables cannot be exposed as tools`, 'invalid_config');
}

/** A throwaway single-connection pool (validate, introspect): credentials under test must not replace a working pool. */
async function withPool<T>(
  config: DatabaseConfig,
  credential: string | null,
  outbound: OutboundPolicy | undefined,
  fn: (pool: sql.ConnectionPool) => Promise<T>,
): Promise<T> {
  const pool = new sql.ConnectionPool(mssqlConfig(config, credential, { ...pools.currentSettings, max: 1 }, 30_000, outbound));
  try {
    await pool.connect();
    return await fn(pool);
  } finally {
    await pool.close().catch(() => undefined);
  }
}

const msQuote = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `[${name.replace(/]/g, ']]')}]`);

interface CatalogRow {
  s: string;
  t: string;
  k: string;
  c: string | null;
  ty: string | null;
}

async function introspectMssql(pool: sql.ConnectionPool, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const schemas = config.schemas?.length ? config.schemas : DEFAULT_MSSQL_SCHEMAS;
  const info = await pool.request().query<{ d: string | null; coll: string | null; snap: number | null }>(
    `SELECT SCHEMA_NAME() AS d, CONVERT(nvarchar(128), DATABASEPROPERTYEX(DB_NAME(), 'Collation')) AS coll,
            (SELECT snapshot_isolation_state FROM sys.databases WHERE database_id = DB_ID()) AS snap`,
  );
  const { d: defaultSchema, coll, snap } = info.recordset[0] ?? { d: null, coll: null, snap: null };
  const caseSensitive = /_CS_|_BIN2?$|_BIN_/i.test(coll ?? '');
  const req = pool.request();
  for (const [i, s] of schemas.entries()) req.input(`s${i}`, sql.NVarChar(128), s);
  const list = schemas.map((_, i) => `@s${i}`).join(', ');
  const rows = await req.query<CatalogRow>(
    `SELECT s.name AS s, o.name AS t, o.type AS k, c.name AS c, ty.name AS ty
       FROM sys.objects o
       JOIN sys.schemas s ON s.schema_id = o.schema_id
       LEFT JOIN sys.columns c ON c.object_id = o.object_id
       LEFT JOIN sys.types ty ON ty.user_type_id = c.user_type_id
      WHERE o.type IN ('U', 'V') AND o.is_ms_shipped = 0 AND s.name IN (${list})
      ORDER BY s.name, o.name, c.column_id`,
  );
  const byKey = new Map<string, RelationInfo>();
  for (const r of rows.recordset) {
    const key = `${r.s}\u0000${r.t}`;
    let rel = byKey.get(key);
    if (!rel) byKey.set(key, (rel = { schema: r.s, table: r.t, kind: r.k.trim() === 'V' ? 'view' : 'table', columns: [] }));
    if (r.c !== null) rel.columns.push({ name: r.c, type: r.ty ?? '' });
  }
  const relations = [...byKey.values()];
  const names = toolNames('mssql', relations);
  return relations.map((rel, i) => {
    const spec = relationTool(names[i]!, rel, `${msQuote(rel.schema)}.${msQuote(rel.table)}`);
    const target: SqlTarget = { ...spec.target, caseSensitiveNames: caseSensitive, snapshot: snap === 1 };
    if (defaultSchema) target.defaultSchema = defaultSchema;
    return { ...spec, target };
  });
}

/** A row as JSON: BIGINT arrives as text, datetime2/datetime (no zone) as a UTC Date (useUTC) whose zone is dropped. */
function rowFixer(columns: Record<string, { type?: { declaration?: string } }>): (row: Row) => Row {
  const kinds = new Map<string, string>();
  for (const [name, col] of Object.entries(columns)) kinds.set(name, String(col.type?.declaration ?? '').toLowerCase());
  return (row) => {
    const out: Row = {};
    for (const [k, v] of Object.entries(row)) {
      const kind = kinds.get(k) ?? '';
      if (kind === 'bigint' && typeof v === 'string') out[k] = int64TextToJson(v);
      else if (v instanceof Date && kind === 'date') out[k] = v.toISOString().slice(0, 10);
      else if (v instanceof Date && (kind === 'datetime' || kind === 'datetime2' || kind === 'smalldatetime')) out[k] = v.toISOString().slice(0, -1);
      else if (v instanceof Date && kind === 'time') out[k] = v.toISOString().slice(11, -1);
      else out[k] = toJsonSafe(v);
    }
    return out;
  };
}

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

async function executeMssql(pool: sql.ConnectionPool, tool: SqlToolSpec, prepared: PreparedCall, ctx: ExecutionContext): Promise<ToolResult> {
  const errCtx = errorContext(ctx.config, ctx.credential, ctx.limits);
  if (ctx.signal?.aborted) return errorResult(callErrorText(failure('ABORTED'), errCtx));
  const collector = new RowCollector(prepared.maxRows, ctx.limits.maxResultBytes);
  const tx = new sql.Transaction(pool);
  let began = false;
  try {
    await tx.begin(tool.target.snapshot ? sql.ISOLATION_LEVEL.SNAPSHOT : sql.ISOLATION_LEVEL.READ_COMMITTED);
    began = true;
    await new sql.Request(tx).batch(`SET LOCK_TIMEOUT ${Math.max(0, Math.floor(ctx.limits.lockTimeoutMs))}`);
    // The caller left while the transaction was being opened: the statement is never sent (rolled back below).
    if (ctx.signal?.aborted) throw failure('ABORTED');
    await new Promise<void>((resolve, reject) => {
      const req = new sql.Request(tx);
      req.stream = true;
      let fix: ((row: Row) => Row) | null = null;
      let stoppedFor: 'CAP' | 'STATEMENT_TIMEOUT' | 'ABORTED' | null = null;
      const stop = (why: 'CAP' | 'STATEMENT_TIMEOUT' | 'ABORTED'): void => {
        if (stoppedFor) return;
        stoppedFor = why;
        req.cancel(); // a TDS ATTENTION: the server stops the statement
      };
      const onAbort = (): void => stop('ABORTED');
      // Backstop when tedious' own requestTimeout (the pool's) is longer than this call's limit.
      const timer = setTimeout(() => stop('STATEMENT_TIMEOUT'), ctx.limits.statementTimeoutMs + CLIENT_GRACE_MS);
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (err: unknown): void => {
        clearTimeout(timer);
        ctx.signal?.removeEventListener('abort', onAbort);
        if (stoppedFor === 'CAP') resolve();
        else if (stoppedFor) reject(failure(stoppedFor));
        else if (err) reject(err);
        else resolve();
      };
      req.on('recordset', (columns: Record<string, { type?: { declaration?: string } }>) => (fix = rowFixer(columns)));
      req.on('row', (row: Row) => {
        if (stoppedFor) return;
        if (!collector.add(fix ? fix(row) : (toJsonSafe(row) as Row))) stop('CAP');
      });
      let error: unknown = null;
      req.on('error', (err: unknown) => (error ??= err));
      req.on('done', () => settle(error));
      req.query(prepared.statement);
    });
    return collector.result();
  } catch (err) {
    return errorResult(callErrorText(err, errCtx));
  } finally {
    // Whatever the statement did (it should have only read) is undone.
    if (began) await tx.rollback().catch(() => undefined);
  }
}

export const mssqlDriver = defineSqlDriver({
  dialect: { name: 'mssql', guard: guardMssqlSql },
  readOnly: true,
  configSchema: mssqlConfigSchema,
  pools,

  async validate(_connectorId, config, credential, env = {}) {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_MSSQL_PORT);
      checkConfig(config);
      await withPool(config, credential, env.outbound, async (pool) => {
        await pool.request().query('SELECT 1 AS ok');
        const schemas = config.schemas?.length ? config.schemas : DEFAULT_MSSQL_SCHEMAS;
        const req = pool.request();
        for (const [i, s] of schemas.entries()) req.input(`s${i}`, sql.NVarChar(128), s);
        const found = await req.query<{ name: string }>(`SELECT name FROM sys.schemas WHERE name IN (${schemas.map((_, i) => `@s${i}`).join(', ')})`);
        const have = new Set(found.recordset.map((r) => r.name.toUpperCase()));
        const missing = schemas.filter((s) => !have.has(s.toUpperCase()));
        if (missing.length) throw new ConnectorError(`schema ${missing.join(', ')} does not exist in database ${config.database}`, 'invalid_config');
      });
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'connection_failed');
    }
  },

  async introspect(_connectorId, config, credential, env = {}) {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_MSSQL_PORT);
      checkConfig(config);
      return await withPool(config, credential, env.outbound, (pool) => introspectMssql(pool, config));
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  // Checked at every call: this driver connects by name itself, so the policy sees the name's current answer here.
  precheck: (ctx) => refusedTargetText(ctx.outbound, ctx.config, DEFAULT_MSSQL_PORT),
  openWith: (ctx) => ({ statementTimeoutMs: ctx.limits.statementTimeoutMs, outbound: ctx.outbound }),
  run: async (p, tool, prepared, ctx) => executeMssql(await ready(p), tool, prepared, ctx),
  callErrorText: (err, ctx) => callErrorText(err, errorContext(ctx.config, ctx.credential, ctx.limits)),
});
