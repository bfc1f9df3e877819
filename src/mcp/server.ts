/**
 * The MCP server's methods (initialize, ping, tools/list, tools/call) as one method table over the tool runtime.
 * The transport hands each request here with the session it authenticated; a new method is one more entry.
 */
import { callTool, listToolsJson, type ToolRuntimeDeps } from '../tools/runtime.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { method, MethodTable, negotiateVersion } from './protocol.ts';
import type { McpSession } from './session.ts';

export type McpServer = MethodTable<McpSession>;

export function createMcpServer(deps: ToolRuntimeDeps & { log: Logger }): McpServer {
  return new MethodTable<McpSession>(
    {
      initialize: method('InitializeParams', ({ org }, params) => ({
        protocolVersion: negotiateVersion(params.protocolVersion),
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'toolgate', version: '0.1.0', title: `Toolgate (${org.slug})` },
        instructions: 'Call tools/list to see the tools this credential may use. Database tools take one SELECT statement on their own table.',
      })),
      ping: method(undefined, () => ({})),
      'tools/list': method('ToolsListParams', ({ org, principal }) => listToolsJson(deps, org, principal)),
      'tools/call': method('ToolsCallParams', ({ org, principal, signal }, params) =>
        callTool(deps, org, principal, params.name, params.arguments ?? {}, signal),
      ),
    },
    (name, err) => deps.log.error('mcp method failed', { method: name, error: describeError(err) }),
  );
}
