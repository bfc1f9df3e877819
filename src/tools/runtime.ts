/**
 * The tool runtime behind tools/list and tools/call, independent of HTTP and of the method table: the org's
 * catalog filtered by the credential's scope, and a call's way through lookup, scope, argument validation, the
 * approval gate, the monthly quota and execution. Its refusals are RpcErrors (protocol errors); a tool that fails
 * is a tool result with isError.
 *
 * Where later features plug in (the transport and the protocol stay as they are):
 *  - built-in tools: BUILTIN_TOOLS (check_approval_status answers from the approvals service once it exists);
 *  - human approvals: `gate` in callTool, after validation and before the quota, decides run / hold / refuse; a held
 *    call returns its pending_approval result from there and runs later through `execute` with the same input;
 *  - tool sources: `execute` picks what runs a tool by its connector's type (a database driver today; an upstream
 *    MCP server is another kind of connector with its own executor);
 *  - audit rows and webhooks: `audited` wraps every tools/call. A call that ran (or was answered by the gate or a
 *    built-in tool) resolves only once its `tool.called` audit row is committed, by group commit, together with its
 *    `tool.called` domain event (audit/recorder.ts: webhook subscribers write in that transaction); a refused call
 *    (RpcError) is recorded as a refusal without waiting.
 */
import { getDriver } from '../connectors/registry.ts';
import type { ToolResult } from '../connectors/types.ts';
import type { Principal } from '../auth/principal.ts';
import { RpcCode, RpcError } from '../errors.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import type { Config } from '../config.ts';
import type { UsageMeter } from '../limits/usage.ts';
import type { Tool, ToolsListResult } from '../../generated/jsonrpc-types.ts';
import type { CatalogCache, CatalogTool, OrgCatalog } from './catalog.ts';
import { monthlyQuotaFor } from '../limits/plans.ts';
import { checkParams, RawJson } from '../mcp/protocol.ts';
import { actorOf } from '../auth/principal.ts';
import { canonicalJson } from '../audit/chain.ts';
import type { AuditRecorder } from '../audit/recorder.ts';
import { DomainEvents } from '../events/index.ts';
import { createHash } from 'node:crypto';
import { trialExpired } from '../billing/trial.ts';

/** The org a call is made in: its catalog version (read per request) and its plan (the quota). */
export interface RuntimeOrg {
  id: string;
  catalogVersion: number;
  plan: string;
  subscriptionStatus: string;
  trialExpiresAt: Date | null;
}

/** What the tool runtime uses: the catalog, the quota meter, and the execution limits. */
export interface ToolRuntimeDeps {
  catalog: Pick<CatalogCache, 'get'>;
  usage: Pick<UsageMeter, 'consume'>;
  audit: Pick<AuditRecorder, 'toolCall' | 'denial' | 'accepting'>;
  config: Pick<
    Config,
    'statementTimeoutMs' | 'lockTimeoutMs' | 'maxResultRows' | 'maxResultBytes' | 'connectorMaxConcurrentCalls' | 'connectorQueueTimeoutMs'
  >;
}

export const CHECK_APPROVAL_STATUS = 'check_approval_status';

const checkApprovalStatusTool: Tool = {
  name: CHECK_APPROVAL_STATUS,
  description: 'Reports the outcome of a tool call that is waiting for human approval: pending, executed, rejected, expired, failed or not_found.',
  inputSchema: {
    type: 'object',
    properties: { approvalId: { type: 'string', description: 'The approvalId returned when the call was held.' } },
    required: ['approvalId'],
  },
  annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
};

function inScope(principal: Principal, tool: CatalogTool): boolean {
  return principal.connectorIds === null || principal.connectorIds.includes(tool.connector.id);
}

function descriptor(tool: CatalogTool): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    annotations: tool.annotations,
  };
}

function visibleTools(catalog: OrgCatalog, principal: Principal): ToolsListResult {
  const visible = catalog.tools.filter((t) => t.enabled && inScope(principal, t)).map(descriptor);
  return { tools: [...visible, ...[...BUILTIN_TOOLS.values()].map((b) => b.descriptor)] };
}

/** Serialised tools/list results per catalog (a catalog object is one immutable version) and connector scope. */
const listings = new WeakMap<OrgCatalog, Map<string, RawJson>>();
/** Distinct scopes cached per catalog version at most; others are serialised per call. */
const MAX_LISTINGS = 64;

/** tools/list as JSON text, built once per catalog version and scope (the catalog version is read per request). */
export async function listToolsJson(deps: ToolRuntimeDeps, org: RuntimeOrg, principal: Principal): Promise<RawJson> {
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const scope = principal.connectorIds === null ? '*' : principal.connectorIds.join(',');
  let byScope = listings.get(catalog);
  if (!byScope) listings.set(catalog, (byScope = new Map()));
  let listing = byScope.get(scope);
  if (!listing) {
    listing = new RawJson(JSON.stringify(visibleTools(catalog, principal)));
    if (byScope.size < MAX_LISTINGS) byScope.set(scope, listing);
  }
  return listing;
}

function invalidArguments(tool: CatalogTool): RpcError {
  return new RpcError(RpcCode.InvalidParams, `Invalid arguments for ${tool.name}: ${describeSchemaError('arguments', tool.validate.errors?.[0])}`);
}

/** A tool the gateway answers itself, on every org's endpoint and outside any connector scope. */
interface BuiltinTool {
  descriptor: Tool;
  call(org: RuntimeOrg, args: Record<string, unknown>): Promise<ToolResult> | ToolResult;
}

const BUILTIN_TOOLS = new Map<string, BuiltinTool>([
  [
    CHECK_APPROVAL_STATUS,
    {
      descriptor: checkApprovalStatusTool,
      call(_org, args) {
        checkParams('CheckApprovalStatusArguments', args, 'params.arguments');
        const { approvalId } = args;
        // No call is held for approval in this version of the gateway, so every id is unknown.
        return {
          content: [{ type: 'text', text: `No approval with id ${approvalId.slice(0, 100)} exists for this org.` }],
          structuredContent: { status: 'not_found', approvalId },
        };
      },
    },
  ],
]);

/**
 * Whether a validated call may run now. Fail closed: a tool flagged for human approval never runs unapproved; holding
 * calls for approval is not built yet (docs/decisions.md), so such a call is refused rather than executed. Returns
 * the result to answer instead of running the tool, or null to run it.
 */
function gate(tool: CatalogTool): ToolResult | null {
  if (!tool.requiresApproval) return null;
  return {
    isError: true,
    content: [{ type: 'text', text: `${tool.name} requires human approval, and this gateway cannot hold calls for approval yet: the call was not executed.` }],
  };
}

/** Runs a tool that passed every check, on what serves its connector's type. */
function execute(deps: ToolRuntimeDeps, tool: CatalogTool, input: Record<string, unknown>): Promise<ToolResult> | ToolResult {
  const driver = getDriver(tool.connector.type);
  if (!driver) return { isError: true, content: [{ type: 'text', text: `The connector type ${tool.connector.type} is not available on this gateway.` }] };
  const { config } = deps;
  return driver.execute(tool.spec, input, {
    connectorId: tool.connector.id,
    config: tool.connector.config,
    credential: tool.connector.credential,
    allowWrite: tool.connector.allowWrite,
    allowDdl: tool.connector.allowDdl,
    readOnly: tool.readOnly,
    limits: {
      statementTimeoutMs: config.statementTimeoutMs,
      lockTimeoutMs: config.lockTimeoutMs,
      maxRows: config.maxResultRows,
      maxResultBytes: config.maxResultBytes,
      maxConcurrentCalls: config.connectorMaxConcurrentCalls,
      queueTimeoutMs: config.connectorQueueTimeoutMs,
    },
  });
}

/** What a tool-call row keeps of the arguments: a digest (matches a known input), never the values or the SQL. */
function argumentsDigest(args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

function rowCountOf(result: ToolResult): number | null {
  const count = result.structuredContent?.rowCount;
  return typeof count === 'number' ? count : null;
}

/** What a call got to before it returned or was refused: the tool it named, and whether the quota counted it. */
interface CallTrace {
  tool?: CatalogTool;
  counted?: boolean;
}

/** Every tools/call, recorded: see the module header. A failed audit write fails the call (no result without its row). */
export async function callTool(deps: ToolRuntimeDeps, org: RuntimeOrg, principal: Principal, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const started = performance.now();
  const seen: CallTrace = {};
  let result: ToolResult;
  try {
    result = await runCall(deps, org, principal, name, args, seen);
  } catch (err) {
    if (err instanceof RpcError) {
      deps.audit.denial({
        orgId: org.id,
        action: 'tool.call_refused',
        actor: actorOf(principal),
        targetType: 'tool',
        targetId: (seen.tool?.name ?? name).slice(0, 100),
        outcome: 'denied',
        details: { code: err.code, reason: err.message, ...(seen.tool ? { connector_id: seen.tool.connector.id } : {}) },
      });
    }
    throw err;
  }
  const durationMs = Math.round((performance.now() - started) * 10) / 10;
  const tool = seen.tool;
  const outcome = result.isError ? 'error' : 'success';
  const data = {
    tool_name: tool?.name ?? name,
    connector_id: tool?.connector.id ?? null,
    connector_type: tool?.connector.type ?? null,
    outcome,
    duration_ms: durationMs,
    row_count: rowCountOf(result),
  };
  const actor = actorOf(principal);
  await recordCall(
    deps,
    {
      orgId: org.id,
      action: 'tool.called',
      actor,
      targetType: 'tool',
      targetId: data.tool_name,
      outcome,
      details: { ...data, counted: Boolean(seen.counted), arguments_sha256: argumentsDigest(args), ...(result.structuredContent?.status === 'pending_approval' ? { held_for_approval: true } : {}) },
    },
    DomainEvents.create('tool.called', org.id, { ...data, actor_type: actor.type, actor_id: actor.id }),
  );
  return result;
}

/** Waits for the call's row; if it cannot be written the result is withheld (no result without its audit row). */
async function recordCall(deps: ToolRuntimeDeps, ...args: Parameters<ToolRuntimeDeps['audit']['toolCall']>): Promise<void> {
  try {
    await deps.audit.toolCall(...args);
  } catch {
    throw new RpcError(RpcCode.InternalError, 'The call ran, but its audit record could not be written, so its result is withheld.');
  }
}

async function runCall(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  name: string,
  args: Record<string, unknown>,
  seen: CallTrace,
): Promise<ToolResult> {
  const builtin = BUILTIN_TOOLS.get(name);
  if (builtin) return builtin.call(org, args);
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const tool = catalog.byName.get(name);
  if (!tool || !tool.enabled) throw new RpcError(RpcCode.InvalidParams, `Unknown tool: ${name.slice(0, 100)}. Call tools/list for the available tools.`);
  seen.tool = tool;
  if (!inScope(principal, tool)) throw new RpcError(RpcCode.InsufficientScope, `This credential may not call ${tool.name}.`);
  // Validation mutates a copy (defaults are filled in); the caller's object stays as sent.
  const input = structuredClone(args);
  if (!tool.validate(input)) throw invalidArguments(tool);
  if (trialExpired(org, new Date())) {
    throw new RpcError(
      RpcCode.QuotaExceeded,
      `The trial of this org ended at ${org.trialExpiresAt!.toISOString()}: tool calls are paused until the org subscribes to a plan.`,
    );
  }
  const instead = gate(tool);
  if (instead) return instead;
  if (!deps.audit.accepting()) throw new RpcError(RpcCode.InternalError, 'The audit log cannot keep up right now, so the call was not run; retry shortly.');
  // Only tools/call of a real tool counts against the monthly quota (not check_approval_status polling,
  // not calls refused above); the count is taken before the tool runs, so a used-up quota runs nothing.
  const quota = monthlyQuotaFor(org.plan);
  if (!(await deps.usage.consume(org.id, quota))) {
    throw new RpcError(
      RpcCode.QuotaExceeded,
      `Monthly tool-call quota exceeded: the ${org.plan} plan includes ${quota} tool calls per month. Upgrade the plan to continue.`,
    );
  }
  seen.counted = true;
  return execute(deps, tool, input);
}
