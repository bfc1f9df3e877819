/** The `mcp` connector driver: an external MCP server over Streamable HTTP, its tools served as the org's own. */
import type { McpConfig } from '../../../generated/client/types.gen.ts';
import { OutboundFetchError, OutboundRefusedError, parseOutboundPolicy, type OutboundPolicy } from '../../net/outbound.ts';
import { admissionOf, busyText, ConnectorBusyError, PoolRegistry } from '../shared/pools.ts';
import { errorResult } from '../shared/result.ts';
import { type CallContext, ConnectorError, type ConnectorDriver, type SkippedTool, type SourceEnv, type ToolResult, type ToolSpec } from '../types.ts';
import { reservedHeader, UpstreamProtocolError, UpstreamRpcError, UpstreamSession, type UpstreamLimits } from './client.ts';
import { mcpConfigSchema } from './config.ts';
import { MAX_UPSTREAM_ITEMS, upstreamItemSpecs } from './items.ts';
import { MAX_UPSTREAM_TOOLS, upstreamToolSpecs, type McpTarget } from './tools.ts';

const sessions = new PoolRegistry<UpstreamSession, undefined, McpConfig>({
  type: 'mcp',
  open: (config, credential) => new UpstreamSession(config, credential),
  end: (session) => (session.policy ? session.close(session.policy) : Promise.resolve()),
});

/** Without an operator policy nothing private is reachable (the default policy allow-lists nothing). */
const DEFAULT_POLICY = parseOutboundPolicy({ allowHosts: [] });
const DEFAULT_LIMITS: UpstreamLimits = { timeoutMs: 5000, maxBytes: 1_048_576 };
/** tools/list answers may be larger than one call's result: up to 500 tools with 64 KiB schemas is too much, 8 MiB is enough. */
const MAX_LIST_BYTES = 8 * 1_048_576;

function limitsOf(env?: SourceEnv): UpstreamLimits {
  return { timeoutMs: env?.limits?.statementTimeoutMs ?? DEFAULT_LIMITS.timeoutMs, maxBytes: MAX_LIST_BYTES };
}

function hostOf(config: McpConfig): string {
  try {
    return new URL(config.url).host;
  } catch {
    return '(invalid url)';
  }
}

/** A message safe for the org (names the host, never the path, query, token or upstream internals beyond its error text). */
function describe(err: unknown, config: McpConfig): { text: string; code: ConnectorError['code'] } {
  const host = hostOf(config);
  // The caller went away while the call waited for a slot (shared/pools.ts): nothing was sent upstream.
  if ((err as { code?: unknown } | null)?.code === 'ABORTED') return { text: 'The call was aborted.', code: 'connection_failed' };
  if (err instanceof OutboundRefusedError) return { text: `The MCP server URL is not allowed: ${err.message}`, code: 'invalid_config' };
  if (err instanceof OutboundFetchError) {
    return err.reason === 'timeout'
      ? { text: `The MCP server at ${host} did not answer in time (${err.message}).`, code: 'timeout' }
      : { text: `The MCP server at ${host} is unreachable.`, code: 'connection_failed' };
  }
  if (err instanceof UpstreamRpcError) return { text: `The MCP server at ${host} answered with an error: ${err.message}`, code: 'connection_failed' };
  if (err instanceof UpstreamProtocolError) {
    const auth = err.status === 401 || err.status === 403;
    return {
      text: auth
        ? `The MCP server at ${host} refused the credential (HTTP ${err.status}).`
        : `The MCP server at ${host} did not speak MCP over Streamable HTTP: ${err.message}.`,
      code: auth ? 'auth_failed' : 'connection_failed',
    };
  }
  return { text: `The MCP server at ${host} could not be reached.`, code: 'connection_failed' };
}

/** The upstream's tools, and whether it had more than were read (past the tool cap or the page cap). */
async function listTools(session: UpstreamSession, policy: OutboundPolicy, limits: UpstreamLimits): Promise<{ tools: unknown[]; more: boolean }> {
  const tools: unknown[] = [];
  let cursor: unknown;
  // Bounded paging: a server that keeps handing out cursors cannot keep validation running.
  for (let page = 0; page < 20; page++) {
    const result = await session.request(policy, limits, 'tools/list', cursor === undefined ? {} : { cursor });
    if (Array.isArray(result.tools)) tools.push(...result.tools);
    cursor = result.nextCursor;
    if (typeof cursor !== 'string') return { tools, more: tools.length > MAX_UPSTREAM_TOOLS };
    if (tools.length >= MAX_UPSTREAM_TOOLS) break;
  }
  return { tools, more: true };
}

/** One kind of item the upstream lists (resources/list, resources/templates/list, prompts/list), in bounded pages. */
async function listItems(session: UpstreamSession, policy: OutboundPolicy, limits: UpstreamLimits, method: string, key: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: unknown;
  for (let page = 0; page < 20 && items.length <= MAX_UPSTREAM_ITEMS; page++) {
    const result = await session.request(policy, limits, method, cursor === undefined ? {} : { cursor });
    if (Array.isArray(result[key])) items.push(...(result[key] as unknown[]));
    cursor = result.nextCursor;
    if (typeof cursor !== 'string') break;
  }
  return items;
}

/**
 * The upstream's resources, resource templates and prompts (decision 0315), read only when its initialize answer
 * declared them. An upstream that declares a capability and then fails to list it is reported, not fatal: its tools
 * are still served.
 */
async function upstreamItems(session: UpstreamSession, policy: OutboundPolicy, limits: UpstreamLimits, connectorName: string) {
  const caps = session.capabilities;
  const completions = caps.completions !== undefined && caps.completions !== null;
  const specs: ToolSpec[] = [];
  const skipped: SkippedTool[] = [];
  const kinds = [
    ...(caps.resources
      ? ([
          ['resource', 'resources/list', 'resources'],
          ['resource_template', 'resources/templates/list', 'resourceTemplates'],
        ] as const)
      : []),
    ...(caps.prompts ? ([['prompt', 'prompts/list', 'prompts']] as const) : []),
  ];
  for (const [kind, method, key] of kinds) {
    try {
      const listed = upstreamItemSpecs(kind, await listItems(session, policy, limits, method, key), connectorName, completions);
      specs.push(...listed.specs);
      skipped.push(...listed.skipped);
    } catch (err) {
      if (err instanceof UpstreamRpcError)
        skipped.push({ name: `(${method})`, reason: `the server declared it but answered an error: ${err.message.slice(0, 200)}` });
      else throw err;
    }
  }
  return { specs, skipped };
}

function checkHeaders(config: McpConfig): void {
  const reserved = reservedHeader(config);
  if (reserved) throw new ConnectorError(`config.headers may not set ${reserved}: the gateway sets it (credentials belong in credential).`, 'invalid_config');
}

export const mcpDriver: ConnectorDriver<McpConfig, McpTarget, CallContext<McpConfig>> = {
  type: 'mcp',
  kind: 'mcp',
  configSchema: mcpConfigSchema,

  async validate(_connectorId, config, credential, env) {
    checkHeaders(config);
    // A fresh session, so a credential under test never replaces the one calls use until it is known good.
    const policy = env?.outbound ?? DEFAULT_POLICY;
    const session = new UpstreamSession(config, credential);
    try {
      await session.open(policy, limitsOf(env));
      await session.close(policy);
    } catch (err) {
      const d = describe(err, config);
      throw new ConnectorError(d.text, d.code);
    }
  },

  async introspect(connectorId, config, credential, env) {
    const policy = env?.outbound ?? DEFAULT_POLICY;
    const session = new UpstreamSession(config, credential);
    try {
      const connectorName = env?.connectorName ?? 'mcp';
      const [listed, items] = await (async () => {
        const tools = await listTools(session, policy, limitsOf(env));
        return [tools, await upstreamItems(session, policy, limitsOf(env), connectorName)] as const;
      })().finally(() => session.close(policy));
      // The next call opens a new session with the (possibly new) config and credential.
      await sessions.close(connectorId);
      const { specs, skipped } = upstreamToolSpecs(connectorName, listed.tools, listed.more);
      env?.reportSkipped?.([...skipped, ...items.skipped]);
      return [...specs, ...items.specs] as ToolSpec<McpTarget>[];
    } catch (err) {
      const d = describe(err, config);
      throw new ConnectorError(d.text, d.code === 'connection_failed' ? 'introspection_failed' : d.code);
    }
  },

  async execute(tool, args, ctx): Promise<ToolResult> {
    const limits: UpstreamLimits = { timeoutMs: ctx.limits.statementTimeoutMs, maxBytes: ctx.limits.maxResultBytes };
    try {
      const result = await sessions.use(
        ctx.connectorId,
        ctx.config,
        ctx.credential,
        (session) => session.request(ctx.outbound ?? DEFAULT_POLICY, limits, 'tools/call', { name: tool.target.upstreamName, arguments: args }),
        undefined,
        admissionOf(ctx.limits, ctx.signal),
      );
      return passThrough(result);
    } catch (err) {
      if (err instanceof ConnectorBusyError) return errorResult(busyText(err));
      if (err instanceof OutboundRefusedError && err.reason === 'too_large') {
        return errorResult(`The MCP server's answer is larger than the gateway's cap of ${ctx.limits.maxResultBytes} bytes; nothing of it was returned.`);
      }
      return errorResult(describe(err, ctx.config).text);
    }
  },

  async request(method, params, ctx) {
    const limits: UpstreamLimits = { timeoutMs: ctx.limits.statementTimeoutMs, maxBytes: ctx.limits.maxResultBytes };
    try {
      return await sessions.use(
        ctx.connectorId,
        ctx.config,
        ctx.credential,
        (session) => session.request(ctx.outbound ?? DEFAULT_POLICY, limits, method, params),
        undefined,
        admissionOf(ctx.limits, ctx.signal),
      );
    } catch (err) {
      if (err instanceof ConnectorBusyError) throw new ConnectorError(busyText(err), 'connection_failed');
      if (err instanceof OutboundRefusedError && err.reason === 'too_large') {
        throw new ConnectorError(
          `The MCP server's answer is larger than the gateway's cap of ${ctx.limits.maxResultBytes} bytes; nothing of it was returned.`,
          'connection_failed',
        );
      }
      const d = describe(err, ctx.config);
      throw new ConnectorError(d.text, d.code);
    }
  },

  close: (connectorId) => sessions.close(connectorId),
  closeAll: () => sessions.closeAll(),
};

/** The upstream's result as the agent gets it: content blocks (any kind), structured content, isError. */
function passThrough(result: Record<string, unknown>): ToolResult {
  const content = Array.isArray(result.content)
    ? result.content.filter((c): c is { type: string } => !!c && typeof c === 'object' && typeof (c as { type?: unknown }).type === 'string')
    : [];
  const out: ToolResult = { content };
  if (result.structuredContent && typeof result.structuredContent === 'object' && !Array.isArray(result.structuredContent)) {
    out.structuredContent = result.structuredContent as Record<string, unknown>;
  }
  if (result.isError === true) out.isError = true;
  return out;
}
