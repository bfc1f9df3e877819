/**
 * Settling queries pipelined on one reserved postgres.js connection. When the connection is lost mid-pipeline (the
 * backend was terminated, the server restarted, the network dropped), postgres.js rejects the queries it had
 * written with CONNECTION_CLOSED but can leave the last ones pending for ever; a plain Promise.allSettled then never
 * returns and the call (and its connector slot) hangs. Here the first connection-loss error fails the pipeline:
 * whatever has not settled shortly after counts as rejected with that error.
 */

/** Error codes postgres.js and Node give when the connection itself is gone (not an error of the statement). */
const CONNECTION_LOSS = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'CONNECT_TIMEOUT']);

function isConnectionLoss(err: unknown): boolean {
  const e = err as { code?: unknown; severity?: unknown } | null;
  if (typeof e?.code !== 'string') return false;
  // A FATAL error from the server (terminated backend 57P01, shutdown 57P02/57P03...) ends its session, and SQLSTATE
  // class 08 is a connection exception: the connection is as gone as after a closed socket.
  return CONNECTION_LOSS.has(e.code) || e.severity === 'FATAL' || e.code.startsWith('08');
}

/**
 * The deadline of a call's pipeline: the server's statement timeout, the client's own cancel one second later, and
 * room for the cancel to land. Past it the connection is taken as lost (a live one has answered).
 */
export const pipelineDeadline = (statementTimeoutMs: number): number => statementTimeoutMs + 5000;
/** The deadline of a session reset (rollback; discard all): two statements that need no time of their own. */
export const RESET_DEADLINE_MS = 5000;

/** How long queries still pending after a connection loss may take to settle on their own. */
const LOSS_GRACE_MS = 50;

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: PromiseSettledResult<Awaited<T[K]>> };

/** What a query still pending at the deadline is rejected with: the connection is treated as lost. */
function stalled(): Error {
  return Object.assign(new Error('the connection stopped answering'), { code: 'CONNECTION_CLOSED' });
}

/**
 * Promise.allSettled for one connection's pipeline, that returns even when the connection dies under it: on the
 * first connection-loss error (after a short grace for the others), or at `deadlineMs`, whichever comes first. The
 * deadline is the backstop for a connection that died before postgres.js wrote anything (nothing ever rejects); it
 * lies past the server's own statement timeout and the client's cancel, so a live connection has answered by then.
 */
export function settlePipeline<T extends readonly unknown[]>(queries: T, deadlineMs: number): Promise<Settled<T>> {
  return new Promise((resolve) => {
    const deadline = setTimeout(() => finish(stalled()), deadlineMs);
    const results: (PromiseSettledResult<unknown> | undefined)[] = queries.map(() => undefined);
    let pending = queries.length;
    let graceTimer: ReturnType<typeof setTimeout> | null = null;
    const finish = (loss?: unknown): void => {
      if (pending < 0) return;
      clearTimeout(deadline);
      if (graceTimer) clearTimeout(graceTimer);
      graceTimer = null;
      pending = -1;
      resolve(results.map((r) => r ?? { status: 'rejected', reason: loss }) as Settled<T>);
    };
    queries.forEach((query, i) => {
      Promise.resolve(query).then(
        (value) => {
          results[i] = { status: 'fulfilled', value };
          if (--pending === 0) finish();
        },
        (reason: unknown) => {
          results[i] = { status: 'rejected', reason };
          if (--pending === 0) finish();
          else if (pending > 0 && graceTimer === null && isConnectionLoss(reason)) graceTimer = setTimeout(() => finish(reason), LOSS_GRACE_MS);
        },
      );
    });
    if (queries.length === 0) finish();
  });
}

/** Any of these settled results failed because the connection was lost. */
export function lostConnection(results: readonly PromiseSettledResult<unknown>[], ...errors: unknown[]): boolean {
  return results.some((r) => r.status === 'rejected' && isConnectionLoss(r.reason)) || errors.some(isConnectionLoss);
}

/** How long a reserve may wait before a second one races it (see reserveConnection). */
const RESERVE_RETRY_MS = 1000;

interface Reservable<R extends { release(): void }> {
  reserve(): Promise<R>;
  options?: { connect_timeout?: number };
}

/**
 * `sql.reserve()` with a way out of a postgres.js 3.4.9 bug. A reserve waiting for a connection (none open) sits in
 * the pool's queue; when a connection closes meanwhile, postgres.js reconnects it with the first queued request as
 * the connection's initial query, and a connection never hands itself to an initial *reserve*: the request is
 * dropped, its promise never settles (the call hung), and the connection goes to the open ones unused. A second
 * reserve then finds that connection at once. So: when the first has not answered after RESERVE_RETRY_MS, another
 * races it, once a second, until the pool's connect timeout (plus a second) has passed, when the call fails as a lost
 * connection. The first connection to arrive is the call's; any that arrives later is released at once.
 */
export function reserveConnection<R extends { release(): void }>(sql: Reservable<R>, retryMs = RESERVE_RETRY_MS): Promise<R> {
  const deadlineMs = (sql.options?.connect_timeout ?? 30) * 1000 + 1000;
  return new Promise<R>((resolve, reject) => {
    let settled = false;
    const started = Date.now();
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearInterval(timer);
      return true;
    };
    const attempt = (): void => {
      sql.reserve().then(
        (conn) => (finish() ? resolve(conn) : conn.release()),
        (err: unknown) => finish() && reject(err),
      );
    };
    const timer = setInterval(() => {
      if (settled) return;
      if (Date.now() - started >= deadlineMs) {
        if (finish()) reject(Object.assign(new Error('no connection became available'), { code: 'CONNECTION_CLOSED' }));
      } else attempt();
    }, retryMs);
    attempt();
  });
}

/**
 * Gives a reserved connection back, unless it was lost: postgres.js has then already moved it to its closed
 * connections (reconnected on demand), and release() would put the dead connection back among the open ones, where
 * the next query on it throws inside a timer (an uncaught exception that ends the process).
 */
export function releaseReserved(conn: { release(): void }, lost: boolean): void {
  if (!lost) conn.release();
}
