/** POST /mcp/{orgSlug}: the agent-facing MCP endpoint (JSON-RPC 2.0, stateless Streamable HTTP, JSON responses). */
import type { Principal } from '../auth/principal.ts';
import { AppError, json, restErrorResponse, RpcCode, RpcError, rpcErrorObject, unauthenticated } from '../errors.ts';
import { BodyError, decodeUtf8, parseJson, readBodyCapped } from '../http/body.ts';
import type { AppDeps, Handler } from '../http/context.ts';
import { hostPolicyFor } from '../http/host-policy.ts';
import {
  checkParams,
  classify,
  failure,
  isSupportedVersionHeader,
  negotiateVersion,
  success,
  SUPPORTED_PROTOCOL_VERSIONS,
  type RequestId,
} from '../mcp/protocol.ts';
import { callTool, listToolsJson } from '../mcp/tools.ts';
import { findMcpOrg, findMcpOrgWithApiKey } from '../mcp/lookup.ts';
import { describeError } from '../util/log.ts';
import { burstLimitFor } from '../limits/plans.ts';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
/** The nil uuid: no org has it, so every credential checked against it is refused like a foreign one. */
const NO_ORG = '00000000-0000-0000-0000-000000000000';

/** The org as the MCP endpoint reads it (columns: MCP_ORG_COLUMNS in mcp/lookup.ts). */
export interface McpOrg {
  id: string;
  slug: string;
  catalogVersion: number;
  plan: string;
  burstLimitPerSecond: number | null;
}

/** The org and the caller for a request carrying X-API-Key, in one (batched) store query; the same answers as findMcpOrg + auth.mcp. */
async function orgWithApiKey(deps: AppDeps, slug: string, apiKey: string): Promise<{ org: McpOrg; principal: Principal }> {
  const found = await findMcpOrgWithApiKey(deps.store.db, slug, apiKey.trim());
  // An unknown slug is checked against NO_ORG, like a foreign key: the answer is the one an invalid key gets.
  const principal = deps.auth.apiKeyPrincipal(found?.id ?? NO_ORG, found?.key);
  const { key: _key, ...org } = found!;
  return { org, principal };
}

/**
 * The body, capped at maxBytes. A plain Content-Length within the cap is read in one go (HTTP framing ends the body
 * there; cheaper than streaming); anything else (chunked, no length) is streamed with the cap enforced as it comes.
 */
async function readMcpBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d{1,10}$/.test(declared) && Number(declared) <= maxBytes && !request.headers.has('transfer-encoding')) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength <= maxBytes) return bytes;
    throw new BodyError(413, 'payload_too_large', `The request body is larger than ${maxBytes} bytes.`);
  }
  return readBodyCapped(request, maxBytes);
}

function rateLimited(retryAfterSeconds: number): Response {
  return json({ error: 'rate_limited', message: 'The per-second burst limit of this plan is exceeded; retry after 1 second.' }, 429, {
    'retry-after': String(retryAfterSeconds),
  });
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
      return listToolsJson(deps, org, principal);
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
    if (!hostPolicyFor(config).originAllowed(request.headers.get('origin'))) {
      return json({ error: 'forbidden_origin', message: 'This Origin may not call the MCP endpoint.' }, 403);
    }
    if (!isSupportedVersionHeader(request.headers.get('mcp-protocol-version'))) {
      return json({ error: 'unsupported_protocol_version', message: `Supported MCP-Protocol-Version values: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.` }, 400);
    }
    // An unknown slug and another org's credential get the same 401: nothing is revealed about which orgs exist.
    // For an unknown slug the credential is checked against an org id no credential belongs to, so the answer
    // (message and WWW-Authenticate) is exactly the one another org's or an invalid credential gets.
    const apiKey = request.headers.get('x-api-key');
    let org: McpOrg | undefined;
    let principal: Principal;
    if (apiKey !== null) ({ org, principal } = await orgWithApiKey(deps, params.orgSlug!, apiKey));
    else {
      org = await findMcpOrg(deps.store.db, params.orgSlug!);
      principal = await deps.auth.mcpBearer(request, org?.id ?? NO_ORG);
    }
    if (!org) throw unauthenticated('The API key is invalid or revoked.');

    // Burst limit of the org's plan. Every authenticated request first passes this instance's window, before any
    // work is done; tools/call (the calls that reach databases) is then counted exactly across instances below.
    const burstLimit = burstLimitFor(org.plan, org.burstLimitPerSecond, config.customBurstPerSecond);
    const local = deps.localBurst.take(org.id, burstLimit);
    if (!local.allowed) return rateLimited(local.retryAfterSeconds);

    const contentType = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') {
      return json({ error: 'unsupported_media_type', message: 'Content-Type must be application/json.' }, 415);
    }
    let text: string;
    try {
      text = decodeUtf8(await readMcpBody(request, config.maxBodyBytes));
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
    if (message.method === 'tools/call') {
      const shared = await deps.limiter.take(org.id, burstLimit);
      if (!shared.allowed) return rateLimited(shared.retryAfterSeconds);
    }
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
