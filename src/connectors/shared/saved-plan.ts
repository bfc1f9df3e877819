/**
 * A saved-statement tool's call plan (issue 42, docs/decisions/0340-saved-statement-fast-path.md): what the guard,
 * governance and the row-limit wrapper make of its fixed statement, computed on its first call and reused by every
 * later call of the same tool spec under the same connector settings, limits and catalog version. A call then only
 * checks and binds its values: no guard, no verdict-by-form lookup, no wrapper built.
 */
import type { ExecutionContext, SqlToolSpec } from '../types.ts';
import type { BoundStatement } from './saved.ts';

/** A prepared call (prepare.ts PreparedCall; generic here so this file does not import the module it serves). */
type Call = { values?: unknown[] };

interface Plan {
  /** The settings the plan was made under (planKey). */
  key: string;
  /** The bound text the plan was made from: a call whose own bound text differs (a MySQL array's length) re-plans. */
  text: string;
  /** The prepared call without its values. */
  prepared: Call;
}

/** By tool spec: the catalog makes a new spec when the tool changes (a new version, new settings). */
const plans = new WeakMap<SqlToolSpec, Plan>();

/**
 * What a plan depends on besides the statement: the connector's permissions, the tool's read-only flag, the limits
 * the wrapper bakes in, and the tables' governance (its key names the catalog version). Null when the call cannot be
 * planned: a policy on the tool or on any of its tables binds per-caller values and rewrites per policy.
 */
function planKey(ctx: ExecutionContext): string | null {
  if (ctx.policy) return null;
  if (ctx.tables) for (const t of ctx.tables.list) if (t.policy) return null;
  const { limits } = ctx;
  return `${ctx.allowWrite ? 'w' : ''}${ctx.allowDdl ? 'd' : ''}${ctx.readOnly ? 'r' : ''}|${limits.maxRows}|${limits.maxResultBytes}|${ctx.tables?.key ?? ''}`;
}

/** The call from a plan made for this tool and these settings, with `bound`'s values; null when there is none. */
export function plannedCall<C extends Call>(tool: SqlToolSpec, ctx: ExecutionContext, bound: BoundStatement): C | null {
  const plan = plans.get(tool);
  if (!plan || plan.text !== bound.text || plan.key !== planKey(ctx)) return null;
  return { ...plan.prepared, values: bound.values } as C;
}

/** Keeps what the full preparation of a call made of `bound`, for the tool's next calls (when it can be planned). */
export function keepPlan(tool: SqlToolSpec, ctx: ExecutionContext, bound: BoundStatement, prepared: Call): void {
  const key = planKey(ctx);
  if (key === null) return;
  const { values: _values, ...rest } = prepared;
  plans.set(tool, { key, text: bound.text, prepared: rest });
}
