/** The `postgresql` connector driver: postgres.js pools per connector, one tool per table or view. */
import { ConnectorError, type ConnectorDriver, type DatabaseConfig, type ToolSpec } from '../types.ts';
import { registerConnector } from '../registry.ts';
import { PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { databaseConfigSchema } from '../shared/toolspec.ts';
import { errorResult } from '../shared/result.ts';
import { endPgPool, openPgPool, DEFAULT_PG_PORT, type PgSql } from './pool.ts';
import { introspectPg, DEFAULT_PG_SCHEMAS } from './introspect.ts';
import { executePg } from './execute.ts';
import { pgCallErrorText, pgConnectorError, type PgErrorContext } from './errors.ts';

const pools = new PoolRegistry<PgSql>({ open: openPgPool, end: endPgPool });

/** Pool size, idle close and connect timeout for pools opened from now on (defaults: 10, 5 min, 5 s). */
export function configurePostgresqlPools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

/** The pool a connector uses (opening it if needed): for benchmarks and tests comparing with bare queries. */
export function postgresqlPoolFor<T>(connectorId: string, config: DatabaseConfig, credential: string | null, fn: (sql: PgSql) => Promise<T>): Promise<T> {
  return pools.use(connectorId, config, credential, fn);
}

function errorContext(config: DatabaseConfig, credential: string | null): PgErrorContext {
  return { config, credential, connectTimeoutMs: pools.currentSettings.connectTimeoutMs };
}

export const postgresqlDriver: ConnectorDriver = {
  type: 'postgresql',
  kind: 'database',
  configSchema: databaseConfigSchema({
    defaultPort: DEFAULT_PG_PORT,
    identifierPattern: '^[A-Za-z_][A-Za-z0-9_$]*$',
    identifierMaxLength: 63,
  }),

  async validate(_connectorId, config, credential) {
    // A throwaway single connection: credentials under test must not replace a working pool.
    const sql = openPgPool(config, credential, pools.currentSettings, 1);
    try {
      await sql.unsafe('select 1');
      const schemas = config.schemas?.length ? config.schemas : DEFAULT_PG_SCHEMAS;
      const found = await sql.unsafe<{ nspname: string }[]>('select nspname from pg_catalog.pg_namespace where nspname = any($1::text[])', [schemas]);
      const missing = schemas.filter((s) => !found.some((f) => f.nspname === s));
      if (missing.length) throw new ConnectorError(`schema ${missing.join(', ')} does not exist in database ${config.database}`, 'invalid_config');
    } catch (err) {
      throw pgConnectorError(err, errorContext(config, credential), 'connection_failed');
    } finally {
      await sql.end({ timeout: 1 }).catch(() => undefined);
    }
  },

  async introspect(connectorId, config, credential): Promise<ToolSpec[]> {
    try {
      return await pools.use(connectorId, config, credential, (sql) => introspectPg(sql, config));
    } catch (err) {
      throw pgConnectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  async execute(tool, args, ctx) {
    try {
      return await pools.use(ctx.connectorId, ctx.config, ctx.credential, (sql) =>
        executePg(sql, tool, args, ctx, pools.currentSettings.connectTimeoutMs),
      );
    } catch (err) {
      // executePg does not throw; this is the guard module or the pool failing in an unexpected way.
      return errorResult(pgCallErrorText(err, errorContext(ctx.config, ctx.credential)));
    }
  },

  close: (connectorId) => pools.close(connectorId),
  closeAll: () => pools.closeAll(),
};

registerConnector(postgresqlDriver);
