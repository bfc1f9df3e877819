/** Runs one prepared (guarded) oracle call and shapes its rows as JSON; the row and byte caps and the caller's abort stop it on the server. */
import oracledb from 'oracledb';
import type { ExecutionContext, SqlToolSpec, ToolResult } from '../types.ts';
import { errorResult, RowCollector, type Row } from '../shared/result.ts';
import { decimalTextToJson, timestampTextToIso, timestamptzTextToIso, toJsonSafe } from '../shared/jsonsafe.ts';
import type { PreparedCall } from '../shared/prepare.ts';
import { callErrorText, type ErrorContext, type OraErr } from './errors.ts';

const CLIENT_GRACE_MS = 1000;

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

export async function executeOracle(
  pool: oracledb.Pool,
  tool: SqlToolSpec,
  prepared: PreparedCall,
  ctx: ExecutionContext,
  connectTimeoutMs: number,
): Promise<ToolResult> {
  const errCtx: ErrorContext = { config: ctx.config, credential: ctx.credential, connectTimeoutMs, statementTimeoutMs: ctx.limits.statementTimeoutMs };
  if (ctx.signal?.aborted) return errorResult(callErrorText(failure('ABORTED'), errCtx));
  const collector = new RowCollector(prepared.maxRows, ctx.limits.maxResultBytes, prepared.narrowing);
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
    // A saved tool's values, bound by position to its :1, :2, ... markers.
    const result = await conn.execute<Row>(prepared.statement, (prepared.values ?? []) as oracledb.BindParameters, {
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
