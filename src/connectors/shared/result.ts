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
 * What the caller can change to see rows the caps left out, told in the truncation note (decision 0306): `sql` an
 * agent's statement (with its `limit` argument), `saved` a saved tool's parameters, `pipeline` a MongoDB find or
 * aggregate. `maxLimit`: the largest `limit` the caller may pass, when it is above this call's row cap.
 */
export interface Narrowing {
  kind: 'sql' | 'saved' | 'pipeline';
  maxLimit?: number;
}

const NARROW_ROWS: Record<Narrowing['kind'], string> = {
  sql: 'To see others, narrow the statement with WHERE (or page: ORDER BY a key and WHERE it is past the last value shown), or aggregate (COUNT(*), GROUP BY)',
  saved: "To see others, narrow the call with this tool's parameters",
  pipeline: 'To see others, narrow with a filter ($match), or page: sort on a key and filter past the last value shown',
};
const NARROW_SIZE: Record<Narrowing['kind'], string> = {
  sql: 'Select fewer or shorter columns (leave out long text or binary values, or take a substring), or narrow the statement with WHERE.',
  saved: "Narrow the call with this tool's parameters, or ask for a tool that selects fewer columns.",
  pipeline: 'Project fewer or shorter fields, or narrow with a filter ($match).',
};

/**
 * The text a truncated answer adds after the rows (decision 0306): how many rows are shown, that more exist, which cap
 * cut them and how to narrow. A second text block, so the first stays the JSON array of rows (spec tools/call).
 */
function truncationNote(shown: number, cut: 'rows' | 'size', maxRows: number, maxBytes: number, how: Narrowing): string {
  const first = shown === 1 ? 'only the first row is shown' : `only the first ${shown} rows are shown`;
  const limit = `${maxRows} row${maxRows === 1 ? '' : 's'}`;
  if (cut === 'rows') {
    const raise = how.maxLimit !== undefined && how.maxLimit > maxRows ? `, or raise the "limit" argument (at most ${how.maxLimit})` : '';
    return `Truncated: ${first}; more rows exist beyond this call's limit of ${limit}. ${NARROW_ROWS[how.kind]}${raise}.`;
  }
  if (shown === 0) return `Truncated: no row is shown; the first row alone exceeds the answer's size cap of ${maxBytes} bytes. ${NARROW_SIZE[how.kind]}`;
  return `Truncated: ${first}; more rows exist, left out by the answer's size cap of ${maxBytes} bytes. ${NARROW_SIZE[how.kind]}`;
}

/** UTF-8 bytes `text` takes inside a JSON string: a row's JSON escapes only `"` and `\` again (no control character is left raw). */
function jsonStringBytes(text: string, bytes: number): number {
  let extra = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 92) extra++;
  }
  return bytes + extra;
}

/** The answer without rows, with the largest counts (20 digits): what a result takes besides its rows. */
const ENVELOPE_BYTES = Buffer.byteLength(
  JSON.stringify({
    content: [
      { type: 'text', text: '[]' },
      { type: 'text', text: '' },
    ],
    structuredContent: { rows: [], rowCount: 1e20, truncated: false },
  }),
);

/**
 * Applies the row and byte caps while rows arrive (issue 7): a driver feeds rows one at a time and stops reading
 * (cancelling the statement) as soon as add() answers false, so a call never holds more than its byte cap plus
 * the row that crossed it. Each row is serialised once; the result text is the kept parts joined, which is
 * exactly JSON.stringify of the kept rows. The byte cap bounds the whole answer as JSON (decision 0306): the rows
 * count twice (the text's escaped copy and `structuredContent.rows`), and the envelope and the longest truncation
 * note are set aside first.
 */
export class RowCollector {
  readonly rows: Row[] = [];
  private readonly parts: string[] = [];
  private bytes: number;
  private cut: 'rows' | 'size' | null = null;

  constructor(
    private readonly maxRows: number,
    private readonly maxBytes: number,
    private readonly narrowing: Narrowing = { kind: 'sql' },
  ) {
    // The longest note this call could add (its counts at their largest), escaped as JSON.
    const note = Math.max(
      ...(['rows', 'size'] as const).map((cut) => Buffer.byteLength(JSON.stringify(truncationNote(maxRows, cut, maxRows, maxBytes, narrowing)))),
    );
    this.bytes = ENVELOPE_BYTES + note;
  }

  get truncated(): boolean {
    return this.cut !== null;
  }

  /** Keeps `row` if it fits both caps; false once a cap is reached (every later row is dropped too). */
  add(row: Row): boolean {
    if (this.cut) return false;
    if (this.rows.length >= this.maxRows) return this.stop('rows');
    let part: string;
    try {
      part = JSON.stringify(row);
    } catch {
      // A value too big for a string (RangeError) cannot fit the cap anyway.
      return this.stop();
    }
    const raw = Buffer.byteLength(part);
    const size = raw + jsonStringBytes(part, raw) + (this.parts.length ? 2 : 0);
    if (this.bytes + size > this.maxBytes) return this.stop();
    this.bytes += size;
    this.parts.push(part);
    this.rows.push(row);
    return true;
  }

  /** Marks truncation without a row (by default the size cap: the database stopped a row that was too big to send). */
  stop(cut: 'rows' | 'size' = 'size'): false {
    this.cut ??= cut;
    return false;
  }

  /** `affected` is the affected-row count of a write, reported as rowCount instead of the rows returned. */
  result(affected?: number): ToolResult {
    const content: ToolResult['content'] = [{ type: 'text', text: `[${this.parts.join(',')}]` }];
    if (this.cut) content.push({ type: 'text', text: truncationNote(this.rows.length, this.cut, this.maxRows, this.maxBytes, this.narrowing) });
    return { content, structuredContent: { rows: this.rows, rowCount: affected ?? this.rows.length, truncated: this.cut !== null } };
  }
}

/** The result of a successful call from rows already in memory (see RowCollector for the caps). */
export function rowsResult(rows: Row[], maxRows: number, maxBytes: number, affected?: number, narrowing?: Narrowing): ToolResult {
  const collector = new RowCollector(maxRows, maxBytes, narrowing);
  for (const row of rows) if (!collector.add(row)) break;
  return collector.result(affected);
}
