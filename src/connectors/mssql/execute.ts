/** Runs one prepared (guarded) mssql call and shapes its rows as JSON; the row and byte caps and the caller's abort stop it on the server. */
import sql from 'mssql';
import type { ExecutionContext, SqlToolSpec, ToolResult } from '../types.ts';
import { errorResult, RowCollector, type Row } from '../shared/result.ts';
import { int64TextToJson, toJsonSafe } from '../shared/jsonsafe.ts';
import type { PreparedCall } from '../shared/prepare.ts';
import { callErrorText, type ErrorContext } from './errors.ts';

/** Extra time given to the server's own cancellation before the client gives up on the request. */
const CLIENT_GRACE_MS = 1000;

/** A row as JSON: BIGINT arrives as text, datetime2/datetime (no zone) as a UTC Date (useUTC) whose zone is dropped. */
function rowFixer(columns: Record<string, { type?: { declaration?: string } }>): (row: Row) => Row {
  const kinds = new Map<string, string>();
  for (const [name, col] of Object.entries(columns)) kinds.set(name, String(col.type?.declaration ?? '').toLowerCase());
  return (row) => {
    const out: Row = {};
    for (const [k, v] of Object.entries(row)) {
      const kind = kinds.get(k) ?? '';
      if (kind === 'bigint' && typeof v === 'string') out[k] = int64TextToJson(v);
      else if (v instanceof Date && kind === 'date') out[k] = v.toISOString().slice(0, 10);
      else if (v instanceof Date && (kind === 'datetime' || kind === 'datetime2' || kind === 'smalldatetime')) out[k] = v.toISOString().slice(0, -1);
      else if (v instanceof Date && kind === 'time') out[k] = v.toISOString().slice(11, -1);
      else out[k] = toJsonSafe(v);
    }
    return out;
  };
}

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

export async function executeMssql(
  pool: sql.ConnectionPool,
  tool: SqlToolSpec,
  prepared: PreparedCall,
  ctx: ExecutionContext,
  connectTimeoutMs: number,
): Promise<ToolResult> {
  const errCtx: ErrorContext = {
    config: ctx.config,
    credential: ctx.credential,
    connectTimeoutMs,
    statementTimeoutMs: ctx.limits.statementTimeoutMs,
    lockTimeoutMs: ctx.limits.lockTimeoutMs,
  };
  if (ctx.signal?.aborted) return errorResult(callErrorText(failure('ABORTED'), errCtx));
  const collector = new RowCollector(prepared.maxRows, ctx.limits.maxResultBytes, prepared.narrowing);
  const tx = new sql.Transaction(pool);
  let began = false;
  try {
    await tx.begin(tool.target.snapshot ? sql.ISOLATION_LEVEL.SNAPSHOT : sql.ISOLATION_LEVEL.READ_COMMITTED);
    began = true;
    await new sql.Request(tx).batch(`SET LOCK_TIMEOUT ${Math.max(0, Math.floor(ctx.limits.lockTimeoutMs))}`);
    // The caller left while the transaction was being opened: the statement is never sent (rolled back below).
    if (ctx.signal?.aborted) throw failure('ABORTED');
    await new Promise<void>((resolve, reject) => {
      const req = new sql.Request(tx);
      req.stream = true;
      let fix: ((row: Row) => Row) | null = null;
      let stoppedFor: 'CAP' | 'STATEMENT_TIMEOUT' | 'ABORTED' | null = null;
      const stop = (why: 'CAP' | 'STATEMENT_TIMEOUT' | 'ABORTED'): void => {
        if (stoppedFor) return;
        stoppedFor = why;
        req.cancel(); // a TDS ATTENTION: the server stops the statement
      };
      const onAbort = (): void => stop('ABORTED');
      // Backstop when tedious' own requestTimeout (the pool's) is longer than this call's limit.
      const timer = setTimeout(() => stop('STATEMENT_TIMEOUT'), ctx.limits.statementTimeoutMs + CLIENT_GRACE_MS);
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (err: unknown): void => {
        clearTimeout(timer);
        ctx.signal?.removeEventListener('abort', onAbort);
        if (stoppedFor === 'CAP') resolve();
        else if (stoppedFor) reject(failure(stoppedFor));
        else if (err) reject(err);
        else resolve();
      };
      req.on('recordset', (columns: Record<string, { type?: { declaration?: string } }>) => (fix = rowFixer(columns)));
      req.on('row', (row: Row) => {
        if (stoppedFor) return;
        if (!collector.add(fix ? fix(row) : (toJsonSafe(row) as Row))) stop('CAP');
      });
      let error: unknown = null;
      req.on('error', (err: unknown) => (error ??= err));
      req.on('done', () => settle(error));
      // A saved tool's values, bound to its @p1, @p2, ... markers (the driver sends them as typed RPC parameters).
      for (const [i, v] of (prepared.values ?? []).entries()) req.input(`p${i + 1}`, v);
      req.query(prepared.statement);
    });
    return collector.result();
  } catch (err) {
    return errorResult(callErrorText(err, errCtx));
  } finally {
    // Whatever the statement did (it should have only read) is undone.
    if (began) await tx.rollback().catch(() => undefined);
  }
}
