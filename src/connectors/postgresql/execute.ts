/** Runs one prepared tool call on postgres (the guard ran in shared/sql-driver.ts): resolution check, the right runner, result shaping. */
import type { ExecutionContext, ExecutionLimits, ToolResult, SqlToolSpec } from '../types.ts';
import { guardPostgresSql } from './guard/lazy.ts';
import { bindPostgres, PG_SYNTAX } from './saved.ts';
import { errorResult, RowCollector } from '../shared/result.ts';
import type { Dialect, PreparedCall } from '../shared/prepare.ts';
import { isRowTooLarge, pgCallErrorText, ROW_TOO_LARGE, type PgErrorContext } from './errors.ts';
import type { PgPool, PgSession } from './pool.ts';
import { runPgFast, runPgStatement, type PgRunOutcome } from './run.ts';
import { checkPgResolution, PG_RESOLUTION_DEFAULT_TTL_MS, ResolutionUnavailable } from './resolution.ts';
import { PG_POLICY } from './policy.ts';
import { PgRowShaper } from './shape.ts';

/** What a postgresql call reads: a database call's context, and how long a resolution verdict is reused. */
export type PgExecutionContext = ExecutionContext<ExecutionContext['config'], PgExecutionLimits>;
interface PgExecutionLimits extends ExecutionLimits {
  /** How long a server-side resolution verdict is reused (resolution.ts); default 30 s, 0 = every call. */
  resolutionCacheTtlMs?: number;
}

export const PG_DIALECT: Dialect = {
  name: 'postgresql',
  guardSpan: 'guard postgresql',
  syntax: PG_SYNTAX,
  guard: guardPostgresSql,
  bind: bindPostgres,
  policy: PG_POLICY,
  tables: true,
  // The planner can stop early once the limit is reached. The filter is the server-side half of the byte cap:
  // postgres.js buffers a whole DataRow before handing it over, so a row bigger than the cap allows (a 500 MB
  // value) must never be sent. It fails the statement instead (a data-dependent cast of a marker text), and the
  // rows that came before it make a truncated result. `toolgate_q.*` is the whole row even when the query has a
  // column named toolgate_q; every function is qualified so no user object can stand in for it.
  wrapRead: (body, limit, maxRowBytes) =>
    `select * from (\n${body}\n) as toolgate_q` +
    ` where (case when pg_catalog.octet_length((toolgate_q.*)::pg_catalog.text) > ${maxRowBytes}` +
    ` then pg_catalog.concat('${ROW_TOO_LARGE}', '')::pg_catalog.int4 end) is null limit ${limit}`,
};

/** Whether a read may take the one-statement path: the pool's session defaults are exactly this call's settings. */
function fastPathFits(pool: PgPool, want: PgSession): boolean {
  const s = pool.session;
  return (
    s !== null &&
    !pool.tainted &&
    // The server's own report (ParameterStatus), not what we asked for: a proxy may have dropped the setting.
    (pool.sql.parameters as Record<string, unknown>).default_transaction_read_only === 'on' &&
    s.statementTimeoutMs === want.statementTimeoutMs &&
    s.lockTimeoutMs === want.lockTimeoutMs &&
    s.schema === want.schema
  );
}

/**
 * Named prepared statements for repeated reads on the fast path: the server then parses and plans a statement once
 * per connection instead of on every call (that planning costs about as much as running a small indexed read).
 * Agent SQL is arbitrary, so this is bounded: a text is prepared from its second sighting on, only when short, and
 * at most PREPARED_PER_POOL distinct texts per pool (postgres.js keeps a connection's statements until the
 * connection closes, and pools are replaced when idle or reconfigured). Everything else runs unnamed, as before.
 */
const PREPARED_PER_POOL = 64;
const PREPARED_MAX_LENGTH = 4096;
const SEEN_MAX = 1024;
const statementBudgets = new WeakMap<PgPool, { prepared: Set<string>; seen: Set<string> }>();

function shouldPrepare(pool: PgPool, statement: string): boolean {
  if (statement.length > PREPARED_MAX_LENGTH) return false;
  let budget = statementBudgets.get(pool);
  if (!budget) statementBudgets.set(pool, (budget = { prepared: new Set(), seen: new Set() }));
  if (budget.prepared.has(statement)) return true;
  if (budget.prepared.size >= PREPARED_PER_POOL) return false;
  if (!budget.seen.has(statement)) {
    if (budget.seen.size >= SEEN_MAX) budget.seen.clear();
    budget.seen.add(statement);
    return false;
  }
  budget.seen.delete(statement);
  budget.prepared.add(statement);
  return true;
}

/** The driver's runner: resolution check, run, result shaping. Never throws. */
export async function runPgCall(
  pool: PgPool,
  tool: SqlToolSpec,
  prepared: PreparedCall,
  ctx: PgExecutionContext,
  connectTimeoutMs: number,
): Promise<ToolResult> {
  const { statement, write, kind, maxRows, shape, values } = prepared;
  const errCtx: PgErrorContext = {
    config: ctx.config,
    credential: ctx.credential,
    connectTimeoutMs,
    statementTimeoutMs: ctx.limits.statementTimeoutMs,
    lockTimeoutMs: ctx.limits.lockTimeoutMs,
  };
  // Rows are capped while they arrive: a read is cancelled on the server as soon as the cap is reached.
  const collector = new RowCollector(maxRows, ctx.limits.maxResultBytes, prepared.narrowing);
  // Rows arrive as arrays and are named here, so a join's columns of the same name each keep their value (shape.ts).
  const shaper = new PgRowShaper((row) => collector.add(row), maxRows, ctx.limits.maxResultBytes);
  const onValues = shaper.onValues;
  // One round trip (the simple protocol): a parameter would add the extended protocol's Describe. The pid is the
  // backend's own integer, checked before it goes into the text.
  const cancelBackend = (pid: number) => {
    if (!Number.isSafeInteger(pid)) return Promise.reject(new Error('bad backend pid'));
    const side = pool.canceller();
    // No budget token for a cancel session now: run.ts falls back to the protocol's CancelRequest (decision 0411).
    return side ? side.unsafe(`select pg_catalog.pg_cancel_backend(${pid})`) : Promise.reject(new Error('no connection for a cancel'));
  };
  // The side session that cancels is opened with the pool's first call, not at its first cancel: a read that reaches
  // its cap keeps receiving rows (read and dropped) until the cancel lands, and opening a session then is the slow part.
  warmCanceller(pool);
  try {
    const session: PgSession = { statementTimeoutMs: ctx.limits.statementTimeoutMs, lockTimeoutMs: ctx.limits.lockTimeoutMs, schema: tool.target.schema };
    // --- server-side resolution check (resolution.ts): what the server resolves the text to, cached per pool and shape ---
    const resolved = await checkPgResolution(pool, {
      statement: prepared.resolutionStatement ?? statement,
      kind: kind === 'ddl' ? 'ddl' : write ? 'write' : 'read',
      schema: tool.target.schema,
      table: tool.target.table,
      statementTimeoutMs: session.statementTimeoutMs,
      lockTimeoutMs: session.lockTimeoutMs,
      ttlMs: ctx.limits.resolutionCacheTtlMs ?? PG_RESOLUTION_DEFAULT_TTL_MS,
      ...(shape === undefined ? {} : { shape }),
      // The `$n` the checked text keeps (a saved tool's arguments; a policy's values are typed NULLs there).
      ...(values ? { params: prepared.resolutionParams ?? values.length } : {}),
      // Issue 38: exactly the relations the guard found the statement touching.
      ...(prepared.touched && kind !== 'ddl' ? { relations: prepared.touched.map((t) => ({ schema: t.schema, table: t.table })) } : {}),
    });
    if (!resolved.ok) return errorResult(resolved.reason);
    // --- end of the resolution check ---
    const out: PgRunOutcome =
      !write && fastPathFits(pool, session)
        ? await runPgFast(pool.sql, statement, {
            statementTimeoutMs: session.statementTimeoutMs,
            signal: ctx.signal,
            // A saved statement's text is fixed (one per tool version): prepared on each connection from its first call.
            prepare: tool.target.saved !== undefined || shouldPrepare(pool, statement),
            values,
            onValues,
            cancelBackend,
          })
        : await runPgStatement(pool.sql, statement, { readOnly: !write, ...session, signal: ctx.signal, onValues, cancelBackend, values });
    await nameHeldRows(pool, shaper);
    return collector.result(write ? (out.count ?? 0) : undefined);
  } catch (err) {
    // The wrapper stopped a row too big for the cap: the rows before it are the (truncated) result.
    if (!write && isRowTooLarge(err)) {
      await nameHeldRows(pool, shaper).catch(() => shaper.flush(new Map()));
      return (collector.stop(), collector.result());
    }
    if (err instanceof ResolutionUnavailable) return errorResult(err.message);
    return errorResult(pgCallErrorText(err, errCtx));
  }
}

/** Reads the names of the tables a result with repeated column names came from (one catalog query), then names its rows. */
async function nameHeldRows(pool: PgPool, shaper: PgRowShaper): Promise<void> {
  const oids = shaper.tablesWanted();
  const names = new Map<number, string>();
  if (oids.length > 0) {
    const found = await pool.sql.unsafe<{ oid: string; relname: string }[]>(
      'select c.oid::pg_catalog.text as oid, c.relname from pg_catalog.pg_class c where c.oid = any($1::pg_catalog.oid[])',
      [oids.map(String)],
    );
    for (const r of found) names.set(Number(r.oid), r.relname);
  }
  shaper.flush(names);
}

const warmed = new WeakSet<PgPool>();
function warmCanceller(pool: PgPool): void {
  if (warmed.has(pool)) return;
  const side = pool.canceller();
  // No budget token free now: a later call of the pool tries again.
  if (!side) return;
  warmed.add(pool);
  side.unsafe('select 1').catch(() => warmed.delete(pool));
}
