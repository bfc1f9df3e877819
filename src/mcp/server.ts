/**
 * The MCP server's methods (initialize, ping, tools/list, tools/call) as one method table over the tool runtime.
 * The transport hands each request here with the session it authenticated; a new method is one more entry.
 *
 * This is the one place where a tool call's domain outcome (tools/runtime.ts, `CallOutcome`) becomes JSON-RPC: an
 * answer becomes the result, a refusal the error code and message below (and its audit row records both).
 */
import type { ToolResult } from '../connectors/types.ts';
import { RpcCode, RpcError } from '../errors.ts';
import {
  callTool,
  type CallOutcome,
  type CallRefusal,
  type CallUnrecorded,
  listToolsJson,
  quotaExceededMessage,
  recordRefusal,
  type ToolRuntimeDeps,
} from '../tools/runtime.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import { method, MethodTable, negotiateVersion } from './protocol.ts';
import type { McpSession } from './session.ts';

export type McpServer = MethodTable<McpSession>;

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

/** tools/call's reply: an answer's tool result, or the refusal's error, recorded as a refusal (`unrecorded` is not one). */
function toolCallReply(deps: ToolRuntimeDeps, { org, principal }: McpSession, outcome: CallOutcome, started: number): ToolResult {
  if ('result' in outcome) return outcome.result;
  const error = toolCallError(outcome);
  if (outcome.kind !== 'unrecorded') recordRefusal(deps, org, principal, outcome, error, started);
  throw error;
}

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
      'tools/call': method(
        'ToolsCallParams',
        ({ org, principal, signal }, params) => callTool(deps, org, principal, params.name, params.arguments ?? {}, signal),
        (session, outcome, started) => toolCallReply(deps, session, outcome, started),
      ),
    },
    (name, err) => deps.log.error('mcp method failed', { method: name, error: describeError(err) }),
  );
}
