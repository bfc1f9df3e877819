/**
 * The MCP server's methods as two method tables over the tool runtime: the 2025-era one (initialize, ping, tools/list,
 * tools/call) and the 2026-07-28 one (server/discover, tools/list with cache hints, tools/call; that revision removed
 * initialize and ping). The transport hands each request to the table of its revision (mcp/modern.ts decides) with the
 * session it authenticated; a new method is one more entry.
 *
 * This is the one place where a tool call's domain outcome (tools/runtime.ts, `CallOutcome`) becomes JSON-RPC: an
 * answer becomes the result, a refusal the error code and message below (and its audit row records both).
 */
import { MCP_SCOPE } from '../auth/credentials.ts';
import type { ToolResult } from '../connectors/types.ts';
import { RpcCode, RpcError } from '../errors.ts';
import {
  callTool,
  type CallOutcome,
  type CallRefusal,
  type CallUnrecorded,
  type ListRefusal,
  listToolsJson,
  quotaExceededMessage,
  recordRefusal,
  type ToolRuntimeDeps,
} from '../tools/runtime.ts';
import { RawJson } from '../util/jsonrpc-schema.ts';
import { complete, getPrompt, type ItemOutcome, listPrompts, listResources, listResourceTemplates, readResource, servedKinds } from '../tools/items.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import { method, type MethodDef, MethodTable, MODERN_PROTOCOL_VERSIONS, negotiateVersion, StepUpRefusal } from './protocol.ts';
import type { McpSession } from './session.ts';

/** The 2025-era table (answer) with the 2026-07-28 one beside it (`modern`). */
export class McpServer extends MethodTable<McpSession> {
  readonly modern: MethodTable<McpSession>;

  constructor(
    legacy: Record<string, MethodDef<McpSession, any>>,
    modern: Record<string, MethodDef<McpSession, any>>,
    onInternalError: (method: string, err: unknown) => void,
  ) {
    super(legacy, onInternalError);
    this.modern = new MethodTable<McpSession>(modern, onInternalError, true);
  }
}

const SERVER_NAME = 'toolgate';
const SERVER_VERSION = '0.1.0';
const INSTRUCTIONS = 'Call tools/list to see the tools this credential may use. Database tools take one SELECT statement on their own table.';
const serverInfo = (slug: string) => ({ name: SERVER_NAME, version: SERVER_VERSION, title: `Toolgate (${slug})` });

/**
 * The cache hints of 2026-07-28 (decision 0241): a client may reuse a tools/list for a minute (it depends on the
 * credential's scope: private), and the discover answer (revisions, capabilities) for an hour.
 */
const TOOLS_LIST_TTL_MS = 60_000;
const DISCOVER_TTL_MS = 3_600_000;

/** A cached tools/list with the cache hints in front (built once per cached listing). */
const cacheable = new WeakMap<RawJson, RawJson>();
function withCacheHints(listing: RawJson): RawJson {
  let hinted = cacheable.get(listing);
  if (!hinted) cacheable.set(listing, (hinted = new RawJson(`{"ttlMs":${TOOLS_LIST_TTL_MS},"cacheScope":"private",${listing.json.slice(1)}`)));
  return hinted;
}

/** The JSON-RPC error of a call that got no result: every code and message a tools/call can be refused with. */
export function toolCallError(outcome: CallRefusal | CallUnrecorded): RpcError {
  switch (outcome.kind) {
    case 'not_found':
    case 'disabled':
      return new RpcError(RpcCode.InvalidParams, `Unknown tool: ${outcome.name.slice(0, 100)}. Call tools/list for the available tools.`);
    case 'invalid_arguments':
      // A built-in tool's arguments are checked as the params they are; a catalog tool's against its own schema.
      return new RpcError(
        RpcCode.InvalidParams,
        outcome.tool
          ? `Invalid arguments for ${outcome.tool.name}: ${describeSchemaError('arguments', outcome.error)}`
          : `Invalid params: ${describeSchemaError('params.arguments', outcome.error)}`,
      );
    case 'scope':
      return new RpcError(RpcCode.InsufficientScope, `This credential may not call ${outcome.tool.name}.`);
    case 'trial_ended':
      return new RpcError(
        RpcCode.QuotaExceeded,
        `The trial of this org ended at ${outcome.endedAt.toISOString()}: tool calls are paused until the org subscribes to a plan.`,
      );
    case 'quota_exceeded':
      return new RpcError(RpcCode.QuotaExceeded, quotaExceededMessage(outcome.plan, outcome.quota));
    case 'audit_busy':
      return new RpcError(RpcCode.InternalError, 'The audit log cannot keep up right now, so the call was not run; retry shortly.');
    case 'unrecorded':
      return new RpcError(RpcCode.InternalError, 'The call ran, but its audit record could not be written, so its result is withheld.');
  }
}

/** tools/list's page, or -32602 for a cursor it cannot use (the MCP pagination utility: an invalid cursor is invalid params). */
function listPage(page: RawJson | ListRefusal): RawJson {
  if (page instanceof RawJson) return page;
  throw new RpcError(
    RpcCode.InvalidParams,
    page.reason === 'stale'
      ? 'Invalid cursor: the tool list changed since this cursor was issued. Call tools/list without a cursor to start again.'
      : 'Invalid cursor: it was not issued by tools/list for this org and credential. Call tools/list without a cursor to start from the first page.',
  );
}

/**
 * tools/call's reply: an answer's tool result, or the refusal's error, recorded as a refusal by its kind (`unrecorded`
 * is not one). A person signed in through a client can consent to the connector: that refusal names the scope.
 */
function toolCallReply(deps: ToolRuntimeDeps, session: McpSession, outcome: CallOutcome, started: number): ToolResult {
  if ('result' in outcome) return outcome.result;
  const { org, principal } = session;
  const error = toolCallError(outcome);
  if (outcome.kind !== 'unrecorded') recordRefusal(deps, org, principal, outcome, error, started);
  if (outcome.kind === 'scope' && principal.signedIn) throw new StepUpRefusal(error.code, error.message, `${MCP_SCOPE}:${outcome.tool.connector.id}`);
  throw error;
}

/** An item request's answer, or the JSON-RPC error its refusal is worded as (refusals are recorded like a tool's). */
function itemReply(deps: ToolRuntimeDeps, session: McpSession, outcome: ItemOutcome, started: number): Record<string, unknown> {
  if (outcome.kind === 'ok') return outcome.result;
  const error = itemError(outcome);
  if (outcome.kind !== 'unrecorded' && outcome.kind !== 'failed') {
    recordRefusal(deps, session.org, session.principal, { kind: outcome.kind, name: 'name' in outcome ? outcome.name : '(item)' }, error, started);
  }
  throw error;
}

function itemError(outcome: Exclude<ItemOutcome, { kind: 'ok' }>): RpcError {
  switch (outcome.kind) {
    case 'not_found':
      return outcome.what === 'resource'
        ? new RpcError(RpcCode.ResourceNotFound, `Resource not found: ${outcome.name.slice(0, 200)}. Call resources/list for the resources served.`, {
            uri: outcome.name.slice(0, 2048),
          })
        : new RpcError(RpcCode.InvalidParams, `Unknown prompt: ${outcome.name.slice(0, 100)}. Call prompts/list for the prompts served.`);
    case 'scope':
      return new RpcError(RpcCode.InsufficientScope, `This credential may not read ${outcome.name.slice(0, 200)}.`);
    case 'trial_ended':
      return new RpcError(
        RpcCode.QuotaExceeded,
        `The trial of this org ended at ${outcome.endedAt.toISOString()}: requests to connectors are paused until the org subscribes to a plan.`,
      );
    case 'audit_busy':
      return new RpcError(RpcCode.InternalError, 'The audit log cannot keep up right now, so the request was not run; retry shortly.');
    case 'failed':
      return new RpcError(RpcCode.UpstreamFailed, outcome.message);
    case 'unrecorded':
      return new RpcError(RpcCode.InternalError, 'The request ran, but its audit record could not be written, so its result is withheld.');
  }
}

/** The capabilities the endpoint declares to this credential: resources, prompts and completions only when served. */
async function capabilitiesFor(deps: ToolRuntimeDeps, session: McpSession): Promise<Record<string, unknown>> {
  const catalog = await deps.catalog.get(session.org.id, session.org.catalogVersion);
  const kinds = servedKinds(catalog, session.principal);
  return {
    tools: { listChanged: false },
    ...(kinds.resources ? { resources: { listChanged: false } } : {}),
    ...(kinds.prompts ? { prompts: { listChanged: false } } : {}),
    ...(kinds.completions ? { completions: {} } : {}),
  };
}

/** The resources, prompts and completion methods, the same in both revisions' tables. */
function itemMethods(deps: ToolRuntimeDeps): Record<string, MethodDef<McpSession, any>> {
  const catalogOf = (session: McpSession) => deps.catalog.get(session.org.id, session.org.catalogVersion);
  const reply = (session: McpSession, outcome: ItemOutcome, started: number) => itemReply(deps, session, outcome, started);
  return {
    'resources/list': method('ListParams', async (session: McpSession) => listResources(await catalogOf(session), session.principal)),
    'resources/templates/list': method('ListParams', async (session: McpSession) => listResourceTemplates(await catalogOf(session), session.principal)),
    'resources/read': method('ResourcesReadParams', (s: McpSession, params) => readResource(deps, s.org, s.principal, params.uri, s.signal), reply),
    'prompts/list': method('ListParams', async (session: McpSession) => listPrompts(await catalogOf(session), session.principal)),
    'prompts/get': method(
      'PromptsGetParams',
      (s: McpSession, params) => getPrompt(deps, s.org, s.principal, params.name, params.arguments ?? {}, s.signal),
      reply,
    ),
    'completion/complete': method('CompleteParams', (s: McpSession, params) => complete(deps, s.org, s.principal, params, s.signal), reply),
  };
}

export function createMcpServer(deps: ToolRuntimeDeps & { log: Logger }): McpServer {
  const toolsCall = method(
    'ToolsCallParams',
    ({ org, principal, signal }: McpSession, params) => callTool(deps, org, principal, params.name, params.arguments ?? {}, signal),
    (session, outcome, started) => toolCallReply(deps, session, outcome, started),
  );
  return new McpServer(
    {
      initialize: method('InitializeParams', async (session: McpSession, params) => ({
        protocolVersion: negotiateVersion(params.protocolVersion),
        capabilities: await capabilitiesFor(deps, session),
        serverInfo: serverInfo(session.org.slug),
        instructions: INSTRUCTIONS,
      })),
      ping: method(undefined, () => ({})),
      'tools/list': method('ToolsListParams', async ({ org, principal }, params) => listPage(await listToolsJson(deps, org, principal, params.cursor))),
      'tools/call': toolsCall,
      ...itemMethods(deps),
    },
    {
      'server/discover': method('DiscoverParams', async (session: McpSession) => ({
        ttlMs: DISCOVER_TTL_MS,
        cacheScope: 'private',
        supportedVersions: MODERN_PROTOCOL_VERSIONS,
        capabilities: await capabilitiesFor(deps, session),
        instructions: INSTRUCTIONS,
        _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo(session.org.slug) },
      })),
      'tools/list': method('ToolsListParams', async ({ org, principal }, params) =>
        withCacheHints(listPage(await listToolsJson(deps, org, principal, params.cursor))),
      ),
      'tools/call': toolsCall,
      ...itemMethods(deps),
    },
    (name, err) => deps.log.error('mcp method failed', { method: name, error: describeError(err) }),
  );
}
