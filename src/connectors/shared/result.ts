/** Tool-call plumbing common to SQL drivers: argument checks, row and byte caps, and the MCP result shapes. */
import type { ExecutionLimits, ToolResult } from '../types.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from './toolspec.ts';

export type Row = Record<string, unknown>;

export interface CallArgs {
  sql: string;
  /** Rows to return at most: min(limit, limits.maxRows). */
  maxRows: number;
}

/** Checks the arguments the inputSchema describes (the gateway may not have validated them). */
export function parseCallArgs(args: Record<string, unknown>, limits: ExecutionLimits): CallArgs | string {
  const { sql, limit = DEFAULT_LIMIT } = args;
  if (typeof sql !== 'string' || sql.trim() === '') return 'The argument "sql" must be a non-empty string holding one SELECT statement.';
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    return `The argument "limit" must be an integer from 1 to ${MAX_LIMIT}.`;
  }
  for (const key of Object.keys(args)) {
    if (key !== 'sql' && key !== 'limit') return `Unknown argument "${key}": only "sql" and "limit" are accepted.`;
  }
  return { sql, maxRows: Math.max(1, Math.min(limit, limits.maxRows)) };
}

export function errorResult(text: string): ToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

/**
 * The result of a successful call. `rows` may hold one row more than `maxRows` (fetched to detect truncation).
 * The JSON text is capped at `maxBytes` (UTF-8) by dropping rows from the end; either cap sets `truncated`.
 * `affected` is the affected-row count of a write, reported as rowCount instead of the rows returned.
 */
export function rowsResult(rows: Row[], maxRows: number, maxBytes: number, affected?: number): ToolResult {
  let truncated = rows.length > maxRows;
  const kept = truncated ? rows.slice(0, maxRows) : rows;
  // Serialise row by row: '[' + parts.join(',') + ']' is exactly JSON.stringify(kept), and the sizes tell
  // how many rows fit without re-serialising.
  const parts = kept.map((r) => JSON.stringify(r));
  let bytes = 2;
  let fit = 0;
  for (const p of parts) {
    const size = Buffer.byteLength(p) + (fit > 0 ? 1 : 0);
    if (bytes + size > maxBytes) break;
    bytes += size;
    fit++;
  }
  if (fit < parts.length) truncated = true;
  const finalRows = fit < kept.length ? kept.slice(0, fit) : kept;
  const text = `[${(fit < parts.length ? parts.slice(0, fit) : parts).join(',')}]`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { rows: finalRows, rowCount: affected ?? finalRows.length, truncated },
  };
}
