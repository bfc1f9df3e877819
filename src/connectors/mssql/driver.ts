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
import { ConnectorError, type DatabaseConfig, type ExecutionContext } from '../types.ts';
import { PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { assertConnectTarget, refusedTargetText } from '../shared/outbound.ts';
import { dialChecked } from '../../net/dial.ts';
import type { OutboundPolicy } from '../../net/policy.ts';
import { DEFAULT_MSSQL_PORT, mssqlConfigSchema } from './config.ts';
import { guardMssqlSql } from './guard/guard.ts';
import { bindPositional } from '../shared/saved.ts';
import { MSSQL_MARKERS, MSSQL_SYNTAX } from './saved.ts';
import type { Dialect } from '../shared/prepare.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';

import { callErrorText, connectorError, type ErrorContext } from './errors.ts';
import { DEFAULT_MSSQL_SCHEMAS, introspectMssql } from './introspect.ts';
import { executeMssql } from './execute.ts';

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

/** The guard, and how a saved statement's values are bound (`@p1`, `@p2`, ...). */
export const MSSQL_DIALECT: Dialect = {
  name: 'mssql',
  guardSpan: 'guard mssql',
  syntax: MSSQL_SYNTAX,
  guard: guardMssqlSql,
  // Issue 38 at guard level: its guard reads the connector's tables (hidden columns kept out, no rewrite).
  tables: true,
  bind: (saved, args, sample) => bindPositional(MSSQL_MARKERS, saved, args, sample),
};

export const mssqlDriver = defineSqlDriver({
  dialect: MSSQL_DIALECT,
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
  run: async (p, tool, prepared, ctx) => executeMssql(await ready(p), tool, prepared, ctx, pools.currentSettings.connectTimeoutMs),
  callErrorText: (err, ctx) => callErrorText(err, errorContext(ctx.config, ctx.credential, ctx.limits)),
});
