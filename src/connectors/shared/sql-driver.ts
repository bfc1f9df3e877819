/**
 * The skeleton every SQL driver (postgresql, mysql, mssql, oracle) is built from: one execute path, so each type's
 * calls get the same steps, spans and metrics (docs/decisions/0171-sql-driver-factory.md). A type supplies its
 * config schema, dialect (guard and row-limit wrapper), pools, catalog steps and the runner; the skeleton runs a call
 * as: pre-check (outbound policy, guard loading) -> prepareCall (arguments, guard in a `guard <type>` span, write
 * check, wrapper; refusals counted in toolgate_guard_refusals_total) -> the connector's pool, behind its admission
 * slots -> the type's runner. The registry adds the `driver <type>` span around it (registry.ts).
 */
import type { ConnectorDriver, DatabaseConfig, ExecutionContext, SqlTarget, SqlToolSpec, ToolResult } from '../types.ts';
import { admissionOf, type PoolRegistry } from './pools.ts';
import { isRefusal, prepareCall, type Dialect, type PreparedCall } from './prepare.ts';
import { errorResult } from './result.ts';
import { checkPolicyShape } from './policy.ts';

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

    async checkPolicy(tool, policy) {
      const stop = await parts.guardReady?.();
      if (stop) return stop;
      return checkPolicyShape(
        tool.target.columns.map((c) => c.name),
        policy,
        dialect.policy ? (filter) => filterVerdict(dialect, tool, filter) : null,
      );
    },

    close: (connectorId) => pools.close(connectorId),
    closeAll: () => pools.closeAll(),
  };
}
