/** Runs one guarded tool call on postgres: a pipelined, time-limited transaction on a reserved pool connection. */
import type postgres from 'postgres';
import type { ExecutionContext, ToolResult, ToolSpec } from '../types.ts';
import { guardPostgresSql } from '../sqlguard/postgres.ts';
import { errorResult, parseCallArgs, rowsResult, type Row } from '../shared/result.ts';
import { checkWrappable } from '../shared/sqltext.ts';
import { pgCallErrorText, type PgErrorContext } from './errors.ts';
import type { PgSql } from './pool.ts';

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

/** Extra time the server's statement_timeout gets before the client cancels the query itself. */
const CLIENT_GRACE_MS = 1000;

// postgres.js runs parameterless unsafe() queries on the simple protocol, which executes every statement in the
// string. The user's statement must go through the extended protocol (Parse/Bind/Execute), which runs exactly
// one: a stacked `; COMMIT; DROP ...` that slipped past the guard is then a syntax error, never a second statement.
const EXTENDED: postgres.UnsafeQueryOptions & { simple: boolean } = { prepare: false, simple: false };

const ms = (n: number): number => Math.max(1, Math.floor(n));

/**
 * Runs `statement` inside its own transaction on one reserved connection, written as a single pipeline so the
 * whole call costs about one round trip:
 *
 *   Q  begin read only; set transaction read only; set local statement_timeout = N; set local lock_timeout = M;
 *      set local search_path = pg_catalog, <tool schema>, pg_temp
 *   P/B/E/S  <statement>                       (extended protocol)
 *   Q  rollback        (read) | commit (write; after an error, postgres turns it into a rollback)
 *
 * The SET LOCALs and anything the statement changes (even set_config(..., false)) vanish with the transaction,
 * so the connection goes back to the pool clean, also after a timeout. `set transaction read only` repeats the
 * BEGIN option so that even a connection somehow left inside a transaction would run the read read-only.
 * Exported for tests, which use it to reach the protocol-level protections without the guard.
 */
export async function runPgStatement(sql: PgSql, statement: string, o: PgRunOptions): Promise<PgRunOutcome> {
  if (o.signal?.aborted) throw Object.assign(new Error('The call was aborted.'), { code: 'ABORTED' });
  const conn = await sql.reserve();
  try {
    const setup = [
      o.readOnly ? 'begin transaction read only; set transaction read only' : 'begin transaction read write',
      `set local statement_timeout = ${ms(o.statementTimeoutMs)}`,
      `set local lock_timeout = ${ms(o.lockTimeoutMs)}`,
      // pg_catalog first as by default; pg_temp last so a temporary table cannot shadow the tool's table.
      ...(o.schema === undefined ? [] : [`set local search_path = pg_catalog, "${o.schema.replace(/"/g, '""')}", pg_temp`]),
    ].join('; ');
    // execute() sends each query now, in this order: postgres.js batches the three writes into one packet.
    const begin = conn.unsafe(setup).execute();
    const query = conn.unsafe<Row[]>(statement, [], EXTENDED).execute();
    const end = conn.unsafe(o.readOnly ? 'rollback' : 'commit').execute();

    // Backstops for the server-side timeout (and the caller's abort): a cancel request from a side connection.
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
    if (q.status === 'rejected') throw cancelledBy ? Object.assign(new Error(cancelledBy), { code: cancelledBy }) : q.reason;
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

/** The driver's execute: arguments, guard, wrapping, run, result shaping. Never throws. */
export async function executePg(sql: PgSql, tool: ToolSpec, args: Record<string, unknown>, ctx: ExecutionContext, connectTimeoutMs: number): Promise<ToolResult> {
  const call = parseCallArgs(args, ctx.limits);
  if (typeof call === 'string') return errorResult(call);

  const verdict = guardPostgresSql(call.sql, {
    table: { schema: tool.target.schema, name: tool.target.table },
    allowWrite: ctx.allowWrite,
    allowDdl: ctx.allowDdl,
    readOnly: ctx.readOnly,
  });
  if (!verdict.ok) return errorResult(verdict.reason);

  const write = !verdict.readOnly;
  // Defence in depth: the guard already applies these settings; a write must also be allowed here.
  if (write && (ctx.readOnly || !(verdict.kind === 'ddl' ? ctx.allowDdl : ctx.allowWrite))) {
    return errorResult('This tool is read-only: only SELECT statements are accepted.');
  }
  const text = checkWrappable(call.sql, 'postgresql');
  if (!text.ok) return errorResult(text.reason);

  // Reads: the row limit goes into the statement (the planner can stop early; one extra row tells truncation).
  const statement = write ? text.body : `select * from (\n${text.body}\n) as toolgate_q limit ${call.maxRows + 1}`;
  const errCtx: PgErrorContext = {
    config: ctx.config,
    credential: ctx.credential,
    connectTimeoutMs,
    statementTimeoutMs: ctx.limits.statementTimeoutMs,
    lockTimeoutMs: ctx.limits.lockTimeoutMs,
  };
  try {
    const out = await runPgStatement(sql, statement, {
      readOnly: !write,
      schema: tool.target.schema,
      statementTimeoutMs: ctx.limits.statementTimeoutMs,
      lockTimeoutMs: ctx.limits.lockTimeoutMs,
      signal: ctx.signal,
    });
    return rowsResult(out.rows, call.maxRows, ctx.limits.maxResultBytes, write ? (out.count ?? 0) : undefined);
  } catch (err) {
    return errorResult(pgCallErrorText(err, errCtx));
  }
}
