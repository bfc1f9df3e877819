/** POST /mcp/{orgSlug}: the agent-facing MCP endpoint (JSON-RPC 2.0, stateless Streamable HTTP, JSON responses). */
import { eq } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import { AppError, json, restErrorResponse, RpcCode, RpcError, rpcErrorObject, unauthenticated } from '../errors.ts';
import { BodyError, decodeUtf8, parseJson, readBodyCapped } from '../http/body.ts';
import type { AppDeps, Handler } from '../http/context.ts';
import {
  checkParams,
  classify,
  failure,
  isSupportedVersionHeader,
  negotiateVersion,
  originAllowed,
  success,
  SUPPORTED_PROTOCOL_VERSIONS,
  type RequestId,
} from '../mcp/protocol.ts';
import { callTool, listTools } from '../mcp/tools.ts';
import { orgs } from '../store/schema.ts';
import { describeError } from '../util/log.ts';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

export interface McpOrg {
  id: string;
  slug: string;
  catalogVersion: number;
  plan: string;
}

async function findOrg(deps: AppDeps, slug: string): Promise<McpOrg | undefined> {
  const [row] = await deps.store.db
    .select({ id: orgs.id, slug: orgs.slug, catalogVersion: orgs.catalogVersion, plan: orgs.plan })
    .from(orgs)
    .where(eq(orgs.slug, slug));
  return row;
}

function rpcResponse(body: string, status = 200): Response {
  return new Response(body, { status, headers: JSON_TYPE });
}

async function dispatchMethod(deps: AppDeps, org: McpOrg, principal: Principal, method: string, params: Record<string, unknown>): Promise<unknown> {
  switch (method) {
    case 'initialize':
      checkParams('InitializeParams', params);
      return {
        protocolVersion: negotiateVersion(params.protocolVersion),
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'toolgate', version: '0.1.0', title: `Toolgate (${org.slug})` },
        instructions: 'Call tools/list to see the tools this credential may use. Database tools take one SELECT statement on their own table.',
      };
    case 'ping':
      return {};
    case 'tools/list':
      checkParams('ToolsListParams', params);
      return listTools(deps, org, principal);
    case 'tools/call':
      checkParams('ToolsCallParams', params);
      return callTool(deps, org, principal, params.name as string, (params.arguments as Record<string, unknown>) ?? {});
    default:
      throw new RpcError(RpcCode.MethodNotFound, `Method not found: ${method.slice(0, 100)}. Supported: initialize, ping, tools/list, tools/call.`);
  }
}

export const mcpEndpoint: Handler = async ({ request, params, deps }) => {
  const { config, log } = deps;
  try {
    // Transport checks come first: a foreign Origin executes nothing, whatever else the request holds.
    if (!originAllowed(request.headers.get('origin'), new URL(config.publicUrl).origin, config.allowedOrigins)) {
      return json({ error: 'forbidden_origin', message: 'This Origin may not call the MCP endpoint.' }, 403);
    }
    if (!isSupportedVersionHeader(request.headers.get('mcp-protocol-version'))) {
      return json({ error: 'unsupported_protocol_version', message: `Supported MCP-Protocol-Version values: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.` }, 400);
    }
    // An unknown slug and another org's credential get the same 401: nothing is revealed about which orgs exist.
    const org = await findOrg(deps, params.orgSlug!);
    if (!org) throw unauthenticated('The credential is not valid for this endpoint.');
    const principal = await deps.auth.mcp(request, org.id);

    const contentType = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') {
      return json({ error: 'unsupported_media_type', message: 'Content-Type must be application/json.' }, 415);
    }
    let text: string;
    try {
      text = decodeUtf8(await readBodyCapped(request, config.maxBodyBytes));
    } catch (err) {
      if (err instanceof BodyError && err.status === 413) throw err;
      return rpcResponse(failure(null, { code: RpcCode.ParseError, message: 'Parse error: the body is not valid UTF-8.' }), 400);
    }
    const parsed = parseJson(text);
    if (!parsed.ok) {
      const message = parsed.reason === 'depth' ? 'Parse error: the JSON is nested too deeply.' : 'Parse error: the body is not valid JSON.';
      return rpcResponse(failure(null, { code: RpcCode.ParseError, message }), 400);
    }
    const message = classify(parsed.value);
    if (message.kind === 'invalid') return rpcResponse(failure(message.id, { code: RpcCode.InvalidRequest, message: message.message }), 400);
    // Notifications and client responses need no answer (Streamable HTTP: 202, empty body).
    if (message.kind !== 'request') return new Response(null, { status: 202 });
    return await answer(deps, org, principal, message.id, message.method, message.params);
  } catch (err) {
    if (err instanceof AppError) return restErrorResponse(err);
    log.error('mcp endpoint failed', { error: describeError(err) });
    return json({ error: 'internal_error', message: 'An internal error occurred.' }, 500);
  }
};

async function answer(deps: AppDeps, org: McpOrg, principal: Principal, id: RequestId, method: string, params: Record<string, unknown>): Promise<Response> {
  try {
    return rpcResponse(success(id, await dispatchMethod(deps, org, principal, method, params)));
  } catch (err) {
    // Rate limits speak HTTP (429 + Retry-After) even on the JSON-RPC endpoint.
    if (err instanceof AppError) throw err;
    if (!(err instanceof RpcError)) deps.log.error('mcp method failed', { method, error: describeError(err) });
    return rpcResponse(failure(id, rpcErrorObject(err)));
  }
}
