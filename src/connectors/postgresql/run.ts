/** The two ways a postgres statement runs: a pipelined explicit transaction, or one bare read on a read-only session. */
import type postgres from 'postgres';
import type { Row } from '../shared/result.ts';
import { searchPath, type PgSql } from './pool.ts';

export interface PgRunOptions {
  readOnly: boolean;
  /** Schema that unqualified names resolve to (the tool's): `SELECT * FROM orders` on the sales.orders tool must not read public.orders. */
  schema?: string;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  signal?: AbortSignal;
}

export interface PgRunOutcome {
  rows: Row[];
  /** Rows affected (writes), as the server's command tag reports it. */
  count: number | null;
}

/** Extra time the server's statement_timeout gets before the client acts itself. */
const CLIENT_GRACE_MS = 1000;

// postgres.js runs parameterless unsafe() queries on the simple protocol, which executes every statement in the
// string. The user's statement must go through the extended protocol (Parse/Bind/Execute), which runs exactly
// one: a stacked `; COMMIT; DROP ...` that slipped past the guard is then a syntax error, never a second statement.
const EXTENDED: postgres.UnsafeQueryOptions & { simple: boolean } = { prepare: false, simple: false };
/** The same as a named prepared statement: parsed and planned once per connection, then only bound and executed. */
const PREPARED: postgres.UnsafeQueryOptions & { simple: boolean } = { prepare: true, simple: false };

const ms = (n: number): number => Math.max(1, Math.floor(n));
const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

/**
 * Runs `statement` inside its own transaction on one reserved connection, written as a single pipeline so the
 * whole call costs about one round trip:
 *
 *   Q  begin read only; set transaction read only; set local statement_timeout = N; set local lock_timeout = M;
 *      set local search_path = <tool schema>, pg_catalog, pg_temp
 *   P/B/E/S  <statement>                       (extended protocol)
 *   Q  rollback        (read) | commit (write; after an error, postgres turns it into a rollback)
 *
 * The SET LOCALs and anything the statement changes (even set_config(..., false)) vanish with the transaction,
 * so the connection goes back to the pool clean, also after a timeout. `set transaction read only` repeats the
 * BEGIN option so that even a connection somehow left inside a transaction would run the read read-only.
 * Exported for tests, which use it to reach the protocol-level protections without the guard.
 */
export async function runPgStatement(sql: PgSql, statement: string, o: PgRunOptions): Promise<PgRunOutcome> {
  if (o.signal?.aborted) throw failure('ABORTED');
  const conn = await sql.reserve();
  try {
    const setup = [
      o.readOnly ? 'begin transaction read only; set transaction read only' : 'begin transaction read write',
      `set local statement_timeout = ${ms(o.statementTimeoutMs)}`,
      `set local lock_timeout = ${ms(o.lockTimeoutMs)}`,
      // The tool's schema first, then pg_catalog, pg_temp last (see searchPath).
      ...(o.schema === undefined ? [] : [`set local search_path = ${searchPath(o.schema)}`]),
    ].join('; ');
    // execute() sends each query now, in this order: postgres.js batches the three writes into one packet.
    const begin = conn.unsafe(setup).execute();
    const query = conn.unsafe<Row[]>(statement, [], EXTENDED).execute();
    const end = conn.unsafe(o.readOnly ? 'rollback' : 'commit').execute();

    // Backstops for the server-side timeout (and the caller's abort): a cancel request from a side connection.
    // The connection is reserved, so the cancel can only ever hit this call's own statements.
    let cancelledBy: 'STATEMENT_TIMEOUT' | 'ABORTED' | null = null;
    const cancel = (why: 'STATEMENT_TIMEOUT' | 'ABORTED') => (): void => {
      cancelledBy ??= why;
      void query.cancel();
    };
    const onAbort = cancel('ABORTED');
    const timer = setTimeout(cancel('STATEMENT_TIMEOUT'), ms(o.statementTimeoutMs) + CLIENT_GRACE_MS);
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const [b, q, e] = await Promise.allSettled([begin, query, end]);
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);

    if (b.status === 'rejected') throw b.reason;
    if (q.status === 'rejected') throw cancelledBy ? failure(cancelledBy) : q.reason;
    if (e.status === 'rejected') {
      // Should not happen (commit of a write failing on a deferred constraint can): make sure nothing stays open.
      await conn.unsafe('rollback').catch(() => undefined);
      throw e.reason;
    }
    const result = q.value;
    return { rows: Array.from(result), count: result.count ?? null };
  } finally {
    conn.release();
  }
}

/**
 * Runs a read as one bare extended-protocol statement on the shared pool, whose connections were opened with
 * default_transaction_read_only = on, statement_timeout, lock_timeout and search_path (PgSession): the implicit
 * transaction is read-only and time-limited exactly as the explicit one above would be, for one statement's
 * cost, and postgres.js may pipeline concurrent calls on one connection as it does for bare queries.
 * The caller checks that the pool's session matches the call (same limits, the tool's schema) and that the server
 * confirmed read-only. No cancel request on abort: with pipelining it could hit another call's statement, and
 * statement_timeout ends this one anyway; the caller just gets its answer early.
 */
export async function runPgFast(sql: PgSql, statement: string, o: { statementTimeoutMs: number; signal?: AbortSignal; prepare?: boolean }): Promise<Row[]> {
  if (o.signal?.aborted) throw failure('ABORTED');
  // A prepared statement is safe here even when postgres.js re-prepares and retries it (after a schema change made
  // the cached plan invalid): the retry runs on the same read-only, time-limited session. Not so in
  // runPgStatement, where the retry would come after the pipelined rollback, outside the transaction.
  const query = sql.unsafe<Row[]>(statement, [], o.prepare ? PREPARED : EXTENDED).execute();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const early = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // The server did not enforce its timeout (stuck network?): cancelling is the only lever left.
      void query.cancel();
      reject(failure('STATEMENT_TIMEOUT'));
    }, ms(o.statementTimeoutMs) + CLIENT_GRACE_MS);
    onAbort = () => reject(failure('ABORTED'));
    o.signal?.addEventListener('abort', onAbort, { once: true });
  });
  query.catch(() => undefined); // settled later than `early`: never an unhandled rejection
  try {
    return Array.from(await Promise.race([query, early]));
  } finally {
    clearTimeout(timer);
    if (onAbort) o.signal?.removeEventListener('abort', onAbort);
  }
}
