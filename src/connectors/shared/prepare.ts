/**
 * The steps every SQL driver takes before it runs a call (shared/sql-driver.ts calls it): arguments, the dialect's
 * guard (in a span), the write check, the row-limit wrapper; each refusal counted by its stage.
 */
import type { GuardOptions, GuardResult, RefusalClass, StatementKind } from './sqlguard/types.ts';
import type { ExecutionContext, ToolResult, SqlTarget, SqlToolSpec, SavedStatement, CallPolicy } from '../types.ts';
import { parseCallArgs, refusedResult, type Narrowing } from './result.ts';
import { checkWrappable, type SqlSyntax } from './sqltext.ts';
import { countGuardRefusal, type GuardRefusalReason } from '../../observability/metrics.ts';
import { inSpan } from '../../observability/tracing.ts';
import type { BoundStatement, SavedBinding } from './saved.ts';
import { MAX_LIMIT } from './toolspec.ts';
import { savedArgumentsProblem } from './param-values.ts';
import { applyPolicies, missingCallerAttribute, resolutionKey, type PolicyDialect, type PolicyTable, type TableRef } from './policy.ts';
import { governTouched, guardTablesFor, ownIndexOf, policiesKey, policyTablesOf, viewGoverned } from './tables.ts';
import { keepPlan, plannedCall } from './saved-plan.ts';

export interface PreparedCall {
  /** The statement to send: the agent's SQL, wrapped with `LIMIT maxRows + 1` for reads (as is for a read-only dialect). */
  statement: string;
  write: boolean;
  /** What the guard found the statement to be (a DDL statement is also a write). */
  kind: StatementKind;
  maxRows: number;
  /** What the caller can change to see rows the caps leave out (the truncation note, shared/result.ts). */
  narrowing: Narrowing;
  /**
   * The statement's shape when the guard computed one (PostgreSQL reads and writes), with the wrapper's numbers for
   * a read: texts of one shape resolve alike on the server (postgresql/guard/shape.ts).
   */
  shape?: string;
  /**
   * Every value the statement's markers take, bound as driver parameters: a saved-statement tool's arguments and a
   * tool policy's values (caller attributes, mask texts, key pads). PostgreSQL: `$1..$k` are the saved tool's, the
   * policy's follow; MySQL: in the text order of the `?` markers. Unset: the statement has none.
   */
  values?: unknown[];
  /** With a tool policy (PostgreSQL): the statement with typed NULLs for the policy's parameters, for the resolution check. */
  resolutionStatement?: string;
  /** How many `$n` the resolution statement keeps (a saved tool's arguments); unset: `values.length`. */
  resolutionParams?: number;
  /**
   * With `ctx.tables` (issue 38): every table the statement touches, the tool's own included when it does. The runtime
   * unions their approvals and writes them in the audit row; PostgreSQL's resolution check admits exactly these.
   */
  touched?: SqlTarget[];
}

/**
 * A SQL connector type as the shared steps see it: every fact that differs by type is here, set by the type's own
 * folder (its guard in `<type>/guard/`), so no shared code branches on a type's name.
 */
export interface Dialect {
  /** The connector type (the metrics' `dialect` label). */
  name: string;
  /** The span of the guard's check: a constant (`guard <type>`), so a call builds no name. */
  guardSpan: string;
  /** How the type's text is lexed: saved templates (shared/saved.ts) and the wrapper's check (shared/sqltext.ts). */
  syntax: SqlSyntax;
  guard(sql: string, opts: GuardOptions): GuardResult;
  /**
   * Wraps a read so the database stops after `limit` rows (one extra row tells truncation). `maxRowBytes`: a
   * dialect that can, also stops the statement before it sends a row larger than that (see postgresql/execute.ts).
   * Unset: a read-only dialect (mssql, oracle) with no wrapper (T-SQL refuses ORDER BY in a derived table, and both
   * stop reading at the cap and cancel instead); its calls are reads whatever the connector allows
   * (docs/decisions/0116-new-types-read-only.md), and the guard's one-statement verdict is what runs.
   */
  wrapRead?(body: string, limit: number, maxRowBytes: number): string;
  /**
   * Saved-statement tools: the statement with this driver's parameter markers and the values (shared/saved.ts).
   * `sample`: the text the guard checks at save time (one marker for an array), with no values.
   */
  bind?(saved: SavedBinding, args: Record<string, unknown>, sample?: boolean): BoundStatement;
  /** Resolves once the guard can run (MySQL loads its parser lazily); absent: always ready. */
  ready?(): Promise<unknown>;
  /** How the dialect builds a policy's derived table (shared/policy.ts); unset: tools with a policy are refused. */
  policy?: PolicyDialect;
  /**
   * The guard reads GuardOptions.tables (issue 38) and reports `touched`. Unset: a call with ctx.tables is checked as a
   * single-table call on the tool's own table, under that table's policy.
   */
  tables?: boolean;
}

/** What the guard is told of the call: the tool's table, the write permissions, and what introspection recorded. */
function guardOptions(dialect: Dialect, tool: SqlToolSpec, ctx: ExecutionContext, boundParams?: number): GuardOptions {
  if (!ctx.tables) return guardOptionsFor(dialect, tool.target, ctx, ctx.policy, boundParams);
  // Issue 38: the connector's tables, each with its own policy; the tool's own table is read-only under one.
  const tables = guardTablesFor(ctx.tables, tool.target, ctx.policy, !dialect.wrapRead);
  const own = tables.list[ownIndexOf(ctx.tables, tool.target)];
  const opts = guardOptionsFor(dialect, tool.target, { ...ctx, readOnly: ctx.readOnly || own?.policy === true });
  opts.tables = tables;
  // With tables, `policy` carries only a saved statement's own parameter count (the guard admits those, and no other
  // parameter once a touched table has a policy); each table's hidden columns are in its list entry.
  if (boundParams) opts.policy = { key: '', hidden: [], params: boundParams };
  return opts;
}

/**
 * The guard's options for a table and the permissions (also at save time, for a saved statement, and when a policy
 * is set on a saved tool: shared/sql-driver.ts). With a policy the statement may only read, and `boundParams` (a
 * saved tool's statement) is how many of its own bound markers it has: only those, never the policy's.
 */
export function guardOptionsFor(
  dialect: Dialect,
  t: SqlTarget,
  ctx: Pick<ExecutionContext, 'allowWrite' | 'allowDdl' | 'readOnly'>,
  policy?: Pick<CallPolicy, 'key' | 'policy'>,
  boundParams?: number,
): GuardOptions {
  const opts: GuardOptions = dialect.wrapRead
    ? {
        table: { schema: t.schema, name: t.table },
        allowWrite: ctx.allowWrite,
        allowDdl: ctx.allowDdl,
        // A tool with a policy only reads: a write's WHERE, RETURNING or row count would reach what the policy keeps out.
        readOnly: ctx.readOnly || policy !== undefined,
        // MySQL: how the server compares table names, recorded at introspection (no query per call).
        lowerCaseTableNames: t.lowerCaseTableNames,
        storedFunctions: t.storedFunctions,
      }
    : {
        table: { schema: t.schema, name: t.table },
        allowWrite: false,
        allowDdl: false,
        readOnly: true,
        caseSensitiveNames: t.caseSensitiveNames,
        defaultSchema: t.defaultSchema,
        columns: t.columns.map((c) => c.name),
      };
  if (policy) opts.policy = { key: policy.key, hidden: policy.policy.hidden_columns, ...(boundParams ? { params: boundParams } : {}) };
  return opts;
}

/** The reason class of a stage's refusals when the refusal does not carry its own (docs/decisions/0320). */
const STAGE_CLASSES: Record<GuardRefusalReason, RefusalClass> = {
  arguments: 'invalid_arguments',
  statement: 'not_allowed',
  read_only: 'write',
  not_wrappable: 'not_allowed',
};

/** A refusal before the database, counted by the stage that refused (toolgate_guard_refusals_total). */
function refused(dialect: Dialect, stage: GuardRefusalReason, text: string, reasonClass?: RefusalClass): ToolResult {
  countGuardRefusal(dialect.name, stage);
  return refusedResult(text, reasonClass ?? STAGE_CLASSES[stage]);
}

/** Either the statement to run, or the tool result that refuses the call (never thrown: a refusal is a result). */
export function prepareCall(dialect: Dialect, tool: SqlToolSpec, args: Record<string, unknown>, ctx: ExecutionContext): PreparedCall | ToolResult {
  if (ctx.tables && !dialect.tables) {
    // A guard that knows one table: the tool's own, governed by its table's policy, and that table alone touched.
    const own = ctx.tables.list[ownIndexOf(ctx.tables, tool.target)];
    const single: ExecutionContext = { ...ctx, tables: undefined, policy: own?.policy ?? ctx.policy };
    const prepared = prepareCall(dialect, tool, args, single);
    if (isRefusal(prepared)) return prepared;
    const touched = viewGoverned(ctx.tables, tool.target, single.policy);
    if ('reason' in touched) return refused(dialect, 'statement', touched.reason, touched.class);
    return { ...prepared, touched };
  }
  if (tool.target.saved) return prepareSaved(dialect, tool, tool.target.saved, args, ctx);
  const call = parseCallArgs(args, ctx.limits);
  if (typeof call === 'string') return refused(dialect, 'arguments', call);
  const verdict = inSpan(dialect.guardSpan, () => dialect.guard(call.sql, guardOptions(dialect, tool, ctx)));
  if (!verdict.ok) return refused(dialect, 'statement', verdict.reason, verdict.class);
  const write = !verdict.readOnly;
  const { wrapRead } = dialect;
  // Defence in depth: the guard already applies these settings; a write must also be allowed here.
  if (write && (!wrapRead || ctx.readOnly || !(verdict.kind === 'ddl' ? ctx.allowDdl : ctx.allowWrite))) {
    return refused(dialect, 'read_only', 'This tool is read-only: only SELECT statements are accepted.');
  }
  const gov = govern(dialect, tool, ctx, verdict, write);
  if (isRefusal(gov)) return gov;
  const touched = gov.touched ? { touched: gov.touched } : {};
  const narrowing = sqlNarrowing(ctx);
  if (!wrapRead) return { statement: call.sql, write: false, kind: verdict.kind, maxRows: call.maxRows, narrowing, ...touched };
  if (gov.rewrite) return withPolicy(dialect, ctx, gov.rewrite, call.sql, verdict, call.maxRows, null, touched);
  // Only postgresql and mysql have a wrapper (the read-only dialects returned above).
  const text = checkWrappable(call.sql, dialect.syntax);
  if (!text.ok) return refused(dialect, 'not_wrappable', text.reason);
  const rowBytes = maxRowBytes(ctx.limits.maxResultBytes);
  const statement = write ? text.body : wrapRead(text.body, call.maxRows + 1, rowBytes);
  const shape = verdict.shape === undefined ? undefined : write ? `w\u0000${verdict.shape}` : `r${call.maxRows + 1}:${rowBytes}\u0000${verdict.shape}`;
  return { statement, write, kind: verdict.kind, maxRows: call.maxRows, narrowing, ...(shape === undefined ? {} : { shape }), ...touched };
}

/** How a call's policies are applied by rewriting: each reference's table, and what keys the resolution verdict. */
interface Rewrite {
  tableOf: (ref: TableRef) => PolicyTable;
  key: string;
}

/** What governs a call after the guard: the touched tables (with ctx.tables) and the rewrite to apply, if any. */
interface Governance {
  touched?: SqlTarget[];
  rewrite: Rewrite | null;
}

/**
 * The governance of a guarded call: without ctx.tables, the tool's own policy; with them (issue 38), every touched
 * table's: a disabled one refuses the call naming it, and each policy must be applicable as for a single table.
 */
function govern(dialect: Dialect, tool: SqlToolSpec, ctx: ExecutionContext, verdict: GuardResult & { ok: true }, write: boolean): Governance | ToolResult {
  if (!ctx.tables) {
    if (!ctx.policy) return { rewrite: null };
    const blocked = policyBlocked(dialect, tool.target, ctx.policy, verdict, write) ?? attributeMissing(dialect, tool.target, ctx.policy);
    if (blocked) return blocked;
    const table: PolicyTable = { qualified: qualifiedTable(dialect, tool.target), columns: columnNames(tool.target), cp: ctx.policy };
    return { rewrite: dialect.wrapRead ? { tableOf: () => table, key: resolutionKey(ctx.policy) } : null };
  }
  const gov = governTouched(ctx.tables, tool.target, ctx.policy, verdict);
  if ('reason' in gov) return refused(dialect, 'statement', gov.reason, gov.class);
  for (const [i, cp] of gov.policies) {
    const target = ctx.tables.list[i]!.target;
    const blocked = policyBlocked(dialect, target, cp, verdict, write) ?? attributeMissing(dialect, target, cp);
    if (blocked) return blocked;
  }
  if (gov.policies.size === 0 || !dialect.wrapRead) return { touched: gov.touched, rewrite: null };
  const tableOf = policyTablesOf(ctx.tables, tool.target, gov.policies, dialect.policy!.quote);
  return { touched: gov.touched, rewrite: { tableOf, key: policiesKey(gov.policies) } };
}

/**
 * Whether a tool's policy can be applied to this call: by rewriting every reference to the table (shared/policy.ts)
 * on a read of a dialect that can, or by the guard alone (hidden columns on mssql/oracle). The refusal, or null.
 */
function policyBlocked(dialect: Dialect, target: SqlTarget, cp: CallPolicy, verdict: GuardResult & { ok: true }, write: boolean): ToolResult | null {
  if (dialect.wrapRead ? !dialect.policy || !verdict.refs || write : !hiddenOnly(cp)) {
    return refused(dialect, 'statement', 'This tool has column or row policies, which this connector type cannot apply: the call is refused.', 'policy');
  }
  // A column the policy names that the table (as last introspected) lacks, renamed perhaps: its new name would be
  // exposed, so nothing runs until an admin updates the policy.
  if (!policyFits(cp, target)) {
    return refused(dialect, 'statement', "This tool's policy names a column the table no longer has; an admin must update the policy.", 'policy');
  }
  return null;
}

/**
 * A read under policies: every reference to a governed table replaced by its policy's derived table, the policies'
 * values bound after (PostgreSQL) or among (MySQL, by text position) a saved tool's own, and the resolution check's text.
 */
function withPolicy(
  dialect: Dialect,
  ctx: ExecutionContext,
  rewrite: Rewrite,
  sql: string,
  verdict: GuardResult & { ok: true },
  maxRows: number,
  bound: BoundStatement | null,
  touched: { touched?: SqlTarget[] },
): PreparedCall | ToolResult {
  const wrapRead = dialect.wrapRead!;
  const applied = applyPolicies(dialect.policy!, sql, verdict.refs!, rewrite.tableOf, bound);
  const text = checkWrappable(applied.statement, dialect.syntax);
  if (!text.ok) return refused(dialect, 'not_wrappable', text.reason);
  const rowBytes = maxRowBytes(ctx.limits.maxResultBytes);
  const statement = wrapRead(text.body, maxRows + 1, rowBytes);
  const shape = verdict.shape === undefined ? undefined : `r${maxRows + 1}:${rowBytes}\u0000${verdict.shape}\u0000${rewrite.key}`;
  const check = checkWrappable(applied.resolution, dialect.syntax);
  const resolutionStatement = check.ok ? wrapRead(check.body, maxRows + 1, rowBytes) : statement;
  return {
    statement,
    write: false,
    kind: verdict.kind,
    maxRows,
    narrowing: bound ? SAVED_NARROWING : sqlNarrowing(ctx),
    values: applied.values,
    resolutionStatement,
    resolutionParams: bound?.values.length ?? 0,
    ...(shape === undefined ? {} : { shape }),
    ...touched,
  };
}

/**
 * A table whose row filter binds a caller attribute the caller lacks: the call is refused naming it, before anything
 * runs (decision 0307), per touched table. The refusal, or null.
 */
function attributeMissing(dialect: Dialect, target: SqlTarget, cp: CallPolicy): ToolResult | null {
  const missing = missingCallerAttribute(cp.policy, cp.caller);
  if (missing === null) return null;
  return refused(
    dialect,
    'arguments',
    `The row filter of ${target.schema}.${target.table} needs the caller attribute "${missing}", which this credential does not have: ` +
      'no rows were read. An admin can set it in the attributes of the API key or OAuth client (or as a claim of the identity provider).',
  );
}

/** An agent's statement: it may narrow its SQL, or raise `limit` up to the gateway's row cap. */
const sqlNarrowing = (ctx: ExecutionContext): Narrowing => ({ kind: 'sql', maxLimit: Math.min(MAX_LIMIT, ctx.limits.maxRows) });
const SAVED_NARROWING: Narrowing = { kind: 'saved' };

const policyFits = (cp: CallPolicy, target: SqlTarget): boolean => {
  const names = new Set(columnNames(target));
  return cp.policy.hidden_columns.every((c) => names.has(c)) && cp.policy.masked_columns.every((m) => names.has(m.column));
};

/** The read-only dialects (mssql, oracle) apply hidden columns in their guard, and nothing else of a policy. */
const hiddenOnly = (cp: CallPolicy): boolean => cp.policy.masked_columns.length === 0 && cp.policy.row_filter === null;

const qualifiedTable = (dialect: Dialect, t: SqlTarget): string => {
  const d: PolicyDialect | undefined = dialect.policy;
  return d ? `${d.quote(t.schema)}.${d.quote(t.table)}` : '';
};
const columnNames = (t: SqlTarget): string[] => t.columns.map((c) => c.name);

/**
 * A saved-statement tool's call: its statement with the driver's markers (the values kept apart), through the same
 * guard, write check and wrapper as an agent's SQL, and the tool's policy as for free SQL, on its first call; later
 * calls reuse that plan and only check and bind their values (saved-plan.ts, decision 0340). Reads return at most
 * min(MAX_LIMIT, the gateway's row cap) rows.
 */
function prepareSaved(
  dialect: Dialect,
  tool: SqlToolSpec,
  saved: SavedStatement,
  args: Record<string, unknown>,
  ctx: ExecutionContext,
): PreparedCall | ToolResult {
  const { bind } = dialect;
  if (!bind) return refused(dialect, 'arguments', `Saved-statement tools are not served on ${dialect.name} connectors.`);
  // Typed values are the gateway's to check, alike on every type, before a driver binds them (decision 0308).
  const invalid = savedArgumentsProblem(saved.parameters, args);
  if (invalid) return refused(dialect, 'arguments', invalid);
  const bound = bind(saved, args);
  // The statement is fixed: what the guard and governance made of it on an earlier call stands (saved-plan.ts).
  const planned = plannedCall<PreparedCall>(tool, ctx, bound);
  if (planned) return planned;
  const prepared = planSaved(dialect, tool, bound, ctx);
  if (!isRefusal(prepared)) keepPlan(tool, ctx, bound, prepared);
  return prepared;
}

/** A saved statement's bound text through the guard, the write check, governance and the wrapper, as free SQL goes. */
function planSaved(dialect: Dialect, tool: SqlToolSpec, bound: BoundStatement, ctx: ExecutionContext): PreparedCall | ToolResult {
  const wrapRead = dialect.wrapRead;
  // Under a policy the guard admits the statement's own markers (ours, from its :name placeholders), and only those.
  const opts = guardOptions(dialect, tool, ctx, bound.guardText === undefined ? bound.values.length : undefined);
  const verdict = inSpan(dialect.guardSpan, () => dialect.guard(bound.guardText ?? bound.text, opts));
  if (!verdict.ok) return refused(dialect, 'statement', verdict.reason, verdict.class);
  const write = !verdict.readOnly;
  if (verdict.kind === 'ddl' || (write && (!wrapRead || ctx.readOnly || !ctx.allowWrite))) {
    return refused(dialect, 'read_only', 'This tool is read-only: its statement writes, and writes are not allowed.');
  }
  const gov = govern(dialect, tool, ctx, verdict, write);
  if (isRefusal(gov)) return gov;
  const touched = gov.touched ? { touched: gov.touched } : {};
  const maxRows = Math.max(1, Math.min(MAX_LIMIT, ctx.limits.maxRows));
  // A read-only dialect (mssql, oracle) runs the guarded statement as it is, its markers bound by the driver.
  const narrowing = SAVED_NARROWING;
  if (!wrapRead) return { statement: bound.text, write: false, kind: verdict.kind, maxRows, narrowing, values: bound.values, ...touched };
  if (gov.rewrite) return withPolicy(dialect, ctx, gov.rewrite, bound.text, verdict, maxRows, bound, touched);
  const text = checkWrappable(bound.text, dialect.syntax);
  if (!text.ok) return refused(dialect, 'not_wrappable', text.reason);
  const rowBytes = maxRowBytes(ctx.limits.maxResultBytes);
  const statement = write ? text.body : wrapRead(text.body, maxRows + 1, rowBytes);
  const shape = verdict.shape === undefined ? undefined : write ? `w\u0000${verdict.shape}` : `r${maxRows + 1}:${rowBytes}\u0000${verdict.shape}`;
  return { statement, write, kind: verdict.kind, maxRows, narrowing, values: bound.values, ...(shape === undefined ? {} : { shape }), ...touched };
}

/**
 * The largest row worth sending: one whose text form exceeds twice the byte cap cannot fit the JSON result (a
 * value's JSON is at least half its text form: bytea hex is 2x the bytes, base64 1.33x), so it is never read.
 */
const maxRowBytes = (maxResultBytes: number): number => 2 * maxResultBytes + 1024;

export function isRefusal<T extends object>(prepared: T | ToolResult): prepared is ToolResult {
  return 'content' in prepared;
}
