/**
 * The `oracle` connector driver: node-oracledb in thin mode (pure JavaScript, no Instant Client), one pool per
 * connector, one tool per table or view. Calls are read-only (docs/decisions/0116-new-types-read-only.md):
 *
 *  - the guard (guard/guard.ts) admits one SELECT over the tool's table;
 *  - every call runs in a transaction opened with SET TRANSACTION READ ONLY (the server refuses any write in it,
 *    ORA-01456) and is rolled back; CURRENT_SCHEMA is the tool's schema, so one-part names resolve there;
 *  - rows are read through a result set and the cursor closed at the row or byte cap; the statement timeout is
 *    oracledb's callTimeout (on expiry the driver sends a break, which stops the statement on the server, and the
 *    connection is dropped from the pool); an aborted call is broken the same way (connection.break()).
 */
import oracledb from 'oracledb';
import { ConnectorError, type DatabaseConfig } from '../types.ts';
import { PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { assertConnectTarget, refusedTargetText } from '../shared/outbound.ts';
import { DEFAULT_ORACLE_PORT, oracleConfigSchema } from './config.ts';
import { guardOracleSql } from './guard/guard.ts';
import { bindPositional } from '../shared/saved.ts';
import { ORACLE_MARKERS, ORACLE_SYNTAX } from './saved.ts';
import type { Dialect } from '../shared/prepare.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';

import { callErrorText, connectorError, type ErrorContext } from './errors.ts';
import { exposedSchemas, introspectOracle, OBJ, oracleName, schemasOf } from './introspect.ts';
import { executeOracle } from './execute.ts';

/** Accounts of the server itself: their objects are never exposed. */
const SYSTEM_SCHEMAS = new Set([
  'SYS',
  'SYSTEM',
  'SYSBACKUP',
  'SYSDG',
  'SYSKM',
  'SYSRAC',
  'AUDSYS',
  'OUTLN',
  'XDB',
  'DBSNMP',
  'APPQOSSYS',
  'CTXSYS',
  'DVSYS',
  'DVF',
  'GSMADMIN_INTERNAL',
  'LBACSYS',
  'MDSYS',
  'OJVMSYS',
  'OLAPSYS',
  'ORDSYS',
  'ORDDATA',
  'WMSYS',
  'GGSYS',
  'ANONYMOUS',
  'PUBLIC',
  'REMOTE_SCHEDULER_AGENT',
  'DBSFWUSER',
  'GSMCATUSER',
  'GSMUSER',
  'SYS$UMF',
]);
interface OraPool {
  attrs: oracledb.PoolAttributes;
  pool: Promise<oracledb.Pool> | null;
}

/** The pool, created on first use; a creation that failed (database down) is retried on the next call. */
function poolOf(p: OraPool): Promise<oracledb.Pool> {
  if (!p.pool) {
    const creating = oracledb.createPool(p.attrs);
    p.pool = creating;
    creating.catch(() => {
      if (p.pool === creating) p.pool = null;
    });
  }
  return p.pool;
}

export function oracleConnectString(config: DatabaseConfig): string {
  const tls = config.tls ?? 'disable';
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const base = `${host}:${config.port ?? DEFAULT_ORACLE_PORT}/${config.database}`;
  return tls === 'disable' ? base : `tcps://${base}?ssl_server_dn_match=${tls === 'verify-full' ? 'on' : 'off'}`;
}

function attributes(config: DatabaseConfig, credential: string | null, settings: PoolSettings): oracledb.ConnectionAttributes {
  return {
    user: config.user,
    password: credential ?? '',
    connectString: oracleConnectString(config),
    connectTimeout: Math.max(1, Math.ceil(settings.connectTimeoutMs / 1000)),
    transportConnectTimeout: Math.max(1, Math.ceil(settings.connectTimeoutMs / 1000)),
  } as oracledb.ConnectionAttributes;
}

const pools = new PoolRegistry<OraPool>({
  open: (config, credential, settings) => ({
    attrs: {
      ...attributes(config, credential, settings),
      poolMin: 0,
      poolMax: settings.max,
      poolIncrement: 1,
      poolTimeout: Math.max(1, Math.ceil(settings.idleMs / 1000)),
      queueTimeout: 60_000,
    } as oracledb.PoolAttributes,
    pool: null,
  }),
  end: async (p) => {
    const pool = await p.pool?.catch(() => null);
    await pool?.close(0).catch(() => undefined);
  },
});

export function configureOraclePools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

const errorContext = (config: DatabaseConfig, credential: string | null, statementTimeoutMs?: number): ErrorContext => ({
  config,
  credential,
  connectTimeoutMs: pools.currentSettings.connectTimeoutMs,
  statementTimeoutMs,
});

function checkConfig(config: DatabaseConfig): void {
  const system = (exposedSchemas(config) ?? [oracleName(config.user)]).filter((s) => SYSTEM_SCHEMAS.has(s));
  if (system.length)
    throw new ConnectorError(`schema ${system.join(', ')} belongs to the database itself; its tables cannot be exposed as tools`, 'invalid_config');
}

async function withConnection<T>(config: DatabaseConfig, credential: string | null, fn: (conn: oracledb.Connection) => Promise<T>): Promise<T> {
  const conn = await oracledb.getConnection(attributes(config, credential, pools.currentSettings));
  try {
    conn.callTimeout = 30_000;
    return await fn(conn);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** The guard, and how a saved statement's values are bound (`:1`, `:2`, ...). */
export const ORACLE_DIALECT: Dialect = {
  name: 'oracle',
  guardSpan: 'guard oracle',
  syntax: ORACLE_SYNTAX,
  guard: guardOracleSql,
  // Issue 38 at guard level: its guard reads the connector's tables (hidden columns kept out, no rewrite).
  tables: true,
  bind: (saved, args, sample) => bindPositional(ORACLE_MARKERS, saved, args, sample),
};

export const oracleDriver = defineSqlDriver({
  dialect: ORACLE_DIALECT,
  readOnly: true,
  configSchema: oracleConfigSchema,
  pools,

  async validate(_connectorId, config, credential, env = {}) {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_ORACLE_PORT);
      checkConfig(config);
      await withConnection(config, credential, async (conn) => {
        await conn.execute('SELECT 1 FROM dual');
        const schemas = await schemasOf(conn, config);
        const binds: Record<string, string> = {};
        for (const [i, s] of schemas.entries()) binds[`s${i}`] = s;
        const r = await conn.execute<{ U: string }>(
          `SELECT username AS u FROM all_users WHERE username IN (${schemas.map((_, i) => `:s${i}`).join(', ')})`,
          binds,
          OBJ,
        );
        const have = new Set((r.rows ?? []).map((x) => x.U));
        const missing = schemas.filter((s) => !have.has(s));
        if (missing.length)
          throw new ConnectorError(
            `schema ${missing.join(', ')} does not exist on ${config.host}:${config.port ?? DEFAULT_ORACLE_PORT}/${config.database}`,
            'invalid_config',
          );
      });
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'connection_failed');
    }
  },

  async introspect(_connectorId, config, credential, env = {}) {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_ORACLE_PORT);
      checkConfig(config);
      return await withConnection(config, credential, (conn) => introspectOracle(conn, config));
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  // Checked at every call: this driver connects by name itself, so the policy sees the name's current answer here.
  precheck: (ctx) => refusedTargetText(ctx.outbound, ctx.config, DEFAULT_ORACLE_PORT),
  run: async (p, tool, prepared, ctx) => executeOracle(await poolOf(p), tool, prepared, ctx, pools.currentSettings.connectTimeoutMs),
  callErrorText: (err, ctx) => callErrorText(err, errorContext(ctx.config, ctx.credential, ctx.limits.statementTimeoutMs)),
});
