/**
 * POST /mcp/{orgSlug}: the MCP operation. The pipeline has checked its door, authenticated the caller, taken the
 * burst limit and read the body (pipeline/mcp.ts); the doorway classifies the message, answers it through the method
 * table and turns the outcome into the response (mcp/doorway.ts).
 */
import { answerMcp, type McpRequest, mcpResponse } from '../mcp/doorway.ts';
import type { RequestContext } from './context.ts';

export const mcpEndpoint = async ({ request, body, deps }: RequestContext<McpRequest>): Promise<Response> =>
  mcpResponse(deps, body, await answerMcp(deps, request, body));
