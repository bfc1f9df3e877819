/** The `postgresql` connector driver: postgres.js pools per connector, one tool per table or view. */
import { ConnectorError, type DatabaseConfig, type ExecutionLimits, type SqlToolSpec } from '../types.ts';
import { PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';
import { serverKey } from '../shared/budget.ts';
import { DEFAULT_PG_PORT, postgresqlConfigSchema } from './config.ts';
import { endPgPool, openPgPool, pgSideTokens, type PgOpen, type PgPool, type PgSession } from './pool.ts';
import { dialChecked } from '../../net/dial.ts';
import { embeddedDatabaseFor } from '../shared/embedded.ts';
import type { OutboundPolicy } from '../../net/policy.ts';
import { introspectPg, DEFAULT_PG_SCHEMAS } from './introspect.ts';
import { PG_DIALECT, runPgCall, type PgExecutionContext } from './execute.ts';
import { TEMP_PRIVILEGE_MISSING } from './resolution-common.ts';
import { pgCallErrorText, pgConnectorError, type PgErrorContext } from './errors.ts';
import { loadPgGuard, pgGuardReady } from './guard/lazy.ts';

const pools = new PoolRegistry<PgPool, PgOpen>({
  type: 'postgresql',
  open: openPgPool,
  end: endPgPool,
  server: (config) => serverKey(config.host, config.port ?? DEFAULT_PG_PORT),
  sideTokens: pgSideTokens,
});

/** Pool size, idle close and connect timeout for pools opened from now on (defaults: 10, 5 min, 5 s). */
export function configurePostgresqlPools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

/** The session defaults execute gives a pool it opens: the call limits and the connector's first schema. */
function sessionFor(config: DatabaseConfig, limits: Pick<ExecutionLimits, 'statementTimeoutMs' | 'lockTimeoutMs'>): PgSession {
  return { statementTimeoutMs: limits.statementTimeoutMs, lockTimeoutMs: limits.lockTimeoutMs, schema: config.schemas?.[0] ?? DEFAULT_PG_SCHEMAS[0]! };
}

/**
 * How connections of a connector are opened: to the org's embedded database through its private socket, else to an
 * address the outbound policy checked at that moment (the name is resolved again for every connection).
 */
function socketFor(config: DatabaseConfig, env: { outbound?: OutboundPolicy; orgId?: string }): PgOpen['socket'] {
  const embedded = embeddedDatabaseFor(config.host, env.orgId);
  if (embedded) return embedded;
  const policy = env.outbound;
  if (!policy) return undefined;
  const target = { host: config.host, port: config.port ?? DEFAULT_PG_PORT, database: config.database };
  return () => dialChecked(policy, target, pools.currentSettings.connectTimeoutMs);
}

/**
 * The pool a connector uses, for benchmarks and tests comparing with bare queries. Pass the call limits when this
 * may open the pool, so it opens as execute would open it (otherwise its reads never take the one-statement path).
 */
export function postgresqlPoolFor<T>(
  connectorId: string,
  config: DatabaseConfig,
  credential: string | null,
  fn: (pool: PgPool) => Promise<T>,
  limits?: Pick<ExecutionLimits, 'statementTimeoutMs' | 'lockTimeoutMs'>,
): Promise<T> {
  return pools.use(connectorId, config, credential, fn, limits && { session: sessionFor(config, limits) });
}

/** A throwaway single connection for validate and introspect: credentials under test must not replace a working pool, and the shared pool is opened by execute with the call limits as session defaults. */
async function withSingleConnection<T>(
  config: DatabaseConfig,
  credential: string | null,
  socket: PgOpen['socket'],
  fn: (pool: PgPool) => Promise<T>,
): Promise<T> {
  const pool = openPgPool(config, credential, pools.currentSettings, { socket }, 1);
  try {
    return await fn(pool);
  } finally {
    await pool.sql.end({ timeout: 1 }).catch(() => undefined);
  }
}

function errorContext(config: DatabaseConfig, credential: string | null): PgErrorContext {
  return { config, credential, connectTimeoutMs: pools.currentSettings.connectTimeoutMs };
}

export const postgresqlDriver = defineSqlDriver<PgPool, PgOpen, PgExecutionContext>({
  // The guard's parser loads with the first call, saved statement or policy check, not with validate or introspect
  // (guard/lazy.ts, decision 0287): a call waits for it in the precheck, a saved statement in ready().
  dialect: { ...PG_DIALECT, ready: loadPgGuard },
  precheck: () => pgGuardReady(),
  guardReady: () => pgGuardReady(),
  configSchema: postgresqlConfigSchema,
  pools,

  async validate(_connectorId, config, credential, env = {}) {
    try {
      await withSingleConnection(config, credential, socketFor(config, env), async ({ sql }) => {
        await sql.unsafe('select 1');
        const schemas = config.schemas?.length ? config.schemas : DEFAULT_PG_SCHEMAS;
        const found = await sql.unsafe<{ nspname: string }[]>('select nspname from pg_catalog.pg_namespace where nspname = any($1::text[])', [schemas]);
        const missing = schemas.filter((s) => !found.some((f) => f.nspname === s));
        if (missing.length) throw new ConnectorError(`schema ${missing.join(', ')} does not exist in database ${config.database}`, 'invalid_config');
        // The server-side resolution check (resolution.ts) analyses statements in a temporary function: without
        // TEMPORARY every call would fail closed, so say so here, where it lands in the connector's status_reason.
        const [temp] = await sql.unsafe<{ ok: boolean }[]>(`select pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMPORARY') as ok`);
        if (!temp?.ok) throw new ConnectorError(TEMP_PRIVILEGE_MISSING(config.user, config.database), 'invalid_config');
      });
    } catch (err) {
      throw pgConnectorError(err, errorContext(config, credential), 'connection_failed');
    }
  },

  async introspect(_connectorId, config, credential, env = {}): Promise<SqlToolSpec[]> {
    try {
      return await withSingleConnection(config, credential, socketFor(config, env), ({ sql }) => introspectPg(sql, config));
    } catch (err) {
      throw pgConnectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  // The call that opens the pool gives its connections their session defaults, so that reads on the first schema's
  // tools under the same limits can take the one-statement path (see run.ts).
  // An embedded database is one session that takes one connection at a time (demo/one-connection.ts): its calls
  // queue on one pool connection instead of opening others that would wait for it.
  openWith: (ctx) => ({
    session: sessionFor(ctx.config, ctx.limits),
    socket: socketFor(ctx.config, ctx),
    ...(embeddedDatabaseFor(ctx.config.host, ctx.orgId) ? { max: 1 } : {}),
  }),
  run: (pool, tool, prepared, ctx) => runPgCall(pool, tool, prepared, ctx, pools.currentSettings.connectTimeoutMs),
  // runPgCall does not throw; this is the pool failing in an unexpected way.
  callErrorText: (err, ctx) => pgCallErrorText(err, errorContext(ctx.config, ctx.credential)),
});
