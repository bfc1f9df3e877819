/**
 * The tool runtime behind tools/list and tools/call, independent of HTTP and of JSON-RPC: the org's catalog filtered
 * by the credential's scope, and a call's way through lookup, scope, argument validation, the approval gate, the
 * monthly quota and execution. A call ends in a `CallOutcome`, a discriminated union of domain outcomes (an answer
 * with its tool result, or a refusal saying why); it never throws for a refusal. mcp/server.ts alone turns outcomes
 * into JSON-RPC results, error codes and messages (docs/decisions/0143-runtime-outcomes.md). A tool that fails is an
 * answer whose result has isError.
 *
 * Where later features plug in (the transport and the protocol stay as they are):
 *  - built-in tools: BUILTIN_TOOLS (check_approval_status answers from the approvals service);
 *  - human approvals: `gate` in callTool, after validation and before the quota, decides run / hold; a held call
 *    returns its pending_approval result from there and runs later, once approved, through `executeTool` (quota,
 *    then `execute`) with the held input: one execution path for immediate and approved calls;
 *  - tool sources: `execute` picks what runs a tool by its connector's type (a database driver today; an upstream
 *    MCP server is another kind of connector with its own executor);
 *  - audit rows and webhooks: `callTool` wraps every tools/call. A call that ran (or was answered by the gate or a
 *    built-in tool) resolves only once its `tool.called` audit row is committed, by group commit
 *    (audit/recorder.ts). That row is also the outbox record of the `tool.called` webhook event (webhooks/relay.ts
 *    builds the event from it after sealing), so a call pays nothing for webhooks. A refused call is recorded as a
 *    refusal without waiting (`recordRefusal`, called by the server with the code and message it answered). An
 *    approved held call is reported by approval.decided, not tool.called.
 */
import { getDriver } from '../connectors/registry.ts';
import type { ExecutionContext, ExecutionLimits, SqlTarget, ToolResult } from '../connectors/types.ts';
import { ranNothing, refusalClassOf, refusedResult } from '../connectors/shared/result.ts';
import { refusedCallDetails, type AuditStatements } from './refused-call.ts';
import type { Principal } from '../principal.ts';
import type { SchemaError } from '../util/schema-errors.ts';
import type { Config } from '../config.ts';
import type { UsageMeter } from '../limits/usage.ts';
import type { Tool, ToolsListResult } from '../../generated/jsonrpc-types.ts';
import type { CatalogCache, CatalogTool, OrgCatalog } from './catalog.ts';
import { monthlyQuotaFor } from '../limits/plans.ts';
import { RawJson, validators } from '../util/jsonrpc-schema.ts';
import type { OutboundPolicy } from '../net/outbound.ts';
import { actorOf } from '../principal.ts';
import { canonicalJson } from '../audit/chain.ts';
import type { AuditRecorder } from '../audit/recorder.ts';
import { sha256Hex } from '../util/crypto.ts';
import { trialExpired } from '../billing/trial.ts';
import { observeToolCall, observeToolRefusal } from '../observability/metrics.ts';
import { schemaToolResult } from './schema.ts';
import { approvalOf, callTables, touchedIndexes, touchedNames, type HeldApproval } from './tables.ts';

/** The org a call is made in: its catalog version (read per request) and its plan (the quota). */
export interface RuntimeOrg {
  id: string;
  catalogVersion: number;
  plan: string;
  subscriptionStatus: string;
  trialExpiresAt: Date | null;
  /** What a refused statement's audit row keeps (decision 0321); the default, `fingerprint`, when not given. */
  auditStatements?: AuditStatements;
}

/** What running a tool uses: the quota meter, the execution limits, and the outbound policy (upstream MCP servers). */
export interface ExecutionDeps {
  usage: Pick<UsageMeter, 'reserve' | 'refund'>;
  outbound: OutboundPolicy;
  config: Pick<
    Config,
    | 'statementTimeoutMs'
    | 'lockTimeoutMs'
    | 'maxResultRows'
    | 'maxResultBytes'
    | 'connectorMaxConcurrentCalls'
    | 'connectorQueueTimeoutMs'
    | 'pgResolutionCacheTtlSeconds'
    | 'toolsListPageSize'
  >;
  /** Told the outcome of every call that reached its connector's source (connectors/health.ts); unset: nobody. */
  health?: { observe(orgId: string, connectorId: string, ok: boolean): void };
}

/**
 * The approvals service as the runtime sees it (src/approvals/service.ts implements it): holding a flagged call and
 * answering check_approval_status. Declared here so the runtime does not depend on the approvals module.
 */
export interface ApprovalDesk {
  /** `approval`: who approves and for how long, from every tool row the call needs approved (the tables it touches). */
  hold(orgId: string, principal: Principal, tool: CatalogTool, input: Record<string, unknown>, approval?: HeldApproval): Promise<ToolResult>;
  status(orgId: string, principal: Principal, approvalId: string): Promise<ToolResult>;
}

/** What the tool runtime uses: the catalog, the approvals desk, the quota meter, and the execution limits. */
export interface ToolRuntimeDeps extends ExecutionDeps {
  catalog: Pick<CatalogCache, 'get'>;
  approvals: ApprovalDesk;
  /** The audit log's group-commit writer: tool-call rows (awaited) and refusals. */
  audit: Pick<AuditRecorder, 'toolCall' | 'denial' | 'accepting'>;
}

/** A call that was answered with a tool result (isError when the tool failed or refused the call itself). */
type CallAnswer =
  /** It reached its connector and counts against the monthly quota. `tables`: each table its statement touches (`schema.table`). */
  | { kind: 'executed'; tool: CatalogTool; result: ToolResult; tables?: string[] }
  /**
   * Stopped before it reached its connector, so not counted: the SQL guard or the driver's own checks refused it, its
   * connector type is not served here, or the caller left before it ran. The result says why (isError).
   */
  | { kind: 'not_run'; tool: CatalogTool; result: ToolResult; tables?: string[] }
  /** Flagged for human approval: held, and answered with what the approvals desk returned (pending_approval). */
  | { kind: 'held'; tool: CatalogTool; result: ToolResult; tables?: string[] }
  /** Answered by a built-in tool (check_approval_status); never counted. */
  | { kind: 'answered'; result: ToolResult };

/** Why a call was refused: nothing ran and nothing was counted. `tool`: the catalog tool, once the call named one. */
export type CallRefusal =
  | { kind: 'not_found'; name: string }
  /** The tool exists but is disabled: to the caller it does not exist (mcp/server.ts words it as not found). */
  | { kind: 'disabled'; name: string }
  /** The arguments do not match the tool's input schema (`error`: the first mismatch); no `tool`: a built-in tool. */
  | { kind: 'invalid_arguments'; name: string; tool?: CatalogTool; error: SchemaError | undefined }
  /** The credential's connector scope does not include the tool's connector. */
  | { kind: 'scope'; tool: CatalogTool }
  | { kind: 'trial_ended'; tool: CatalogTool; endedAt: Date }
  | { kind: 'quota_exceeded'; tool: CatalogTool; plan: string; quota: number }
  /** The audit log cannot keep up: the call was not run, since its row could not be promised. */
  | { kind: 'audit_busy'; tool: CatalogTool };

/** The call was answered, but its tool.called row could not be written, so the answer is withheld (not a refusal). */
export type CallUnrecorded = { kind: 'unrecorded' };

/** How a tools/call ended; mcp/server.ts maps each kind to its JSON-RPC result or error. */
export type CallOutcome = CallAnswer | CallRefusal | CallUnrecorded;

const UNRECORDED: CallUnrecorded = { kind: 'unrecorded' };

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
    // A flagged tool answers pending_approval, not its rows: declaring the rows' outputSchema would make MCP clients
    // (the official SDK validates structuredContent against it) reject the held result.
    ...(tool.outputSchema && !tool.requiresApproval ? { outputSchema: tool.outputSchema } : {}),
    annotations: tool.annotations,
  };
}

function visibleTools(catalog: OrgCatalog, principal: Principal): Tool[] {
  const visible = catalog.tools.filter((t) => t.enabled && inScope(principal, t)).map(descriptor);
  return [...visible, ...[...BUILTIN_TOOLS.values()].map((b) => b.descriptor)];
}

/** Serialised tools/list pages per catalog (a catalog object is one immutable version), connector scope and offset. */
const listings = new WeakMap<OrgCatalog, Map<string, RawJson>>();
/** Distinct (scope, page) entries cached per catalog version at most; others are serialised per call. */
const MAX_LISTINGS = 256;

/** Why a tools/list cursor was refused: `stale` (an earlier catalog version of this org and scope) or `invalid`. */
export type ListRefusal = { kind: 'invalid_cursor'; reason: 'stale' | 'invalid' };

/**
 * The opaque tools/list cursor (decision 0305): the catalog version and the offset of the next page, with a digest
 * binding both to the org and the credential's connector scope. Not a secret: it only says where a page starts; the
 * digest makes a cursor of another org or scope, or an edited one, fail instead of paging someone else's list.
 */
function cursorDigest(orgId: string, scope: string, version: number, offset: number): string {
  return sha256Hex(`tools/list\n${orgId}\n${scope}\n${version}\n${offset}`).slice(0, 16);
}

function encodeCursor(orgId: string, scope: string, version: number, offset: number): string {
  return Buffer.from(`1.${version}.${offset}.${cursorDigest(orgId, scope, version, offset)}`).toString('base64url');
}

/** The offset a cursor points at, or why it cannot be used with this org, scope and catalog version. */
function decodeCursor(cursor: string, orgId: string, scope: string, version: number): number | ListRefusal {
  const match = /^1\.(\d{1,12})\.(\d{1,9})\.([0-9a-f]{16})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!match) return { kind: 'invalid_cursor', reason: 'invalid' };
  const [cursorVersion, offset] = [Number(match[1]), Number(match[2])];
  if (cursorDigest(orgId, scope, cursorVersion, offset) !== match[3]) return { kind: 'invalid_cursor', reason: 'invalid' };
  return cursorVersion === version ? offset : { kind: 'invalid_cursor', reason: 'stale' };
}

/**
 * One page of tools/list as JSON text, built once per catalog version, scope and page (the catalog version is read per
 * request). Pages follow the catalog's stable order (by name, the built-in tools last), `pageSize` tools each;
 * `nextCursor` is present while more follow. A cursor of an earlier version, or not issued for this org and scope,
 * is refused (mcp/server.ts answers -32602).
 */
export async function listToolsJson(deps: ToolRuntimeDeps, org: RuntimeOrg, principal: Principal, cursor?: string): Promise<RawJson | ListRefusal> {
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const scope = principal.connectorIds === null ? '*' : principal.connectorIds.join(',');
  const offset = cursor === undefined ? 0 : decodeCursor(cursor, org.id, scope, catalog.version);
  if (typeof offset !== 'number') return offset;
  let byScope = listings.get(catalog);
  if (!byScope) listings.set(catalog, (byScope = new Map()));
  const key = `${offset}|${scope}`;
  let listing = byScope.get(key);
  if (!listing) {
    const all = visibleTools(catalog, principal);
    const end = offset + deps.config.toolsListPageSize;
    const page: ToolsListResult = { tools: all.slice(offset, end) };
    if (end < all.length) page.nextCursor = encodeCursor(org.id, scope, catalog.version, end);
    listing = new RawJson(JSON.stringify(page));
    if (byScope.size < MAX_LISTINGS) byScope.set(key, listing);
  }
  return listing;
}

/** A tool the gateway answers itself, on every org's endpoint and outside any connector scope. */
interface BuiltinTool {
  descriptor: Tool;
  /** Its arguments' schema (a $defs entry of jsonrpc-schema.json): `errors` holds the first mismatch. */
  validate: ((args: unknown) => boolean) & { errors?: SchemaError[] | null };
  call(deps: ToolRuntimeDeps, org: RuntimeOrg, principal: Principal, args: Record<string, unknown>): Promise<ToolResult> | ToolResult;
}

const BUILTIN_TOOLS = new Map<string, BuiltinTool>([
  [
    CHECK_APPROVAL_STATUS,
    {
      descriptor: checkApprovalStatusTool,
      validate: validators.CheckApprovalStatusArguments!,
      // Polling is not a tool call: it never counts against the monthly quota.
      call(deps, org, principal, args) {
        return deps.approvals.status(org.id, principal, args.approvalId as string);
      },
    },
  ],
]);

/**
 * Whether a validated call may run now: a call that needs human approval never runs unapproved; it is held (the
 * validated input, defaults filled in) and the pending_approval result answered instead. It needs approval when its
 * tool requires it or when a table its statement touches does (decision 0292): then the approvers are every such
 * row's, the TTL the shortest. Which tables a statement touches is asked of the driver (its guard, verdict cached)
 * only on a connector where some table requires approval (the single-table hot path asks nothing); a statement the
 * guard refuses there is answered with the refusal and runs nothing (fail closed), unless its own tool holds every
 * call as before. Null: run it; `touched` keeps what the driver found for the audit row.
 */
async function gate(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  tool: CatalogTool,
  input: Record<string, unknown>,
  found: { touched?: readonly number[] },
): Promise<{ held: ToolResult } | { refused: ToolResult } | null> {
  const tables = tool.tables;
  const holdOwn = async () => (tool.requiresApproval ? { held: await deps.approvals.hold(org.id, principal, tool, input) } : null);
  if (!tables?.anyApproval) return holdOwn();
  const driver = getDriver(tool.connector.type);
  const reported = driver?.touchedTables
    ? await driver.touchedTables(tool.spec, input, executionContext(deps, org.id, tool, principal.attributes))
    : refusedResult(`The connector type ${tool.connector.type} is not available on this gateway.`);
  if (!Array.isArray(reported)) return tool.requiresApproval ? holdOwn() : { refused: reported as ToolResult };
  const touched = touchedIndexes(tables, reported);
  found.touched = touched;
  const approval = approvalOf(tables, touched, { toolId: tool.id, ...tool });
  return approval ? { held: await deps.approvals.hold(org.id, principal, tool, input, approval) } : null;
}

/** What a used-up monthly quota is called, for tools/call (mcp/server.ts) and an approved call (src/approvals) alike. */
export function quotaExceededMessage(plan: string, quota: number): string {
  return `Monthly tool-call quota exceeded: the ${plan} plan includes ${quota} tool calls per month. Upgrade the plan to continue.`;
}

/** The monthly quota of the org's plan is used up: nothing ran. Each caller maps it to its wire form. */
export class QuotaExceededError extends Error {
  constructor(
    readonly plan: string,
    readonly quota: number,
  ) {
    super(quotaExceededMessage(plan, quota));
    this.name = 'QuotaExceededError';
  }
}

/**
 * The one execution step of a call that passed every check, immediate (tools/call) or approved (src/approvals):
 * the monthly quota, counted before the tool runs so a used-up quota runs nothing, then `execute`. Throws
 * QuotaExceededError before running anything. A call the driver refused before it reached the connector (the SQL
 * guard: `ranNothing`) gives its unit back, so what counts is a call that reached its connector
 * (docs/quota-and-audit-accounting.md); reserving first keeps "no overshoot" (a refund only returns a granted unit).
 */
export async function executeTool(
  deps: ExecutionDeps,
  org: Pick<RuntimeOrg, 'id' | 'plan'>,
  tool: CatalogTool,
  input: Record<string, unknown>,
  signal?: AbortSignal,
  /** The caller's attributes for the tool's row filter (an approved held call: the requester's, kept with it). */
  caller?: Principal['attributes'],
  /** Told which of the connector's tables the statement touches, once the guard passed it. */
  touched?: (tables: readonly SqlTarget[]) => void,
): Promise<ToolResult> {
  const quota = monthlyQuotaFor(org.plan);
  const unit = await deps.usage.reserve(org.id, quota);
  if (!unit) throw new QuotaExceededError(org.plan, quota!);
  const result = await execute(deps, org.id, tool, input, signal, caller, touched);
  if (ranNothing(result)) deps.usage.refund(unit);
  else deps.health?.observe(org.id, tool.connector.id, !result.isError);
  return result;
}

/** Whether a result of `executeTool` was counted against the quota: the call reached its connector. */
export const countedCall = (result: ToolResult): boolean => !ranNothing(result);

/**
 * Runs a tool that passed every check, on what serves its connector's type. `signal` is the caller's (tools/call:
 * the HTTP request's): when it aborts, the driver cancels the statement on the server (docs/cancellation.md). An
 * approved call runs without one: its outcome is kept for check_approval_status, whoever approved it.
 */
function execute(
  deps: ExecutionDeps,
  orgId: string,
  tool: CatalogTool,
  input: Record<string, unknown>,
  signal?: AbortSignal,
  caller?: Principal['attributes'],
  touched?: (tables: readonly SqlTarget[]) => void,
): Promise<ToolResult> | ToolResult {
  // The schema tool is answered by the gateway from the catalog (decision 0313): nothing reaches the connector.
  if (tool.kind === 'schema') return schemaToolResult(tool.connector, tool.described ?? [], input, deps.config.maxResultBytes);
  const driver = getDriver(tool.connector.type);
  if (!driver) return refusedResult(`The connector type ${tool.connector.type} is not available on this gateway.`);
  const ctx = executionContext(deps, orgId, tool, caller, signal);
  if (touched && ctx.tables) ctx.touched = touched;
  return driver.execute(tool.spec, input, ctx);
}

/**
 * What a driver gets for one call of `tool`: its connector, permissions and limits; its policy and, on a SQL
 * connector, every table with its own row's governance (decision 0292), each policy with the caller's attributes.
 */
function executionContext(
  deps: ExecutionDeps,
  orgId: string,
  tool: CatalogTool,
  caller: Principal['attributes'] | undefined,
  signal?: AbortSignal,
): ExecutionContext<unknown, ExecutionLimits & { resolutionCacheTtlMs: number }> {
  const { config } = deps;
  return {
    connectorId: tool.connector.id,
    config: tool.connector.config,
    credential: tool.connector.credential,
    allowWrite: tool.connector.allowWrite,
    allowDdl: tool.connector.allowDdl,
    readOnly: tool.readOnly,
    ...(tool.policy ? { policy: { ...tool.policy, caller: caller ?? {} } } : {}),
    ...(tool.tables ? { tables: callTables(tool.tables, caller) } : {}),
    outbound: deps.outbound,
    orgId,
    limits: {
      statementTimeoutMs: config.statementTimeoutMs,
      lockTimeoutMs: config.lockTimeoutMs,
      maxRows: config.maxResultRows,
      maxResultBytes: config.maxResultBytes,
      maxConcurrentCalls: config.connectorMaxConcurrentCalls,
      queueTimeoutMs: config.connectorQueueTimeoutMs,
      resolutionCacheTtlMs: config.pgResolutionCacheTtlSeconds * 1000,
    },
    signal,
  };
}

/** What a tool-call row keeps of the arguments: a digest (matches a known input), never the values or the SQL. */
function argumentsDigest(args: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(args));
}

function rowCountOf(result: ToolResult): number | null {
  const count = result.structuredContent?.rowCount;
  return typeof count === 'number' ? count : null;
}

/**
 * Every tools/call, recorded: see the module header. A refusal is returned as it is (the server words it and records
 * it with `recordRefusal`); an answer resolves once its tool.called row is written, or is withheld (`unrecorded`)
 * when the row cannot be. `signal` aborts when the caller goes away: a call not started yet runs nothing, a running
 * one is cancelled. Anything else that fails (the catalog read, a driver bug) is thrown: it is not a domain outcome.
 */
export async function callTool(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<CallOutcome> {
  const started = performance.now();
  const outcome = await runCall(deps, org, principal, name, args, signal);
  if (!('result' in outcome)) return outcome;
  const durationMs = Math.round((performance.now() - started) * 10) / 10;
  const { result } = outcome;
  const tool = outcome.kind === 'answered' ? undefined : outcome.tool;
  // A held call ran nothing yet: its row says so (`held`); its decision and execution have rows of their own.
  const held = outcome.kind === 'held' && result.structuredContent?.status === 'pending_approval';
  // Refused by the guard or a policy (issue 41): outcome `refused` with its reason class, not `error`.
  const refusedAs = refusalClassOf(result);
  const status = held ? 'held' : refusedAs ? 'refused' : result.isError ? 'error' : 'success';
  const data = {
    tool_name: tool?.name ?? name,
    connector_id: tool?.connector.id ?? null,
    connector_type: tool?.connector.type ?? null,
    outcome: status,
    duration_ms: durationMs,
    row_count: rowCountOf(result),
  };
  const actor = actorOf(principal);
  // The webhook relay builds the tool.called event from this row: details keep every field of its `data`.
  const recorded = await recordCall(deps, {
    orgId: org.id,
    action: 'tool.called',
    actor,
    targetType: 'tool',
    targetId: data.tool_name,
    outcome: status,
    details: {
      ...data,
      counted: outcome.kind === 'executed',
      arguments_sha256: argumentsDigest(args),
      ...(outcome.kind !== 'answered' && outcome.tables ? { tables: outcome.tables } : {}),
      ...(held ? { held_for_approval: true } : {}),
      ...(refusedAs ? refusedCallDetails(refusedAs, String(result.content[0]?.text ?? ''), args, org.auditStatements) : {}),
      // The caller went away before the answer: with outcome error, the gateway cancelled (or never ran) the call.
      ...(signal?.aborted ? { abandoned: true } : {}),
    },
  });
  if (!recorded) return UNRECORDED;
  observeToolCall(tool ? tool.connector.type : 'builtin', status, (performance.now() - started) / 1000);
  return outcome;
}

/** Waits for the call's row; false if it cannot be written (the result is then withheld: no result without its row). */
async function recordCall(deps: ToolRuntimeDeps, ...args: Parameters<ToolRuntimeDeps['audit']['toolCall']>): Promise<boolean> {
  try {
    await deps.audit.toolCall(...args);
    return true;
  } catch {
    return false;
  }
}

/** What a refusal record names: why (the refusal's kind), and the tool, or the name the caller asked for. */
export type RecordedRefusal = { kind: CallRefusal['kind']; tool: CatalogTool } | { kind: CallRefusal['kind']; name: string };

/** The refusals that a limit of the plan made (counted as the quota's): a used-up quota, an ended trial. */
const QUOTA_REFUSALS: ReadonlySet<CallRefusal['kind']> = new Set(['quota_exceeded', 'trial_ended']);

/**
 * Records a refused call (`tool.call_refused`, not waited for) and counts it, by its kind; the row keeps the code and
 * message its caller was answered (mcp/server.ts words every refusal). `started`: when the call began (performance.now()).
 */
export function recordRefusal(
  deps: Pick<ToolRuntimeDeps, 'audit'>,
  org: Pick<RuntimeOrg, 'id'>,
  principal: Principal,
  refusal: RecordedRefusal,
  answered: { code: number; message: string },
  started: number,
): void {
  const tool = 'tool' in refusal ? refusal.tool : undefined;
  observeToolRefusal(tool?.connector.type, QUOTA_REFUSALS.has(refusal.kind), (performance.now() - started) / 1000);
  deps.audit.denial({
    orgId: org.id,
    action: 'tool.call_refused',
    actor: actorOf(principal),
    targetType: 'tool',
    targetId: (tool?.name ?? (refusal as { name: string }).name).slice(0, 100),
    outcome: 'denied',
    details: { kind: refusal.kind, code: answered.code, reason: answered.message, ...(tool ? { connector_id: tool.connector.id } : {}) },
  });
}

async function runCall(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<CallAnswer | CallRefusal> {
  const builtin = BUILTIN_TOOLS.get(name);
  if (builtin) {
    if (!builtin.validate(args)) return { kind: 'invalid_arguments', name, error: builtin.validate.errors?.[0] };
    return { kind: 'answered', result: await builtin.call(deps, org, principal, args) };
  }
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const tool = catalog.byName.get(name);
  if (!tool) return { kind: 'not_found', name };
  if (!tool.enabled) return { kind: 'disabled', name };
  if (!inScope(principal, tool)) return { kind: 'scope', tool };
  // Validation mutates a copy (defaults are filled in); the caller's object stays as sent.
  const input = structuredClone(args);
  if (!tool.validate(input)) return { kind: 'invalid_arguments', name, tool, error: tool.validate.errors?.[0] };
  if (trialExpired(org, new Date())) return { kind: 'trial_ended', tool, endedAt: org.trialExpiresAt! };
  const found: { touched?: readonly number[] } = {};
  const instead = await gate(deps, org, principal, tool, input, found);
  if (instead && 'refused' in instead) return { kind: 'not_run', tool, result: instead.refused };
  if (instead) return { kind: 'held', tool, result: instead.held, ...tablesRead(tool, found.touched) };
  if (!deps.audit.accepting()) return { kind: 'audit_busy', tool };
  // The caller left before anything ran (a batch's later calls, a slow lookup): nothing runs and nothing is counted.
  if (signal?.aborted) return { kind: 'not_run', tool, result: refusedResult('The call was aborted.') };
  // Only a tool call that reaches its connector counts against the monthly quota (not check_approval_status polling,
  // not calls refused or held above, not calls the driver's guard refuses; a held call counts when its approval runs it).
  let result: ToolResult;
  let touched = found.touched;
  const tables = tool.tables;
  try {
    result = await executeTool(deps, org, tool, input, signal, principal.attributes, tables ? (t) => (touched = touchedIndexes(tables, t)) : undefined);
  } catch (err) {
    if (err instanceof QuotaExceededError) return { kind: 'quota_exceeded', tool, plan: err.plan, quota: err.quota };
    throw err;
  }
  return { kind: countedCall(result) ? 'executed' : 'not_run', tool, result, ...tablesRead(tool, touched) };
}

/** The audit row's `tables`: every table the statement touches, by name (decision 0292); none when unknown. */
function tablesRead(tool: CatalogTool, touched: readonly number[] | undefined): { tables?: string[] } {
  return tool.tables && touched ? { tables: touchedNames(tool.tables, touched) } : {};
}
