/** Runs one guarded tool call on MySQL/MariaDB: one statement on a session held read-only, killed on the server at the time limit. */
import mysql from 'mysql2/promise';
import type { Connection as CoreConnection } from 'mysql2';
import { MYSQL_POLICY } from './policy.ts';
import type { ExecutionContext, ToolResult, SqlToolSpec } from '../types.ts';
import type { guardMysqlSql } from './guard/guard.ts';
import { errorResult, RowCollector, type Row } from '../shared/result.ts';
import type { Dialect, PreparedCall } from '../shared/prepare.ts';
import { applySession, flavourOf, forgetSession, type MyPool } from './pool.ts';
import { myCallErrorText, TIMEOUT_ERRNOS, type MyErrorContext } from './errors.ts';
import { rowFixer } from './values.ts';
import { bindMysql, MYSQL_SYNTAX } from './saved.ts';
import { lexMysql, type Token } from './guard/lexer.ts';

export interface MyRunOptions {
  readOnly: boolean;
  /** Database that unqualified names resolve to (the tool's schema). */
  database: string;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  signal?: AbortSignal;
  /** false: no server-side time limit, only the client's KILL QUERY (tests use it to exercise that path). */
  serverTimeout?: boolean;
  /** Receives each row as it arrives; answering false stops reading (a read is then killed). Default: collect all. */
  onRow?: (row: Row) => boolean;
  /**
   * A saved-statement tool's values for the statement's `?` markers: the statement then runs as a prepared statement
   * (COM_STMT_PREPARE / EXECUTE, values in the binary protocol); the reset after the call drops it on the server.
   */
  values?: unknown[];
  /**
   * The caller vouches that the statement cannot change its session: a saved-statement read (a fixed text the guard
   * accepted when it was saved, values bound as data). Such a read that ends cleanly (no error, no kill) leaves its
   * connection unreset, session and prepared statement kept: the next such call costs one COM_STMT_EXECUTE.
   */
  keepSession?: boolean;
}

export interface MyRunOutcome {
  /** The rows, when no onRow was given. */
  rows: Row[];
  /** onRow stopped the read before its end. */
  stopped: boolean;
  /** Rows affected by a write without RETURNING. */
  affected: number | null;
}

/** The server's own limit normally fires first; the client's KILL QUERY is the backstop (and the only limit on MySQL writes). */
const CLIENT_GRACE_MS = 250;
/** A KILL QUERY that reaches the thread before it starts the statement is lost: it is sent again this often. */
const REKILL_MS = 250;
/** After the first KILL QUERY, how long the statement may take to die before its whole thread is killed. */
const KILL_WAIT_MS = 5000;

/**
 * `KILL QUERY|CONNECTION <id>` from the pool's side connection (the pool's own may all be busy), opened on the first
 * kill and kept; one that fails is closed and the kill tried once more on a new one.
 */
async function killOnServer(p: MyPool, threadId: number, what: 'QUERY' | 'CONNECTION'): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const killer = p.ended
      ? mysql.createConnection({ ...p.options, connectTimeout: 5000 })
      : (p.killer ??= mysql.createConnection({ ...p.options, connectTimeout: 5000 }));
    try {
      const side = await killer;
      await side.query(`KILL ${what} ${Math.trunc(threadId)}`);
      if (p.ended) side.destroy();
      return true;
    } catch (err) {
      // ER_NO_SUCH_THREAD: the connection is already gone, which is what a kill wants.
      if ((err as { errno?: number }).errno === 1094) return true;
      if (p.killer === killer) p.killer = null;
      void killer.then(
        (c) => c.destroy(),
        () => undefined,
      );
    }
  }
  return false;
}

/**
 * Kills the statement running on `threadId` until `ended` settles: KILL QUERY, again every REKILL_MS (one that
 * arrives while the thread is between commands is discarded, tested on MariaDB 10.11), and after KILL_WAIT_MS
 * KILL CONNECTION (the thread, and its statement, end on the server). Resolves with the number of KILL QUERY that
 * landed, and whether the connection had to go; resolves only when no kill is in flight any more.
 */
async function killWhileRunning(
  p: MyPool,
  threadId: number,
  ended: { done: boolean; promise: Promise<unknown> },
): Promise<{ landed: number; sent: number; connectionKilled: boolean }> {
  const until = performance.now() + KILL_WAIT_MS;
  let landed = 0;
  let sent = 0;
  while (!ended.done) {
    if (performance.now() >= until) return { landed, sent, connectionKilled: await killOnServer(p, threadId, 'CONNECTION') };
    sent++;
    if (await killOnServer(p, threadId, 'QUERY')) landed++;
    else return { landed, sent, connectionKilled: false };
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([ended.promise, new Promise((r) => (timer = setTimeout(r, REKILL_MS)))]);
    clearTimeout(timer);
  }
  return { landed, sent, connectionKilled: false };
}

/**
 * Runs `statement` as a row stream (mysql2 holds one row packet at a time): rows go to onRow as they arrive, and
 * once it answers false the rest are dropped unread while the caller kills the statement. Resolves with the
 * affected-row count of a write, null for a read.
 */
function streamQuery(
  conn: mysql.PoolConnection,
  statement: string,
  values: unknown[] | undefined,
  onRow: (row: Row) => boolean,
  onStop: () => void,
): Promise<number | null> {
  return new Promise((resolve, reject) => {
    // Without a 'fields' event first, a 'result' is the OK packet of a statement that returns no rows.
    let fix: ((values: unknown[]) => Row) | null = null;
    let affected: number | null = null;
    let stopped = false;
    const core = conn.connection as unknown as CoreConnection;
    // Rows as arrays: a join's columns of the same name each keep their value (values.ts columnKeys).
    const q = values ? core.execute({ sql: statement, values, rowsAsArray: true }) : core.query({ sql: statement, rowsAsArray: true });
    // mysql2 also emits 'fields' (undefined) right before the OK packet of a write: that is no result set, and the
    // packet must be read as the affected-row count, not as a row (the answer was `[{}]` instead of the count).
    q.on('fields', (fields: mysql.FieldPacket[] | undefined) => (fix = fields ? rowFixer(fields) : null));
    q.on('result', (row: unknown) => {
      if (!fix) {
        affected = (row as mysql.ResultSetHeader).affectedRows ?? 0;
        return;
      }
      if (stopped) return;
      if (!onRow(fix(row as unknown[]))) (stopped = true), onStop();
    });
    q.on('error', reject);
    q.on('end', () => resolve(affected));
  });
}

/** lock_wait_timeout and innodb_lock_wait_timeout take whole seconds, at least 1. */
const lockSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

type KillReason = 'STATEMENT_TIMEOUT' | 'ABORTED' | 'CAP';

interface Streamed {
  affected: number | null;
  stopped: boolean;
  error: unknown;
  /** Set when a KILL QUERY was fired, and why. */
  kill: ReturnType<typeof killWhileRunning> | null;
  killedFor: KillReason;
}

/**
 * Streams one statement with its kill triggers armed: the statement timeout (client side, past the server's), the
 * caller's abort, and for a read the row cap. A trigger sends KILL QUERY once; a thread still running after it is
 * dropped (`drop`). Never throws: the statement's error is in the outcome.
 */
async function streamKillable(
  p: MyPool,
  conn: mysql.PoolConnection,
  statement: string,
  onRow: (row: Row) => boolean,
  o: MyRunOptions,
  drop: () => void,
): Promise<Streamed> {
  const ended = { done: false, promise: Promise.resolve() as Promise<unknown> };
  let kill: ReturnType<typeof killWhileRunning> | null = null;
  let killedFor: KillReason = 'STATEMENT_TIMEOUT';
  const fire = (why: KillReason) => (): void => {
    if (kill || ended.done) return;
    killedFor = why;
    kill = killWhileRunning(p, conn.threadId, ended).then((k) => {
      // Still running: a kill could not be sent, or the thread was killed whole. Dropping the socket answers the caller.
      if (!ended.done) drop();
      return k;
    });
  };
  const onAbort = fire('ABORTED');
  const timer = setTimeout(fire('STATEMENT_TIMEOUT'), o.statementTimeoutMs + CLIENT_GRACE_MS);
  o.signal?.addEventListener('abort', onAbort, { once: true });

  let affected: number | null = null;
  let stopped = false;
  let error: unknown = null;
  try {
    // Only a read is killed at the row cap: killing a write would undo it after it was reported done.
    const streaming = streamQuery(conn, statement, o.values, onRow, () => ((stopped = true), o.readOnly && fire('CAP')()));
    ended.promise = streaming.then(
      () => void (ended.done = true),
      () => void (ended.done = true),
    );
    affected = await streaming;
  } catch (err) {
    error = err;
  } finally {
    ended.done = true;
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
  return { affected, stopped, error, kill, killedFor };
}

/**
 * Runs one statement in autocommit mode on a pooled connection whose session is read-only for reads
 * (tx_read_only / transaction_read_only = 1, so the statement's implicit transaction cannot write) and carries the
 * server-side time and lock limits. Rows are streamed to onRow; a read that has enough is killed (KILL QUERY)
 * rather than read to its end.
 *
 * Nothing the statement does to its session outlives the call, whatever it is (this does not rely on the guard):
 * the connection is reset with COM_RESET_CONNECTION before it goes back to the pool (user and system variables,
 * temporary tables, prepared statements, GET_LOCK locks, roles return to the login state), then its session is set
 * again (USE + one SET, the default database included, which the reset keeps), all after the caller's answer; a
 * connection that cannot be reset or set is closed. A read of the same database under the same limits then costs
 * one command before its answer, the statement itself (decision 0400); any other call sends one SET first. The one
 * exception is a call that vouches for its statement (keepSession: a saved-statement read), which is not reset.
 * Exported for tests, which use it to reach the protocol-level protections without the guard.
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
  // Set once the statement ended cleanly (no error, no kill) on a call that vouched for its session (keepSession).
  let keep = false;
  const rows: Row[] = [];
  const onRow = o.onRow ?? ((r: Row) => (rows.push(r), true));
  const session = {
    database: o.database,
    readOnly: o.readOnly,
    statementTimeoutMs: o.serverTimeout === false ? 0 : Math.max(1, Math.floor(o.statementTimeoutMs)),
    lockTimeoutS: lockSeconds(o.lockTimeoutMs),
  };
  try {
    // Nothing to send when the connection was set up for this call after its previous one (below, in finally).
    await applySession(conn, flavour, session);

    // The caller left while the session was being set: the statement is never sent.
    if (o.signal?.aborted) throw failure('ABORTED');

    const { affected, stopped, error, kill, killedFor } = await streamKillable(p, conn, statement, onRow, o, drop);
    const errno = (error as { errno?: number } | null)?.errno;
    if (kill) {
      const k = await kill;
      // A KILL QUERY that arrived after the statement ended could hit this connection's next statement (MariaDB
      // discards it, other servers may not): only a connection whose statement visibly died of the one kill sent
      // goes back to the pool.
      if (k.landed !== 1 || k.sent !== 1 || errno === undefined || !TIMEOUT_ERRNOS.has(errno)) reusable = false;
      if (killedFor === 'CAP') return { rows, affected: null, stopped: true };
      if (error) throw failure(killedFor);
      // A KILL QUERY makes a bare `SELECT SLEEP(n)` return 1 instead of failing (MySQL and MariaDB alike): a read
      // whose caller left is reported aborted whatever it returned, since nobody reads it and it changed nothing. A
      // write that ended without an error did run, and says so.
      if (killedFor === 'ABORTED' && o.readOnly) throw failure('ABORTED');
    }
    if (error) {
      if ((error as { fatal?: boolean }).fatal) reusable = false;
      throw error;
    }
    keep = o.keepSession === true && o.readOnly && !kill;
    return { rows, affected, stopped };
  } catch (err) {
    if ((err as { fatal?: boolean }).fatal) reusable = false;
    throw err;
  } finally {
    if (keep && reusable && !destroyed) conn.release();
    else if (reusable && !destroyed) {
      forgetSession(conn);
      // Released only once reset and set up again for a read of this tool's database under these limits, the
      // commonest next call, which then sends its statement alone (one command before its answer). The caller's
      // answer does not wait for any of it. The reset keeps the current database (MariaDB, MySQL), which the
      // statement may have changed: the USE is always sent again (applySession after forgetSession).
      conn
        .reset()
        .then(() => applySession(conn, flavour, { ...session, readOnly: true }))
        .then(() => conn.release(), drop);
    } else drop();
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
  loadingGuard ??= import('./guard/guard.ts').then(
    (guard) => void (mysqlGuard = guard.guardMysqlSql),
    (err) => {
      loadingGuard = null;
      throw err;
    },
  );
  return loadingGuard;
}

/** Before a call: the guard's parser, loaded once (a text when it cannot load; null, without waiting, once loaded). */
export function mysqlGuardReady(): null | Promise<string | null> {
  if (mysqlGuard !== null) return null;
  return loadMysqlGuard().then(
    () => null,
    () => 'The SQL guard for MySQL could not be loaded, so the call was not run.',
  );
}

export const MYSQL_DIALECT: Dialect = {
  name: 'mysql',
  guardSpan: 'guard mysql',
  syntax: MYSQL_SYNTAX,
  guard: (sql, opts) => mysqlGuard!(sql, opts),
  bind: bindMysql,
  ready: loadMysqlGuard,
  policy: MYSQL_POLICY,
  tables: true,
  wrapRead: limitMysqlRead,
};

/**
 * The row cap of a read (issue 38 item 7b, docs/decisions/0297): MariaDB drops the ORDER BY of a derived table that
 * has no LIMIT, so `SELECT * FROM (<statement>) AS q LIMIT n` returned rows out of the statement's order. The cap is
 * appended to the statement's own top level instead (`<statement> LIMIT n` keeps its ORDER BY, also of a UNION, and
 * a join's duplicate column names, which a derived table refuses). A statement that already ends its top level with
 * LIMIT, OFFSET or FETCH, or is one parenthesised query, runs as it is: its own limit bounds it, and the driver stops
 * reading at the cap and kills the rest on the server (runMysqlStatement). The text is the guard's accepted one (or
 * the policy rewrite of it), lexed by the guard's own lexer; a text it cannot lex keeps the old wrapper.
 */
function limitMysqlRead(body: string, limit: number): string {
  let tokens: Token[];
  try {
    tokens = lexMysql(body);
  } catch {
    return `SELECT * FROM (\n${body}\n) AS toolgate_q LIMIT ${limit}`;
  }
  if (tokens[0]?.kind === 'punct' && tokens[0].text === '(') return body;
  let depth = 0;
  for (const t of tokens) {
    if (t.kind === 'punct') depth += t.text === '(' ? 1 : t.text === ')' ? -1 : 0;
    else if (depth === 0 && t.kind === 'word' && OWN_LIMIT_WORDS.has(t.text.toUpperCase())) return body;
  }
  // On its own line: the statement may end in a line comment.
  return `${body}\nLIMIT ${limit}`;
}

/** Words that end a top level with its own row limit (OFFSET and FETCH: MariaDB's `OFFSET n ROWS FETCH FIRST m ROWS ONLY`). */
const OWN_LIMIT_WORDS: ReadonlySet<string> = new Set(['LIMIT', 'OFFSET', 'FETCH']);

/** The driver's runner: run, result shaping. Never throws. */
export async function runMysqlCall(p: MyPool, tool: SqlToolSpec, prepared: PreparedCall, ctx: ExecutionContext, connectTimeoutMs: number): Promise<ToolResult> {
  const errCtx: MyErrorContext = {
    config: ctx.config,
    credential: ctx.credential,
    connectTimeoutMs,
    statementTimeoutMs: ctx.limits.statementTimeoutMs,
    // MySQL lock waits are whole seconds (see runMysqlStatement): report the limit actually applied.
    lockTimeoutMs: lockSeconds(ctx.limits.lockTimeoutMs) * 1000,
  };
  try {
    const { statement, write, maxRows } = prepared;
    // Rows are capped while they arrive: a read is killed on the server as soon as the cap is reached. A single row
    // is bounded by the server's max_allowed_packet (it cannot send a bigger one).
    const collector = new RowCollector(maxRows, ctx.limits.maxResultBytes, prepared.narrowing);
    const out = await runMysqlStatement(p, statement, {
      readOnly: !write,
      database: tool.target.schema,
      statementTimeoutMs: ctx.limits.statementTimeoutMs,
      lockTimeoutMs: ctx.limits.lockTimeoutMs,
      signal: ctx.signal,
      onRow: (row) => collector.add(row),
      ...(prepared.values ? { values: prepared.values } : {}),
      // A saved statement's read keeps its session (see MyRunOptions.keepSession, decision 0400). Not under a
      // policy: its text is then the policy's rewrite, made per call.
      keepSession: !write && tool.target.saved !== undefined && prepared.values !== undefined && ctx.policy === undefined,
    });
    return collector.result(write ? (out.affected ?? collector.rows.length) : undefined);
  } catch (err) {
    return errorResult(myCallErrorText(err, errCtx));
  }
}
