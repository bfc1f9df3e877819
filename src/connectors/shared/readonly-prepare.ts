/**
 * The steps of the read-only SQL drivers (mssql, oracle) before they run a call: arguments, then the dialect's guard.
 * No row-limiting wrapper (T-SQL refuses ORDER BY in a derived table, and both types stop reading at the cap and
 * cancel instead), so the guard's one-statement verdict is what runs.
 */
import type { GuardOptions, GuardResult } from './sqlguard/types.ts';
import type { ExecutionContext, SqlToolSpec, ToolResult } from '../types.ts';
import { parseCallArgs, refusedResult } from './result.ts';

export interface ReadOnlyCall {
  sql: string;
  maxRows: number;
}

export function prepareReadOnlyCall(
  guard: (sql: string, opts: GuardOptions) => GuardResult,
  tool: SqlToolSpec,
  args: Record<string, unknown>,
  ctx: ExecutionContext,
): ReadOnlyCall | ToolResult {
  const call = parseCallArgs(args, ctx.limits);
  if (typeof call === 'string') return refusedResult(call);
  const t = tool.target;
  const verdict = guard(call.sql, {
    table: { schema: t.schema, name: t.table },
    // These types are read-only through Toolgate whatever the connector allows (docs/decisions/0116-new-types-read-only.md).
    allowWrite: false,
    allowDdl: false,
    readOnly: true,
    caseSensitiveNames: t.caseSensitiveNames,
    defaultSchema: t.defaultSchema,
    columns: t.columns.map((c) => c.name),
  });
  if (!verdict.ok) return refusedResult(verdict.reason);
  if (!verdict.readOnly) return refusedResult('This tool is read-only: only SELECT statements are accepted.');
  return { sql: call.sql, maxRows: call.maxRows };
}

export function isReadOnlyRefusal(p: ReadOnlyCall | ToolResult): p is ToolResult {
  return 'content' in p;
}
