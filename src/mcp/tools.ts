/** tools/list and tools/call: the catalog filtered by the credential's scope, arguments checked, drivers invoked. */
import type { ToolResult } from '../connectors/types.ts';
import type { Principal } from '../auth/principal.ts';
import { RpcCode, RpcError } from '../errors.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import type { AppDeps } from '../http/context.ts';
import type { CatalogTool, OrgCatalog } from '../tools/catalog.ts';
import { executeCatalogTool, QuotaExceededError } from '../tools/execute.ts';
import { checkParams, RawJson } from './protocol.ts';
import type { McpOrg } from '../handlers/mcp.ts';

export const CHECK_APPROVAL_STATUS = 'check_approval_status';

const checkApprovalStatusTool = {
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

function descriptor(tool: CatalogTool) {
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

function visibleTools(catalog: OrgCatalog, principal: Principal) {
  const visible = catalog.tools.filter((t) => t.enabled && inScope(principal, t)).map(descriptor);
  return { tools: [...visible, checkApprovalStatusTool] };
}

export async function listTools(deps: AppDeps, org: McpOrg, principal: Principal) {
  return visibleTools(await deps.catalog.get(org.id, org.catalogVersion), principal);
}

/** Serialised tools/list results per catalog (a catalog object is one immutable version) and connector scope. */
const listings = new WeakMap<OrgCatalog, Map<string, RawJson>>();
/** Distinct scopes cached per catalog version at most; others are serialised per call. */
const MAX_LISTINGS = 64;

/** tools/list as JSON text, built once per catalog version and scope (the catalog version is read per request). */
export async function listToolsJson(deps: AppDeps, org: McpOrg, principal: Principal): Promise<RawJson> {
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

export async function callTool(deps: AppDeps, org: McpOrg, principal: Principal, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  if (name === CHECK_APPROVAL_STATUS) {
    checkParams('CheckApprovalStatusArguments', args, 'params.arguments');
    return deps.approvals.status(org.id, principal, String(args.approvalId));
  }
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const tool = catalog.byName.get(name);
  if (!tool || !tool.enabled) throw new RpcError(RpcCode.InvalidParams, `Unknown tool: ${name.slice(0, 100)}. Call tools/list for the available tools.`);
  if (!inScope(principal, tool)) throw new RpcError(RpcCode.InsufficientScope, `This credential may not call ${tool.name}.`);
  // Validation mutates a copy (defaults are filled in); the caller's object stays as sent.
  const input = structuredClone(args);
  if (!tool.validate(input)) throw invalidArguments(tool);
  // A flagged tool never runs here: the call is held (validated arguments, defaults filled in) for an approver.
  if (tool.requiresApproval) return deps.approvals.hold(org.id, principal, tool, input);
  try {
    return await executeCatalogTool(deps, org, tool, input);
  } catch (err) {
    if (err instanceof QuotaExceededError) throw new RpcError(RpcCode.QuotaExceeded, err.message);
    throw err;
  }
}
