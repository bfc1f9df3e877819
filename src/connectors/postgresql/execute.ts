/** Runs one guarded tool call on postgres: arguments, guard, row-limiting wrapper, the right runner, result shaping. */
import type { ExecutionContext, ToolResult, ToolSpec } from '../types.ts';
import { guardPostgresSql } from '../sqlguard/postgres.ts';
import { errorResult, parseCallArgs, rowsResult } from '../shared/result.ts';
import { checkWrappable } from '../shared/sqltext.ts';
import { pgCallErrorText, type PgErrorContext } from './errors.ts';
import type { PgPool, PgSession } from './pool.ts';
import { runPgFast, runPgStatement, type PgRunOutcome } from './run.ts';

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

/** The driver's execute: arguments, guard, wrapping, run, result shaping. Never throws. */
export async function executePg(pool: PgPool, tool: ToolSpec, args: Record<string, unknown>, ctx: ExecutionContext, connectTimeoutMs: number): Promise<ToolResult> {
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
    const session: PgSession = { statementTimeoutMs: ctx.limits.statementTimeoutMs, lockTimeoutMs: ctx.limits.lockTimeoutMs, schema: tool.target.schema };
    const out: PgRunOutcome =
      !write && fastPathFits(pool, session)
        ? {
            rows: await runPgFast(pool.sql, statement, {
              statementTimeoutMs: session.statementTimeoutMs,
              signal: ctx.signal,
              prepare: shouldPrepare(pool, statement),
            }),
            count: null,
          }
        : await runPgStatement(pool.sql, statement, { readOnly: !write, ...session, signal: ctx.signal });
    return rowsResult(out.rows, call.maxRows, ctx.limits.maxResultBytes, write ? (out.count ?? 0) : undefined);
  } catch (err) {
    return errorResult(pgCallErrorText(err, errCtx));
  }
}
