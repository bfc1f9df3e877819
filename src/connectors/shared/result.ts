/** Tool-call plumbing common to SQL drivers: argument checks, row and byte caps, and the MCP result shapes. */
import type { CallLimits, ToolResult } from '../types.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from './toolspec.ts';
import type { RefusalClass } from './sqlguard/types.ts';

export type Row = Record<string, unknown>;

export interface CallArgs {
  sql: string;
  /** Rows to return at most: min(limit, limits.maxRows). */
  maxRows: number;
}

/** Checks the arguments the inputSchema describes (the gateway may not have validated them). */
export function parseCallArgs(args: Record<string, unknown>, limits: CallLimits): CallArgs | string {
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

/** Results of calls refused before they reached the connector (argument checks, the guard): see `refusedResult`. */
const notRun = new WeakSet<ToolResult>();

/**
 * An error result for a call the driver refused before it reached the connector (its arguments, the SQL guard, the
 * read-only check): nothing ran, so the call is not counted against the monthly quota (tools/runtime.ts executeTool
 * gives its unit back; docs/quota-and-audit-accounting.md). Marked out of band, so the wire form is unchanged.
 */
export function refusedResult(text: string, reasonClass?: RefusalClass): ToolResult {
  const result = errorResult(text);
  notRun.add(result);
  // Without a class (an aborted call, a connector type not served here) it is not a refusal of the statement.
  if (reasonClass) classes.set(result, reasonClass);
  return result;
}

/** The reason class of each refusal (refusedResult), out of band like `notRun`: the audit row's `reason_class`. */
const classes = new WeakMap<ToolResult, RefusalClass>();

/** The reason class of a refused call's result (docs/decisions/0320), or undefined when the call was not refused. */
export function refusalClassOf(result: ToolResult): RefusalClass | undefined {
  return classes.get(result);
}

/** Whether a result is a refusal before the connector (refusedResult): the call ran nothing. */
export function ranNothing(result: ToolResult): boolean {
  return notRun.has(result);
}

/**
 * Applies the row and byte caps while rows arrive (issue 7): a driver feeds rows one at a time and stops reading
 * (cancelling the statement) as soon as add() answers false, so a call never holds more than its byte cap plus
 * the row that crossed it. Each row is serialised once; the result text is the kept parts joined, which is
 * exactly JSON.stringify of the kept rows.
 */
export class RowCollector {
  readonly rows: Row[] = [];
  private readonly parts: string[] = [];
  private bytes = 2; // '[' and ']'
  truncated = false;

  constructor(
    private readonly maxRows: number,
    private readonly maxBytes: number,
  ) {}

  /** Keeps `row` if it fits both caps; false once a cap is reached (every later row is dropped too). */
  add(row: Row): boolean {
    if (this.truncated) return false;
    if (this.rows.length >= this.maxRows) return this.stop();
    let part: string;
    try {
      part = JSON.stringify(row);
    } catch {
      // A value too big for a string (RangeError) cannot fit the cap anyway.
      return this.stop();
    }
    const size = Buffer.byteLength(part) + (this.parts.length ? 1 : 0);
    if (this.bytes + size > this.maxBytes) return this.stop();
    this.bytes += size;
    this.parts.push(part);
    this.rows.push(row);
    return true;
  }

  /** Marks truncation without a row (the database stopped a row that was too big to send). */
  stop(): false {
    this.truncated = true;
    return false;
  }

  /** `affected` is the affected-row count of a write, reported as rowCount instead of the rows returned. */
  result(affected?: number): ToolResult {
    return {
      content: [{ type: 'text', text: `[${this.parts.join(',')}]` }],
      structuredContent: { rows: this.rows, rowCount: affected ?? this.rows.length, truncated: this.truncated },
    };
  }
}

/** The result of a successful call from rows already in memory (see RowCollector for the caps). */
export function rowsResult(rows: Row[], maxRows: number, maxBytes: number, affected?: number): ToolResult {
  const collector = new RowCollector(maxRows, maxBytes);
  for (const row of rows) if (!collector.add(row)) break;
  return collector.result(affected);
}
