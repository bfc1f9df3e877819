/** Runs one guarded tool call on MySQL/MariaDB: one statement on a session held read-only, killed on the server at the time limit. */
import mysql from 'mysql2/promise';
import type { ExecutionContext, ToolResult, ToolSpec } from '../types.ts';
import type { guardMysqlSql } from '../sqlguard/mysql.ts';
import { errorResult, rowsResult, type Row } from '../shared/result.ts';
import { isRefusal, prepareCall, type Dialect } from '../shared/prepare.ts';
import { applySession, flavourOf, type MyPool } from './pool.ts';
import { myCallErrorText, TIMEOUT_ERRNOS, type MyErrorContext } from './errors.ts';
import { fixRows } from './values.ts';

export interface MyRunOptions {
  readOnly: boolean;
  /** Database that unqualified names resolve to (the tool's schema). */
  database: string;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  signal?: AbortSignal;
  /** false: no server-side time limit, only the client's KILL QUERY (tests use it to exercise that path). */
  serverTimeout?: boolean;
}

export interface MyRunOutcome {
  rows: Row[];
  /** Rows affected by a write without RETURNING. */
  affected: number | null;
}

/** The server's own limit normally fires first; the client's KILL QUERY is the backstop (and the only limit on MySQL writes). */
const CLIENT_GRACE_MS = 250;
/** After KILL QUERY, how long the statement may take to notice before its connection is dropped. */
const KILL_WAIT_MS = 5000;

/** `KILL QUERY <id>` from a short-lived side connection: the pool's own may all be busy. */
async function killQuery(p: MyPool, threadId: number): Promise<boolean> {
  let side: mysql.Connection | null = null;
  try {
    side = await mysql.createConnection({ ...p.options, connectTimeout: 5000 });
    await side.query(`KILL QUERY ${Math.trunc(threadId)}`);
    return true;
  } catch {
    return false;
  } finally {
    side?.destroy();
  }
}

/** lock_wait_timeout and innodb_lock_wait_timeout take whole seconds, at least 1. */
const lockSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

/**
 * Runs one statement in autocommit mode on a pooled connection whose session is read-only for reads
 * (tx_read_only / transaction_read_only = 1, so the statement's implicit transaction cannot write) and carries the
 * server-side time and lock limits. These session settings are cached per connection, so a steady-state read is
 * a single round trip (START TRANSACTION READ ONLY ... ROLLBACK would be three: measured at ~40% of a bare query's
 * rate against ~80-100% this way). Exported for tests, which use it to reach the protocol-level protections
 * without the guard.
 */
export async function runMysqlStatement(p: MyPool, statement: string, o: MyRunOptions): Promise<MyRunOutcome> {
  if (o.signal?.aborted) throw failure('ABORTED');
  const flavour = await flavourOf(p);
  const conn = await p.pool.getConnection();
  let reusable = true;
  let destroyed = false;
  const drop = (): void => {
    if (!destroyed) (destroyed = true), conn.destroy();
  };
  try {
    await applySession(conn, flavour, {
      database: o.database,
      readOnly: o.readOnly,
      statementTimeoutMs: o.serverTimeout === false ? 0 : Math.max(1, Math.floor(o.statementTimeoutMs)),
      lockTimeoutS: lockSeconds(o.lockTimeoutMs),
    });

    let pending = true;
    let kill: Promise<boolean> | null = null;
    let killedFor: 'STATEMENT_TIMEOUT' | 'ABORTED' = 'STATEMENT_TIMEOUT';
    const fire = (why: 'STATEMENT_TIMEOUT' | 'ABORTED') => (): void => {
      if (kill || !pending) return;
      killedFor = why;
      kill = killQuery(p, conn.threadId).then((ok) => {
        // If the kill did not land, dropping the socket is the only way to give the caller an answer.
        const t = setTimeout(() => pending && drop(), ok ? KILL_WAIT_MS : 0);
        t.unref?.();
        return ok;
      });
    };
    const onAbort = fire('ABORTED');
    const timer = setTimeout(fire('STATEMENT_TIMEOUT'), o.statementTimeoutMs + CLIENT_GRACE_MS);
    o.signal?.addEventListener('abort', onAbort, { once: true });

    let result: Awaited<ReturnType<mysql.PoolConnection['query']>> | null = null;
    let error: unknown = null;
    try {
      result = await conn.query(statement);
    } catch (err) {
      error = err;
    } finally {
      pending = false;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    }

    const errno = (error as { errno?: number } | null)?.errno;
    if (kill) {
      const landed = await kill;
      // A KILL QUERY that arrived after the statement ended could hit this connection's next statement:
      // only a connection whose statement visibly died of it goes back to the pool.
      if (!landed || errno === undefined || !TIMEOUT_ERRNOS.has(errno)) reusable = false;
      if (error) throw failure(killedFor);
    }
    if (error) {
      if ((error as { fatal?: boolean }).fatal) reusable = false;
      throw error;
    }
    const [rows, fields] = result!;
    if (Array.isArray(rows)) return { rows: fixRows(rows as Row[], fields), affected: null };
    return { rows: [], affected: (rows as mysql.ResultSetHeader).affectedRows ?? 0 };
  } catch (err) {
    if ((err as { fatal?: boolean }).fatal) reusable = false;
    throw err;
  } finally {
    if (reusable && !destroyed) conn.release();
    else drop();
  }
}

/**
 * The MySQL guard's parser (sqlparser-rs as WASM, ~35 MB resident) loads on the first use of a MySQL connector, not
 * at start: many gateways, and `npm start`, have none. Introspecting a connector starts the load, so a new
 * connector's first call finds it ready; the first call after a restart waits for it once (~0.1-0.2 s).
 */
let mysqlGuard: typeof guardMysqlSql | null = null;
let loadingGuard: Promise<void> | null = null;
export function loadMysqlGuard(): Promise<void> {
  loadingGuard ??= import('../sqlguard/mysql.ts').then(
    (guard) => void (mysqlGuard = guard.guardMysqlSql),
    (err) => {
      loadingGuard = null;
      throw err;
    },
  );
  return loadingGuard;
}

const MYSQL_DIALECT: Dialect = {
  name: 'mysql',
  guard: (sql, opts) => mysqlGuard!(sql, opts),
  wrapRead: (body, limit) => `SELECT * FROM (\n${body}\n) AS toolgate_q LIMIT ${limit}`,
};

/** The driver's execute: arguments, guard, wrapping, run, result shaping. Never throws. */
export async function executeMysql(p: MyPool, tool: ToolSpec, args: Record<string, unknown>, ctx: ExecutionContext, connectTimeoutMs: number): Promise<ToolResult> {
  const errCtx: MyErrorContext = {
    config: ctx.config,
    credential: ctx.credential,
    connectTimeoutMs,
    statementTimeoutMs: ctx.limits.statementTimeoutMs,
    // MySQL lock waits are whole seconds (see runMysqlStatement): report the limit actually applied.
    lockTimeoutMs: lockSeconds(ctx.limits.lockTimeoutMs) * 1000,
  };
  if (mysqlGuard === null) {
    try {
      await loadMysqlGuard();
    } catch {
      return errorResult('The SQL guard for MySQL could not be loaded, so the call was not run.');
    }
  }
  try {
    const prepared = prepareCall(MYSQL_DIALECT, tool, args, ctx);
    if (isRefusal(prepared)) return prepared;
    const { statement, write, maxRows } = prepared;
    const out = await runMysqlStatement(p, statement, {
      readOnly: !write,
      database: tool.target.schema,
      statementTimeoutMs: ctx.limits.statementTimeoutMs,
      lockTimeoutMs: ctx.limits.lockTimeoutMs,
      signal: ctx.signal,
    });
    return rowsResult(out.rows, maxRows, ctx.limits.maxResultBytes, write ? (out.affected ?? out.rows.length) : undefined);
  } catch (err) {
    return errorResult(myCallErrorText(err, errCtx));
  }
}
