/**
 * The skeleton every SQL driver (postgresql, mysql, mssql, oracle) is built from: one execute path, so each type's
 * calls get the same steps, spans and metrics (docs/decisions/0171-sql-driver-factory.md). A type supplies its
 * config schema, dialect (guard and row-limit wrapper), pools, catalog steps and the runner; the skeleton runs a call
 * as: pre-check (outbound policy, guard loading) -> prepareCall (arguments, guard in a `guard <type>` span, write
 * check, wrapper; refusals counted in toolgate_guard_refusals_total) -> the connector's pool, behind its admission
 * slots -> the type's runner. The registry adds the `driver <type>` span around it (registry.ts).
 */
import type {
  ConnectorDriver,
  DatabaseConfig,
  ExecutionContext,
  SavedCheck,
  SqlTarget,
  SqlToolSpec,
  ToolResult,
  SavedParam,
  SavedTemplate,
  ToolPolicy,
} from '../types.ts';
import { admissionOf, type PoolRegistry } from './pools.ts';
import { guardOptionsFor, isRefusal, prepareCall, type Dialect, type PreparedCall } from './prepare.ts';
import { errorResult } from './result.ts';
import { parseTemplate, TemplateError } from './saved.ts';
import { checkWrappable } from './sqltext.ts';
import { checkPolicyShape, policyKey } from './policy.ts';
import type { GuardOptions } from './sqlguard/types.ts';
import { createHash } from 'node:crypto';

export interface SqlDriverParts<P, O, X extends ExecutionContext> {
  dialect: Dialect;
  configSchema: Record<string, unknown>;
  /** A type that never writes through Toolgate (docs/decisions/0116-new-types-read-only.md). */
  readOnly?: boolean;
  pools: PoolRegistry<P, O>;
  validate: ConnectorDriver<DatabaseConfig, SqlTarget, X>['validate'];
  introspect: ConnectorDriver<DatabaseConfig, SqlTarget, X>['introspect'];
  /**
   * Before the guard: a text that ends the call as an error result (the outbound policy's answer for a driver that
   * connects by name itself; a guard whose parser could not load). Synchronous when it has nothing to wait for.
   */
  precheck?(ctx: X): string | null | Promise<string | null>;
  /** Resolves once the dialect's guard can run (a guard loaded on first use); the text when it cannot. */
  guardReady?(): string | null | Promise<string | null>;
  /** What the pool is opened with when this call opens it. */
  openWith?(ctx: X): O | undefined;
  /** Runs the prepared statement on the connector's pool. Never throws for tool-level failures. */
  run(pool: P, tool: SqlToolSpec, prepared: PreparedCall, ctx: X): Promise<ToolResult>;
  /** The text of a failure outside the runner (the pool busy, aborted while queued, failing to open; a guard that threw). */
  callErrorText(err: unknown, ctx: X): string;
}

/** The dialect's guard over `SELECT 1 FROM <table> WHERE (<filter>)`: a row filter must pass as free SQL would. */
function filterVerdict(dialect: Dialect, tool: SqlToolSpec, filter: string): string | null {
  const d = dialect.policy!;
  const t = tool.target;
  const verdict = dialect.guard(`SELECT 1 FROM ${d.quote(t.schema)}.${d.quote(t.table)} WHERE (${filter})`, {
    table: { schema: t.schema, name: t.table },
    allowWrite: false,
    allowDdl: false,
    readOnly: true,
    lowerCaseTableNames: t.lowerCaseTableNames,
    storedFunctions: t.storedFunctions,
  });
  return verdict.ok ? null : `the row filter is refused: ${verdict.reason}`;
}

export function defineSqlDriver<P, O, X extends ExecutionContext = ExecutionContext>(
  parts: SqlDriverParts<P, O, X>,
): ConnectorDriver<DatabaseConfig, SqlTarget, X> {
  const { dialect, pools, precheck, openWith, run, callErrorText } = parts;
  return {
    type: dialect.name,
    kind: 'database',
    ...(parts.readOnly ? { readOnly: true } : {}),
    configSchema: parts.configSchema,
    validate: parts.validate,
    introspect: parts.introspect,
    ...(dialect.bind
      ? { checkSaved: (statement, params, tables, allowWrite, policies) => checkSaved(dialect, statement, params, tables, allowWrite, policies) }
      : {}),

    async execute(tool, args, ctx) {
      if (precheck) {
        const pending = precheck(ctx);
        const stop = pending instanceof Promise ? await pending : pending;
        if (stop !== null) return errorResult(stop);
      }
      try {
        // The guard decides before any pool is used or slot taken: a refused call never reaches the server.
        const prepared = prepareCall(dialect, tool, args, ctx);
        if (isRefusal(prepared)) return prepared;
        const touched = touchedOf(prepared);
        if (ctx.touched && touched) ctx.touched(touched);
        return await pools.use(
          ctx.connectorId,
          ctx.config,
          ctx.credential,
          (pool) => run(pool, tool, prepared, ctx),
          openWith?.(ctx),
          admissionOf(ctx.limits, ctx.signal),
        );
      } catch (err) {
        return errorResult(callErrorText(err, ctx));
      }
    },

    async touchedTables(tool, args, ctx) {
      if (precheck) {
        const pending = precheck(ctx);
        const stop = pending instanceof Promise ? await pending : pending;
        if (stop !== null) return errorResult(stop);
      }
      await dialect.ready?.();
      try {
        const prepared = prepareCall(dialect, tool, args, ctx);
        if (isRefusal(prepared)) return prepared;
        return prepared.touched ?? [tool.target];
      } catch (err) {
        return errorResult(callErrorText(err, ctx));
      }
    },

    async checkPolicy(tool, policy) {
      const stop = await parts.guardReady?.();
      if (stop) return stop;
      const problem = checkPolicyShape(
        tool.target.columns.map((c) => c.name),
        policy,
        dialect.policy ? (filter) => filterVerdict(dialect, tool, filter) : null,
      );
      return problem ?? (tool.target.saved ? savedUnderPolicy(dialect, tool.target, policy) : null);
    },

    close: (connectorId) => pools.close(connectorId),
    closeAll: () => pools.closeAll(),
  };
}

/** The tables the guard found the statement touches; null when it did not say. */
const touchedOf = (prepared: PreparedCall): readonly SqlTarget[] | null => prepared.touched ?? null;

/**
 * The statement as the guard sees it at save time: the dialect's own bind of it with no values and one marker per
 * array (PostgreSQL `$n` with their casts, MySQL `?`), or its `guardText` (mssql, oracle: the literal 0 at each
 * marker). `own`: how many of the text's markers are the statement's own, for a dialect whose guard sees markers
 * (PostgreSQL numbers a parameter once however often it recurs, and parseTemplate requires each declared one to be used).
 */
function guardText(dialect: Dialect, statement: string, params: SavedParam[]): { template: SavedTemplate; text: string; own?: number } {
  const template = parseTemplate(statement, params, dialect.syntax);
  const bound = dialect.bind!({ ...template, parameters: params }, {}, true);
  return bound.guardText === undefined ? { template, text: bound.text, own: params.length } : { template, text: bound.guardText };
}

/**
 * Whether a saved tool's statement runs under `policy` (set on the tool, or kept when the statement is replaced): the
 * guard as a call would run it, reading only, its own markers admitted, a hidden column named nowhere, and every
 * reference to the table found for the rewrite. The problem, or null.
 */
function savedUnderPolicy(dialect: Dialect, t: SqlTarget, policy: ToolPolicy): string | null {
  const saved = t.saved!;
  const { text, own } = guardText(dialect, saved.statement, saved.parameters);
  const verdict = dialect.guard(
    text,
    guardOptionsFor(dialect, t, { allowWrite: false, allowDdl: false, readOnly: true }, { key: policyKey(policy), policy }, own),
  );
  if (!verdict.ok) return `the saved tool's statement cannot run under it (${verdict.reason})`;
  if (dialect.wrapRead && !verdict.refs) return "the saved tool's statement cannot run under it";
  return null;
}

/**
 * Save-time check of a saved statement (ConnectorDriver.checkSaved): the guard of each of the connector's tables
 * in turn, with the connector's write permission; the first table whose guard accepts it is the tool's. DDL is never
 * a saved tool. A dialect whose guard knows several tables (issue 38) checks it against all of them, each with its
 * policy's hidden columns (`policies`: saving never widens a table's policy, decisions 0292 and 0300), and the tool's
 * table is one it touches. When none accepts it, the refusal is the guard's for the table the statement names (else
 * the first).
 */
async function checkSaved(
  dialect: Dialect,
  statement: string,
  params: SavedParam[],
  tables: SqlTarget[],
  allowWrite: boolean,
  policies: readonly (ToolPolicy | null)[] = [],
): Promise<SavedCheck<SqlTarget>> {
  let text: string;
  let template: SavedTemplate;
  let own: number | undefined;
  try {
    ({ text, template, own } = guardText(dialect, statement, params));
  } catch (err) {
    if (err instanceof TemplateError) return { ok: false, reason: err.message };
    throw err;
  }
  await dialect.ready?.();
  // A dialect with a row-limit wrapper runs the statement inside it: its text must be self-contained.
  if (dialect.wrapRead) {
    const wrappable = checkWrappable(text, dialect.syntax);
    if (!wrappable.ok) return { ok: false, reason: wrappable.reason };
  }
  let first: string | null = null;
  let named: string | null = null;
  const multi = multiTableList(dialect, tables, policies);
  for (const t of multi ? namedFirst(statement, tables) : tables) {
    const opts = guardOptionsFor(dialect, t, { allowWrite, allowDdl: false, readOnly: false });
    if (multi) opts.tables = multi;
    // Under a table's policy the guard admits the statement's own markers, and only those.
    if (multi && own) opts.policy = { key: '', hidden: [], params: own };
    const verdict = dialect.guard(text, opts);
    // Across tables (issue 38), the tool's table is one a read touches; a write's is the one it writes (the guard
    // admits a write on the tool's own table only).
    const touched = verdict.ok && multi ? (verdict.touched ?? []).map((i) => tables[i]!) : null;
    const mine = !multi || (verdict.ok && (!verdict.readOnly || touched?.some((x) => x.schema === t.schema && x.table === t.table)));
    if (verdict.ok && verdict.kind !== 'ddl' && mine) return { ok: true, target: t, write: !verdict.readOnly, template, ...(touched ? { touched } : {}) };
    const reason = verdict.ok ? 'DDL statements cannot be saved tools.' : verdict.reason;
    if (new RegExp(`\\b${t.table.replace(/[^A-Za-z0-9_]/g, '.')}\\b`, 'i').test(statement)) named ??= reason;
    first ??= reason;
  }
  return { ok: false, reason: named ?? first ?? 'The connector has no table to run a statement on.' };
}

/**
 * Issue 38: a dialect whose guard reads the connector's tables checks a saved statement against all of them (a JOIN
 * may be saved), each with its policy's hidden columns; the call is governed by every table it touches (prepare.ts).
 */
function multiTableList(dialect: Dialect, tables: SqlTarget[], policies: readonly (ToolPolicy | null)[]): GuardOptions['tables'] {
  if (!dialect.tables) return undefined;
  const list = tables.map((t, i) => {
    const p = policies[i];
    return {
      schema: t.schema,
      name: t.table,
      ...(p ? { policy: true, hidden: p.hidden_columns } : {}),
      ...(dialect.wrapRead ? {} : { columns: t.columns.map((c) => c.name) }),
    };
  });
  const names = JSON.stringify([list.map((t) => [t.schema, t.name]), policies.map((p) => (p ? policyKey(p) : null))]);
  return { key: `save\u0000${createHash('sha256').update(names).digest('hex')}`, list };
}

/** The tables the statement names first (the likely tool's table), then the rest. */
function namedFirst(statement: string, tables: SqlTarget[]): SqlTarget[] {
  const lower = statement.toLowerCase();
  const named = tables.filter((t) => lower.includes(t.table.toLowerCase()));
  return [...named, ...tables.filter((t) => !named.includes(t))];
}
