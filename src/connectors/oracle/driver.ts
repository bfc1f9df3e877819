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
import { ConnectorError, type DatabaseConfig, type ExecutionContext, type SqlToolSpec, type ToolResult } from '../types.ts';
import { busyText, ConnectorBusyError, PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';
import { errorResult, RowCollector, type Row } from '../shared/result.ts';
import { toolNames } from '../shared/naming.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, type Described } from '../shared/errors.ts';
import { netErrorCode } from '../shared/netcause.ts';
import { assertConnectTarget, refusedTargetText } from '../shared/outbound.ts';
import { decimalTextToJson, timestampTextToIso, timestamptzTextToIso, toJsonSafe } from '../shared/jsonsafe.ts';
import { DEFAULT_ORACLE_PORT, oracleConfigSchema } from './config.ts';
import { guardOracleSql } from './guard/guard.ts';
import type { PreparedCall } from '../shared/prepare.ts';
import { defineSqlDriver } from '../shared/sql-driver.ts';

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
const CLIENT_GRACE_MS = 1000;

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

/** An unquoted Oracle name is stored upper-case; anything else is taken as written. */
export const oracleName = (name: string): string => (/^[A-Za-z][A-Za-z0-9_$#]*$/.test(name) ? name.toUpperCase() : name);

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

interface ErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
}

interface OraErr {
  code?: string;
  errorNum?: number;
  message?: string;
}

function describeConnect(err: unknown, ctx: ErrorContext): Described | null {
  const { host, user, database } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_ORACLE_PORT;
  const e = (typeof err === 'object' && err !== null ? err : {}) as OraErr;
  const net = describeNetworkError({ code: netErrorCode(err), cause: err }, host, port, ctx.connectTimeoutMs);
  if (net) return net;
  switch (e.code) {
    case 'ORA-01017':
      return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
    case 'ORA-28000':
      return { message: `the account of user ${user} is locked`, code: 'auth_failed' };
    case 'ORA-12514':
    case 'ORA-12505':
      return { message: `service ${database} is not known on ${host}:${port}`, code: 'invalid_config' };
    case 'NJS-503':
    case 'NJS-501':
    case 'NJS-500':
      return { message: `could not connect to ${host}:${port}`, code: 'connection_failed' };
    case 'NJS-515':
      return { message: `${host}:${port}/${database} is not an address oracledb accepts (host:port/service_name)`, code: 'invalid_config' };
    case 'NJS-510':
      return { message: `could not connect to ${host}:${port}: no answer within ${Math.round(ctx.connectTimeoutMs / 1000)} s`, code: 'timeout' };
  }
  return null;
}

function connectorError(err: unknown, ctx: ErrorContext, fallback: ConnectorError['code']): ConnectorError {
  return connectorFailure(err, err instanceof ConnectorError ? null : describeConnect(err, ctx), ctx.credential, fallback);
}

function callErrorText(err: unknown, ctx: ErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  const e = (err ?? {}) as OraErr;
  if (e.code === 'ABORTED' || e.code === 'ORA-01013') return 'The call was aborted.';
  if (e.code === 'STATEMENT_TIMEOUT' || e.code === 'NJS-123' || e.code === 'DPI-1067') {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  if (e.code === 'ORA-01456') return 'The statement tried to write, but this call runs read-only.';
  if (e.code === 'ORA-01031' || e.code === 'ORA-00942') return scrub(`The database rejected the query: ${e.message}.`, ctx.credential);
  if (typeof e.code === 'string' && e.code.startsWith('ORA-')) return scrub(`The database rejected the query: ${e.message}.`, ctx.credential);
  return INTERNAL_FAILURE_TEXT;
}

const errorContext = (config: DatabaseConfig, credential: string | null, statementTimeoutMs?: number): ErrorContext => ({
  config,
  credential,
  connectTimeoutMs: pools.currentSettings.connectTimeoutMs,
  statementTimeoutMs,
});

function exposedSchemas(config: DatabaseConfig): string[] | null {
  return config.schemas?.length ? config.schemas.map(oracleName) : null;
}

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

const OBJ = { outFormat: oracledb.OUT_FORMAT_OBJECT };

async function schemasOf(conn: oracledb.Connection, config: DatabaseConfig): Promise<string[]> {
  const given = exposedSchemas(config);
  if (given) return given;
  const r = await conn.execute<{ S: string }>(`SELECT SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') AS s FROM dual`, [], OBJ);
  return [r.rows?.[0]?.S ?? oracleName(config.user)];
}

const oraQuote = (name: string): string => (/^[A-Z][A-Z0-9_$#]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);

async function introspectOracle(conn: oracledb.Connection, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const schemas = await schemasOf(conn, config);
  const binds: Record<string, string> = {};
  for (const [i, s] of schemas.entries()) binds[`s${i}`] = s;
  const list = schemas.map((_, i) => `:s${i}`).join(', ');
  const r = await conn.execute<{ S: string; T: string; K: string; C: string | null; TY: string | null }>(
    `SELECT o.owner AS s, o.object_name AS t, o.object_type AS k, c.column_name AS c, c.data_type AS ty
       FROM all_objects o
       LEFT JOIN all_tab_columns c ON c.owner = o.owner AND c.table_name = o.object_name
      WHERE o.object_type IN ('TABLE', 'VIEW') AND o.owner IN (${list}) AND o.object_name NOT LIKE 'BIN$%'
        AND o.temporary = 'N'
      ORDER BY o.owner, o.object_name, c.column_id`,
    binds,
    OBJ,
  );
  const byKey = new Map<string, RelationInfo>();
  for (const row of r.rows ?? []) {
    const key = `${row.S}\u0000${row.T}`;
    let rel = byKey.get(key);
    if (!rel) byKey.set(key, (rel = { schema: row.S, table: row.T, kind: row.K === 'VIEW' ? 'view' : 'table', columns: [] }));
    if (row.C !== null) rel.columns.push({ name: row.C, type: row.TY ?? '' });
  }
  const relations = [...byKey.values()];
  const names = toolNames('oracle', relations);
  return relations.map((rel, i) => relationTool(names[i]!, rel, `${oraQuote(rel.schema)}.${oraQuote(rel.table)}`));
}

/** Values as JSON (shared/jsonsafe.ts rules): NUMBER as text then number-while-exact, dates through the session's ISO formats. */
const fetchTypeHandler = (meta: oracledb.Metadata<unknown>): oracledb.FetchTypeResponse | undefined => {
  switch (meta.dbType) {
    case oracledb.DB_TYPE_NUMBER:
      return { type: oracledb.STRING, converter: (v: unknown) => (typeof v === 'string' ? decimalTextToJson(v) : v) };
    case oracledb.DB_TYPE_DATE:
    case oracledb.DB_TYPE_TIMESTAMP:
      return { type: oracledb.STRING, converter: (v: unknown) => (typeof v === 'string' ? timestampTextToIso(v) : v) };
    case oracledb.DB_TYPE_TIMESTAMP_TZ:
    case oracledb.DB_TYPE_TIMESTAMP_LTZ:
      return { type: oracledb.STRING, converter: (v: unknown) => (typeof v === 'string' ? timestamptzTextToIso(v) : v) };
    case oracledb.DB_TYPE_CLOB:
    case oracledb.DB_TYPE_NCLOB:
      return { type: oracledb.STRING };
    case oracledb.DB_TYPE_BLOB:
      return { type: oracledb.BUFFER };
  }
  return undefined;
};

/** Session settings a pooled connection has; set once per connection (the agent cannot change them: no ALTER SESSION). */
const sessions = new WeakMap<object, string>();

async function applySession(conn: oracledb.Connection, schema: string): Promise<void> {
  if (sessions.get(conn) === schema) return;
  sessions.delete(conn);
  await conn.execute(`ALTER SESSION SET CURRENT_SCHEMA = "${schema.replace(/"/g, '')}"`);
  await conn.execute(
    `ALTER SESSION SET TIME_ZONE = '+00:00' NLS_NUMERIC_CHARACTERS = '.,'
       NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS' NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF6'
       NLS_TIMESTAMP_TZ_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF6TZH:TZM'`,
  );
  sessions.set(conn, schema);
}

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

async function executeOracle(pool: oracledb.Pool, tool: SqlToolSpec, prepared: PreparedCall, ctx: ExecutionContext): Promise<ToolResult> {
  const errCtx = errorContext(ctx.config, ctx.credential, ctx.limits.statementTimeoutMs);
  if (ctx.signal?.aborted) return errorResult(callErrorText(failure('ABORTED'), errCtx));
  const collector = new RowCollector(prepared.maxRows, ctx.limits.maxResultBytes);
  const conn = await pool.getConnection();
  let drop = false;
  let aborted = false;
  const onAbort = (): void => {
    aborted = true;
    conn.break().catch(() => undefined);
  };
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    conn.callTimeout = 30_000;
    await applySession(conn, tool.target.schema);
    await conn.execute('SET TRANSACTION READ ONLY');
    // Each round trip is bounded: the execute, and each fetch (a slow fetch is the statement still running).
    conn.callTimeout = Math.max(1, Math.floor(ctx.limits.statementTimeoutMs + CLIENT_GRACE_MS));
    // The caller left before the statement was sent (the listener above may have come too late to see it, and a
    // break between round trips stops nothing): it is never sent.
    if (ctx.signal?.aborted) {
      aborted = true;
      throw failure('ABORTED');
    }
    const result = await conn.execute<Row>(prepared.statement, [], {
      resultSet: true,
      outFormat: oracledb.OUT_FORMAT_OBJECT,
      fetchArraySize: Math.min(prepared.maxRows + 1, 1000),
      fetchTypeHandler,
    });
    const rs = result.resultSet;
    if (rs) {
      try {
        for (;;) {
          const row = await rs.getRow();
          if (!row || !collector.add(toJsonSafe(row) as Row)) break;
        }
      } finally {
        await rs.close().catch(() => undefined);
      }
    }
    return collector.result();
  } catch (err) {
    const code = (err as OraErr).code;
    if (code === 'NJS-123' || code === 'DPI-1067' || code === 'ORA-01013' || aborted) drop = true;
    if ((err as OraErr).code?.startsWith('NJS-') || (err as OraErr).code?.startsWith('DPI-')) drop = true;
    return errorResult(callErrorText(aborted ? failure('ABORTED') : err, errCtx));
  } finally {
    ctx.signal?.removeEventListener('abort', onAbort);
    conn.callTimeout = 30_000;
    if (!drop) await conn.rollback().catch(() => (drop = true));
    if (drop) sessions.delete(conn);
    await conn.close({ drop }).catch(() => undefined);
  }
}

export const oracleDriver = defineSqlDriver({
  dialect: { name: 'oracle', guard: guardOracleSql },
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
  run: async (p, tool, prepared, ctx) => executeOracle(await poolOf(p), tool, prepared, ctx),
  callErrorText: (err, ctx) => callErrorText(err, errorContext(ctx.config, ctx.credential, ctx.limits.statementTimeoutMs)),
});
