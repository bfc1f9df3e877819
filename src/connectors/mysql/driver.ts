/** The `mysql` connector driver (MySQL and MariaDB): mysql2 pools per connector, one tool per table or view. */
import mysql from 'mysql2/promise';
import { ConnectorError, type DatabaseConfig, type SqlToolSpec } from '../types.ts';
import { PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { serverKey } from '../shared/budget.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';
import { DEFAULT_MYSQL_PORT, mysqlConfigSchema } from './config.ts';
import { applySession, endMyPool, flavourOf, mysqlOptions, openMyPool, type MyOpen, type MyPool } from './pool.ts';
import { exposedSchemas, introspectMysql, readNameMode } from './introspect.ts';
import { isSystemDatabase, sameName } from './guard/names.ts';
import { loadMysqlGuard, MYSQL_DIALECT, mysqlGuardReady, runMysqlCall } from './execute.ts';
import { myCallErrorText, myConnectorError, type MyErrorContext } from './errors.ts';

const pools = new PoolRegistry<MyPool, MyOpen>({
  type: 'mysql',
  open: openMyPool,
  end: endMyPool,
  server: (config) => serverKey(config.host, config.port ?? DEFAULT_MYSQL_PORT),
});

/** Pool size, idle close and connect timeout for pools opened from now on (defaults: 10, 5 min, 5 s). */
export function configureMysqlPools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

/** The pool a connector uses (opening it if needed): for benchmarks and tests comparing with bare queries. */
export function mysqlPoolFor<T>(connectorId: string, config: DatabaseConfig, credential: string | null, fn: (p: MyPool) => Promise<T>): Promise<T> {
  return pools.use(connectorId, config, credential, fn);
}

function errorContext(config: DatabaseConfig, credential: string | null): MyErrorContext {
  return { config, credential, connectTimeoutMs: pools.currentSettings.connectTimeoutMs };
}

export const mysqlDriver = defineSqlDriver<MyPool, MyOpen>({
  dialect: MYSQL_DIALECT,
  configSchema: mysqlConfigSchema,
  pools,

  async validate(_connectorId, config, credential, env = {}) {
    // A throwaway connection: credentials under test must not replace a working pool.
    let conn: mysql.Connection | null = null;
    try {
      conn = await mysql.createConnection(mysqlOptions(config, credential, pools.currentSettings.connectTimeoutMs, env.outbound));
      await conn.query('SELECT 1');
      // Database names are compared as this server compares them (lower_case_table_names): on a case-sensitive
      // server `SHOP` is not `shop`, and the system databases are never exposed as tools.
      const mode = await readNameMode(conn);
      const schemas = exposedSchemas(config);
      const system = schemas.filter((s) => isSystemDatabase(s, mode));
      if (system.length)
        throw new ConnectorError(`database ${system.join(', ')} is a system database; its tables cannot be exposed as tools`, 'invalid_config');
      const [rows] = await conn.query('SELECT SCHEMA_NAME AS s FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (?)', [schemas]);
      const found = (rows as { s: string }[]).map((r) => r.s);
      const missing = schemas.filter((s) => !found.some((f) => sameName(f, s, mode)));
      if (missing.length)
        throw new ConnectorError(`database ${missing.join(', ')} does not exist on ${config.host}:${config.port ?? DEFAULT_MYSQL_PORT}`, 'invalid_config');
    } catch (err) {
      throw myConnectorError(err, errorContext(config, credential), 'connection_failed');
    } finally {
      conn?.destroy();
    }
  },

  async introspect(connectorId, config, credential, env = {}): Promise<SqlToolSpec[]> {
    // Calls will follow: load the guard's parser now (a failure surfaces, as a tool result, on the first call).
    loadMysqlGuard().catch(() => {});
    try {
      return await pools.use(
        connectorId,
        config,
        credential,
        async (p) => {
          const flavour = await flavourOf(p);
          const conn = await p.pool.getConnection();
          try {
            // Catalog queries can be slow on big servers: a generous limit rather than the call limits.
            await applySession(conn, flavour, { database: config.database, readOnly: true, statementTimeoutMs: 30_000, lockTimeoutS: 10 });
            return await introspectMysql(conn, config);
          } finally {
            conn.release();
          }
        },
        { outbound: env.outbound },
      );
    } catch (err) {
      throw myConnectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  precheck: () => mysqlGuardReady(),
  guardReady: () => mysqlGuardReady(),
  openWith: (ctx) => ({ outbound: ctx.outbound }),
  run: (p, tool, prepared, ctx) => runMysqlCall(p, tool, prepared, ctx, pools.currentSettings.connectTimeoutMs),
  // runMysqlCall does not throw; this is the pool failing in an unexpected way.
  callErrorText: (err, ctx) => myCallErrorText(err, errorContext(ctx.config, ctx.credential)),
});
