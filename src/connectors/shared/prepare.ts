/**
 * The steps every SQL driver takes before it runs a call (shared/sql-driver.ts calls it): arguments, the dialect's
 * guard (in a span), the write check, the row-limit wrapper; each refusal counted by its stage.
 */
import type { GuardOptions, GuardResult, StatementKind } from './sqlguard/types.ts';
import type { ExecutionContext, ToolResult, SqlToolSpec } from '../types.ts';
import { parseCallArgs, refusedResult } from './result.ts';
import { checkWrappable, type Dialect as WrapDialect } from './sqltext.ts';
import { countGuardRefusal, type GuardRefusalReason } from '../../observability/metrics.ts';
import { inSpan } from '../../observability/tracing.ts';
import { applyPolicy, resolutionKey, type CallPolicy, type PolicyDialect } from './policy.ts';

export interface PreparedCall {
  /** The statement to send: the agent's SQL, wrapped with `LIMIT maxRows + 1` for reads (as is for a read-only dialect). */
  statement: string;
  write: boolean;
  /** What the guard found the statement to be (a DDL statement is also a write). */
  kind: StatementKind;
  maxRows: number;
  /**
   * The statement's shape when the guard computed one (PostgreSQL reads and writes), with the wrapper's numbers for
   * a read: texts of one shape resolve alike on the server (postgresql/guard/shape.ts).
   */
  shape?: string;
  /** With a tool policy: the values the statement's parameters take (caller attributes, mask texts, key pads). */
  params?: (string | Uint8Array)[];
  /** With a tool policy (PostgreSQL): the statement with typed NULLs for its parameters, for the resolution check. */
  resolutionStatement?: string;
}

/** The SQL connector types, each with its guard (`<type>/guard/`). */
type SqlType = 'postgresql' | 'mysql' | 'mssql' | 'oracle';

export interface Dialect {
  name: SqlType;
  guard(sql: string, opts: GuardOptions): GuardResult;
  /**
   * Wraps a read so the database stops after `limit` rows (one extra row tells truncation). `maxRowBytes`: a
   * dialect that can, also stops the statement before it sends a row larger than that (see postgresql/execute.ts).
   * Unset: a read-only dialect (mssql, oracle) with no wrapper (T-SQL refuses ORDER BY in a derived table, and both
   * stop reading at the cap and cancel instead); its calls are reads whatever the connector allows
   * (docs/decisions/0116-new-types-read-only.md), and the guard's one-statement verdict is what runs.
   */
  wrapRead?(body: string, limit: number, maxRowBytes: number): string;
  /** How the dialect builds a policy's derived table (shared/policy.ts); unset: tools with a policy are refused. */
  policy?: PolicyDialect;
}

/** The span of the guard's check, by dialect (constants: a call builds no name). */
const GUARD_SPAN = { postgresql: 'guard postgresql', mysql: 'guard mysql', mssql: 'guard mssql', oracle: 'guard oracle' } as const;

/** What the guard is told of the call: the tool's table, the write permissions, and what introspection recorded. */
function guardOptions(dialect: Dialect, tool: SqlToolSpec, ctx: ExecutionContext): GuardOptions {
  const t = tool.target;
  const policy = ctx.policy;
  if (dialect.wrapRead) {
    return {
      table: { schema: t.schema, name: t.table },
      allowWrite: ctx.allowWrite,
      allowDdl: ctx.allowDdl,
      // A tool with a policy only reads: a write's WHERE, RETURNING or row count would reach what the policy keeps out.
      readOnly: ctx.readOnly || policy !== undefined,
      ...(policy ? { policy: { key: policy.key, hidden: policy.policy.hidden_columns } } : {}),
      // MySQL: how the server compares table names, recorded at introspection (no query per call).
      lowerCaseTableNames: t.lowerCaseTableNames,
      storedFunctions: t.storedFunctions,
    };
  }
  return {
    table: { schema: t.schema, name: t.table },
    allowWrite: false,
    allowDdl: false,
    readOnly: true,
    caseSensitiveNames: t.caseSensitiveNames,
    defaultSchema: t.defaultSchema,
    columns: t.columns.map((c) => c.name),
    ...(policy ? { policy: { key: policy.key, hidden: policy.policy.hidden_columns } } : {}),
  };
}

/** A refusal before the database, counted by the stage that refused (toolgate_guard_refusals_total). */
function refused(dialect: Dialect, stage: GuardRefusalReason, text: string): ToolResult {
  countGuardRefusal(dialect.name, stage);
  return refusedResult(text);
}

/** Either the statement to run, or the tool result that refuses the call (never thrown: a refusal is a result). */
export function prepareCall(dialect: Dialect, tool: SqlToolSpec, args: Record<string, unknown>, ctx: ExecutionContext): PreparedCall | ToolResult {
  const call = parseCallArgs(args, ctx.limits);
  if (typeof call === 'string') return refused(dialect, 'arguments', call);
  const verdict = inSpan(GUARD_SPAN[dialect.name], () => dialect.guard(call.sql, guardOptions(dialect, tool, ctx)));
  if (!verdict.ok) return refused(dialect, 'statement', verdict.reason);
  const write = !verdict.readOnly;
  const { wrapRead } = dialect;
  // Defence in depth: the guard already applies these settings; a write must also be allowed here.
  if (write && (!wrapRead || ctx.readOnly || !(verdict.kind === 'ddl' ? ctx.allowDdl : ctx.allowWrite))) {
    return refused(dialect, 'read_only', 'This tool is read-only: only SELECT statements are accepted.');
  }
  // A policy is applied by rewriting every reference to the table (shared/policy.ts); a dialect that cannot is refused.
  if (ctx.policy && (wrapRead ? !dialect.policy || !verdict.refs || write : !hiddenOnly(ctx.policy))) {
    return refused(dialect, 'statement', 'This tool has column or row policies, which this connector type cannot apply: the call is refused.');
  }
  // A column the policy names that the table (as last introspected) lacks, renamed perhaps: its new name would be
  // exposed, so nothing runs until an admin updates the policy.
  if (ctx.policy && !policyFits(ctx.policy, tool)) {
    return refused(dialect, 'statement', "This tool's policy names a column the table no longer has; an admin must update the policy.");
  }
  if (!wrapRead) return { statement: call.sql, write: false, kind: verdict.kind, maxRows: call.maxRows };
  const applied =
    ctx.policy && dialect.policy
      ? applyPolicy(dialect.policy, call.sql, verdict.refs!, qualifiedTable(dialect.policy, tool), columnNames(tool), ctx.policy)
      : null;
  // Only postgresql and mysql have a wrapper (the read-only dialects returned above).
  const text = checkWrappable(applied?.statement ?? call.sql, dialect.name as WrapDialect);
  if (!text.ok) return refused(dialect, 'not_wrappable', text.reason);
  const rowBytes = maxRowBytes(ctx.limits.maxResultBytes);
  const statement = write ? text.body : wrapRead(text.body, call.maxRows + 1, rowBytes);
  let shape = verdict.shape === undefined ? undefined : write ? `w\u0000${verdict.shape}` : `r${call.maxRows + 1}:${rowBytes}\u0000${verdict.shape}`;
  if (!applied) return { statement, write, kind: verdict.kind, maxRows: call.maxRows, ...(shape === undefined ? {} : { shape }) };
  if (shape !== undefined) shape = `${shape}\u0000${resolutionKey(ctx.policy!)}`;
  const check = checkWrappable(applied.resolution, dialect.name as WrapDialect);
  const resolutionStatement = check.ok ? wrapRead(check.body, call.maxRows + 1, rowBytes) : statement;
  return {
    statement,
    write,
    kind: verdict.kind,
    maxRows: call.maxRows,
    params: applied.params,
    resolutionStatement,
    ...(shape === undefined ? {} : { shape }),
  };
}

const policyFits = (cp: CallPolicy, tool: SqlToolSpec): boolean => {
  const names = new Set(columnNames(tool));
  return cp.policy.hidden_columns.every((c) => names.has(c)) && cp.policy.masked_columns.every((m) => names.has(m.column));
};

/** The read-only dialects (mssql, oracle) apply hidden columns in their guard, and nothing else of a policy. */
const hiddenOnly = (cp: CallPolicy): boolean => cp.policy.masked_columns.length === 0 && cp.policy.row_filter === null;

const qualifiedTable = (d: PolicyDialect, tool: SqlToolSpec): string => `${d.quote(tool.target.schema)}.${d.quote(tool.target.table)}`;
const columnNames = (tool: SqlToolSpec): string[] => tool.target.columns.map((c) => c.name);

/**
 * The largest row worth sending: one whose text form exceeds twice the byte cap cannot fit the JSON result (a
 * value's JSON is at least half its text form: bytea hex is 2x the bytes, base64 1.33x), so it is never read.
 */
const maxRowBytes = (maxResultBytes: number): number => 2 * maxResultBytes + 1024;

export function isRefusal(prepared: PreparedCall | ToolResult): prepared is ToolResult {
  return 'content' in prepared;
}
