/**
 * The two ways a postgres statement runs: a pipelined explicit transaction, or one bare read on a read-only session.
 * Both hold their own connection for the whole call (no other call's statement is ever pipelined behind or in front
 * of it), stream rows to the caller's cap, and cancel the statement on the server at a timeout, an abort or the cap.
 */
import type postgres from 'postgres';
import type { Row } from '../shared/result.ts';
import { searchPath, type PgSql } from './pool.ts';
import { lostConnection, pipelineDeadline, releaseReserved, reserveConnection, RESET_DEADLINE_MS, settlePipeline } from './pipeline.ts';

export interface PgRunOptions {
  readOnly: boolean;
  /** Schema that unqualified names resolve to (the tool's): `SELECT * FROM orders` on the sales.orders tool must not read public.orders. */
  schema?: string;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  signal?: AbortSignal;
  /** Receives each row as it arrives; answering false stops reading (a read is then cancelled). Default: collect all. */
  onRow?: (row: Row) => boolean;
  /**
   * Instead of onRow: each row as the server's array of values with the result's columns (name, table oid), so
   * columns of the same name each keep their value (shape.ts). The query is then read with postgres.js' values().
   */
  onValues?: (values: unknown[], columns: readonly PgColumn[]) => boolean;
  /** Cancels the statement of backend `pid` from another session (pg_cancel_backend); default: a CancelRequest. */
  cancelBackend?: (pid: number) => Promise<unknown>;
  /** A saved-statement tool's values, bound to the statement's `$n` (each a text or null); default none. */
  values?: unknown[];
}

/** A result column as postgres.js reads it from RowDescription: `table` is the source table's oid, 0 if none. */
export interface PgColumn {
  name: string;
  table: number;
}

export interface PgRunOutcome {
  /** The rows, when no onRow was given. */
  rows: Row[];
  /** Rows affected (writes), as the server's command tag reports it. */
  count: number | null;
  /** onRow stopped the read before its end. */
  stopped: boolean;
}

/** Extra time the server's statement_timeout gets before the client acts itself. */
const CLIENT_GRACE_MS = 1000;

// postgres.js runs parameterless unsafe() queries on the simple protocol, which executes every statement in the
// string. The user's statement must go through the extended protocol (Parse/Bind/Execute), which runs exactly
// one: a stacked `; COMMIT; DROP ...` that slipped past the guard is then a syntax error, never a second statement.
const EXTENDED: postgres.UnsafeQueryOptions & { simple: boolean } = { prepare: false, simple: false };
/** The same as a named prepared statement: parsed and planned once per connection, then only bound and executed. */
const PREPARED: postgres.UnsafeQueryOptions & { simple: boolean } = { prepare: true, simple: false };

/**
 * Whether anything a call did to its session outlived it: session-level settings (SET, set_config(..., false)),
 * SET ROLE / SET SESSION AUTHORIZATION, advisory locks, SQL-level prepared statements, cursors (WITH HOLD),
 * LISTEN, temporary objects. Runs pipelined after the transaction's end, so it costs no round trip; a session that
 * answers true (or cannot answer) is reset before it goes back to the pool. pg_stat_activity.usename is the
 * role the connection logged in as (SET SESSION AUTHORIZATION does not change it).
 */
const SESSION_LEFTOVERS = `select (
  exists (select from pg_catalog.pg_settings where source = 'session')
  or exists (select from pg_catalog.pg_locks where locktype = 'advisory' and pid = pg_catalog.pg_backend_pid())
  or exists (select from pg_catalog.pg_prepared_statements where from_sql)
  or exists (select from pg_catalog.pg_cursors)
  or exists (select from pg_catalog.pg_listening_channels())
  or exists (select from pg_catalog.pg_class where relnamespace = pg_catalog.pg_my_temp_schema())
  or session_user <> current_user
  or session_user <> (select usename from pg_catalog.pg_stat_activity where pid = pg_catalog.pg_backend_pid())
) as dirty`;

const ms = (n: number): number => Math.max(1, Math.floor(n));
const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });
type Why = 'STATEMENT_TIMEOUT' | 'ABORTED' | 'CAP';
const throwAborted = (): never => {
  throw failure('ABORTED');
};

/** SQLSTATE of a statement cancelled on request (query_canceled). */
const QUERY_CANCELED = '57014';

/** How long a cancel may stay without effect before another is sent (see cancelWhileRunning). */
const RECANCEL_MS = 250;

type QueryInternals = { canceller: ((q: unknown) => Promise<unknown>) | null; active?: boolean };

/**
 * Takes postgres.js' canceller off the query, so nothing (query.cancel() included) can reach postgres.js' own path
 * for a query that is not active yet: it defers the cancel to the moment the query becomes active, and postgres.js
 * 3.4.9 then also takes the query after it for the current one (connection.js ReadyForQuery), so the cancelled
 * statement's answer is read as the next query's and the call hangs to the pipeline deadline (issue 26, the reverted
 * first attempt). The canceller itself, called on an active query, opens a side connection with the CancelRequest and
 * resolves once the server has closed it, i.e. after it signalled the backend.
 */
function takeCanceller(query: postgres.PendingQuery<Row[]>): (q: unknown) => Promise<unknown> {
  const q = query as unknown as QueryInternals;
  const canceller = q.canceller;
  q.canceller = null;
  return canceller ?? (() => Promise.resolve());
}

/**
 * Cancels `query` on the server, only while it is its connection's current query, and again every RECANCEL_MS until
 * it settles: PostgreSQL discards a cancel that reaches the backend while it waits for or reads its next message, so
 * one that arrives just before the statement starts would be lost. `started` settles when what runs before the
 * query in its pipeline (the transaction's BEGIN) has finished; postgres.js marks the query active in that same turn.
 * Resolves once every cancel sent has been delivered, so none can reach a later statement: the connection is
 * reserved for the call, the caller releases it only after this resolves, and a cancel the backend receives while
 * idle is discarded. One that lands on the call's own ROLLBACK or leftover check fails it, and the session is
 * then reset (runPgStatement's finally).
 */
async function cancelWhileRunning(
  query: postgres.PendingQuery<Row[]>,
  send: (q: unknown) => Promise<unknown>,
  started: Promise<unknown> | null,
  done: { settled: boolean; promise: Promise<unknown> },
  deadlineMs: number,
): Promise<void> {
  if (started) await started.catch(() => undefined);
  const until = performance.now() + deadlineMs;
  while (!done.settled && performance.now() < until) {
    // Not handed to the connection yet (postgres.js writes a query a microtask after execute()): nothing is sent
    // until it is, since on a query not active postgres.js defers the cancel (see takeCanceller). Look again soon.
    const active = (query as unknown as QueryInternals).active === true;
    if (active) {
      await send(query).catch(() => undefined);
      if (done.settled) return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([done.promise, new Promise((r) => (timer = setTimeout(r, active ? RECANCEL_MS : 5)))]);
    clearTimeout(timer);
  }
}

/**
 * Streams one query's rows into `onRow` and cancels it on the server when told to: at the client-side time limit
 * (a backstop for statement_timeout), when the caller aborts, or when onRow answers false on a read. The
 * connection is the call's own, so the cancel request can only reach this call's statement; settle() waits for
 * every cancel request to be delivered, so that a late one cannot reach the next call on this connection
 * (PostgreSQL ignores a cancel that arrives while the session is idle). `started`: see cancelWhileRunning.
 */
function watch(query: postgres.PendingQuery<Row[]>, o: PgRunOptions, cancellable: boolean, started: Promise<unknown> | null) {
  let why: Why | null = null;
  let cancelling: Promise<unknown> = Promise.resolve();
  const rows: Row[] = [];
  const request = takeCanceller(query);
  // pg_cancel_backend signals the backend exactly as a CancelRequest does, and has done so when it answers.
  const send = (q: unknown): Promise<unknown> => {
    const pid = (q as { state?: { pid?: number } }).state?.pid;
    return o.cancelBackend && pid ? o.cancelBackend(pid).catch(() => request(q)) : request(q);
  };
  const progress = { settled: false, promise: Promise.resolve() as Promise<unknown> };
  const cancel = (w: Why) => (): void => {
    if (why) return;
    why = w;
    cancelling = cancelWhileRunning(query, send, started, progress, pipelineDeadline(o.statementTimeoutMs));
  };
  const onAbort = cancel('ABORTED');
  const timer = setTimeout(cancel('STATEMENT_TIMEOUT'), ms(o.statementTimeoutMs) + CLIENT_GRACE_MS);
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const onRow = o.onRow ?? ((r: Row) => (rows.push(r), true));
  const onValues = o.onValues;
  let stopped = false;
  if (onValues) query.values();
  const columnsOf = (): readonly PgColumn[] => (query as unknown as { statement: { columns: PgColumn[] } }).statement.columns;
  const done = query.forEach((row) => {
    if (stopped) return; // rows still in flight after the stop: dropped, never held
    if (!(onValues ? onValues(row as unknown as unknown[], columnsOf()) : onRow(row))) {
      stopped = true;
      if (cancellable) cancel('CAP')();
    }
  });
  progress.promise = done.then(
    () => void (progress.settled = true),
    () => void (progress.settled = true),
  );
  const settle = async (): Promise<{ result: postgres.ResultQueryMeta<number, string> | null; error: unknown }> => {
    let result: postgres.ResultQueryMeta<number, string> | null = null;
    let error: unknown = null;
    try {
      result = (await done) as unknown as postgres.ResultQueryMeta<number, string>;
    } catch (err) {
      error = err;
    }
    progress.settled = true;
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
    await cancelling;
    if (why === 'CAP')
      error = null; // cancelled because the caller had enough: a success, truncated
    else if (error && why) error = failure(why);
    return { result, error };
  };
  return { settle, rows, stopped: () => stopped, cancelledFor: (): Why | null => why };
}

/**
 * Runs `statement` inside its own transaction on one reserved connection, written as a single pipeline so the
 * whole call costs about one round trip:
 *
 *   Q  begin read only; set transaction read only; set local statement_timeout = N; set local lock_timeout = M;
 *      set local search_path = <tool schema>, pg_catalog, pg_temp
 *   P/B/E/S  <statement>                       (extended protocol, rows streamed)
 *   Q  rollback        (read) | commit (write; after an error, postgres turns it into a rollback)
 *   Q  <SESSION_LEFTOVERS> (read) | discard all (write)
 *
 * The SET LOCALs and transactional session changes vanish with the transaction; what survives a rollback or comes
 * with a commit (advisory locks, PREPARE, temporary tables, SET on a write...) is caught by the last query, and
 * such a session is reset with DISCARD ALL before it goes back to the pool. None of this relies on the guard. `set transaction read only`
 * repeats the BEGIN option so that even a connection somehow left inside a transaction would run the read
 * read-only. Exported for tests, which use it to reach the protocol-level protections without the guard.
 */
export async function runPgStatement(sql: PgSql, statement: string, o: PgRunOptions): Promise<PgRunOutcome> {
  if (o.signal?.aborted) throw failure('ABORTED');
  const conn = await reserveConnection(sql);
  let clean = false;
  let lost = false;
  try {
    // The caller left while the connection was being reserved: nothing is sent, the session is as it was.
    if (o.signal?.aborted) {
      clean = true; // nothing was sent
      throwAborted();
    }
    const setup = [
      o.readOnly ? 'begin transaction read only; set transaction read only' : 'begin transaction read write',
      `set local statement_timeout = ${ms(o.statementTimeoutMs)}`,
      `set local lock_timeout = ${ms(o.lockTimeoutMs)}`,
      // The tool's schema first, then pg_catalog, pg_temp last (see searchPath).
      ...(o.schema === undefined ? [] : [`set local search_path = ${searchPath(o.schema)}`]),
    ].join('; ');
    // execute() sends each query now, in this order: postgres.js batches the writes into one packet.
    const begin = conn.unsafe(setup).execute();
    const query = conn.unsafe<Row[]>(statement, (o.values ?? []) as postgres.ParameterOrJSON<never>[], EXTENDED);
    // Only a read is cancelled at the row cap: cancelling a write would roll it back after it was reported done.
    const watched = watch(query, o, o.readOnly, begin);
    query.execute();
    const end = conn.unsafe(o.readOnly ? 'rollback' : 'commit').execute();
    // A read's transaction rolls back every setting (custom placeholders included), so only what survives a
    // rollback needs checking. A commit keeps whatever the statement set, and custom settings are not all
    // visible in pg_settings: a write's session is always reset (pipelined, no extra round trip).
    const leftovers = o.readOnly ? conn.unsafe<{ dirty: boolean }[]>(SESSION_LEFTOVERS).execute() : conn.unsafe('discard all').execute();
    const [b, q, e, l] = await settlePipeline([begin, watched.settle(), end, leftovers] as const, pipelineDeadline(o.statementTimeoutMs));
    lost = lostConnection([b, e, l], q.status === 'fulfilled' ? q.value.error : q.reason);
    clean = l.status === 'fulfilled' && (!o.readOnly || (l.value as unknown as { dirty: boolean }[])[0]?.dirty === false);

    if (b.status === 'rejected') throw b.reason;
    const { result, error } = q.status === 'fulfilled' ? q.value : { result: undefined, error: q.reason };
    if (error) throw error;
    if (e.status === 'rejected') {
      // A commit of a write failing on a deferred constraint can; so can our own cancel, sent while the statement
      // ran but reaching the backend once it had moved on to the pipelined ROLLBACK / COMMIT. Either way nothing
      // stays open (the session is reset below); the latter is reported for what caused it.
      clean = false;
      const why = watched.cancelledFor();
      if (why !== null && (e.reason as { code?: string } | null)?.code === QUERY_CANCELED) {
        if (why === 'CAP') return { rows: watched.rows, count: result?.count ?? null, stopped: watched.stopped() };
        throw failure(why);
      }
      throw e.reason;
    }
    return { rows: watched.rows, count: result?.count ?? null, stopped: watched.stopped() };
  } finally {
    // A session that cannot be proven clean is reset to the state it had when it connected (DISCARD ALL keeps the
    // startup parameters: read-only default, timeouts, search_path). DISCARD ALL refuses to run inside a
    // transaction, hence the rollback first. postgres.js re-prepares its own named statements when the server
    // reports them gone (FetchPreparedStatement), so the fast path is not disturbed.
    if (!clean && !lost) await settlePipeline([conn.unsafe('rollback').execute(), conn.unsafe('discard all').execute()], RESET_DEADLINE_MS);
    releaseReserved(conn, lost);
  }
}

/**
 * Runs a read as one bare extended-protocol statement on a connection of the shared pool, whose sessions were
 * opened with default_transaction_read_only = on, statement_timeout, lock_timeout and search_path (PgSession): the
 * implicit transaction is read-only and time-limited exactly as the explicit one above would be, for one
 * statement's cost. The caller checks that the pool's session matches the call (same limits, the tool's schema)
 * and that the server confirmed read-only.
 *
 * The connection is reserved for the call (no pipelining of other calls on it), so a cancel at the time limit, an
 * abort or the row cap reaches only this statement, and a slow statement never holds up another call queued
 * behind it on the same connection.
 *
 * Why a read here cannot change its session (no leftover check on this path, to keep it at one statement): the
 * statement is the dialect's `select * from (<sql>) ... limit n` wrapper, so SET, PREPARE, LISTEN, DECLARE,
 * CREATE TEMP and every other utility statement are syntax errors inside it; what remains is a function with a
 * session side effect (set_config, pg_advisory_lock, setseed...), and the guard runs only allow-listed functions,
 * none of which has one. A read that switched the session to read-write anyway would be seen through the reported
 * default_transaction_read_only (PgPool.tainted) and send later reads to runPgStatement.
 */
export async function runPgFast(
  sql: PgSql,
  statement: string,
  o: Omit<PgRunOptions, 'readOnly' | 'lockTimeoutMs'> & { prepare?: boolean },
): Promise<PgRunOutcome> {
  if (o.signal?.aborted) throw failure('ABORTED');
  const conn = await reserveConnection(sql);
  let lost = false;
  try {
    if (o.signal?.aborted) throwAborted();
    // A prepared statement is safe here even when postgres.js re-prepares and retries it (after a schema change
    // made the cached plan invalid): the retry runs on the same read-only, time-limited session. Not so in
    // runPgStatement, where the retry would come after the pipelined rollback, outside the transaction.
    const query = conn.unsafe<Row[]>(statement, (o.values ?? []) as postgres.ParameterOrJSON<never>[], o.prepare ? PREPARED : EXTENDED);
    const watched = watch(query, { ...o, readOnly: true, lockTimeoutMs: 0 }, true, null);
    query.execute();
    const [settled] = await settlePipeline([watched.settle()] as const, pipelineDeadline(o.statementTimeoutMs));
    const { result, error } = settled.status === 'fulfilled' ? settled.value : { result: undefined, error: settled.reason };
    if (error) {
      lost = lostConnection([], error);
      throw error;
    }
    return { rows: watched.rows, count: result?.count ?? null, stopped: watched.stopped() };
  } finally {
    releaseReserved(conn, lost);
  }
}
