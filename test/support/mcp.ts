/** Helpers for suites that talk JSON-RPC to `POST /mcp/{slug}` and manage connectors over REST. */
import { expect } from 'bun:test';
import type { Gateway } from '../../src/gateway.ts';
import { BASE } from './gateway.ts';
import * as sdk from '../../sdk/index.ts';
import { sdkFor } from './sdk.ts';

export type Credential = { apiKey: string } | { token: string } | null;

export interface RpcAnswer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

function credentialHeaders(credential: Credential): Record<string, string> {
  if (!credential) return {};
  return 'apiKey' in credential ? { 'x-api-key': credential.apiKey } : { authorization: `Bearer ${credential.token}` };
}

/** Posts a raw body (string or bytes) to the org's MCP endpoint. */
export async function rpcRaw(
  g: Gateway,
  slug: string,
  credential: Credential,
  body: BodyInit | null,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<RpcAnswer> {
  const response = await g.handle(
    new Request(`${BASE}/mcp/${slug}`, {
      method,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...credentialHeaders(credential), ...headers },
      body,
    }),
  );
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: response.status, text, body: parsed, headers: response.headers };
}

let nextId = 1;
/** One JSON-RPC request; the id is generated unless given. */
export function rpc(
  g: Gateway,
  slug: string,
  credential: Credential,
  method: string,
  params?: unknown,
  headers: Record<string, string> = {},
): Promise<RpcAnswer> {
  const message = { jsonrpc: '2.0', id: nextId++, method, ...(params === undefined ? {} : { params }) };
  return rpcRaw(g, slug, credential, JSON.stringify(message), headers);
}

export async function listToolNames(g: Gateway, slug: string, credential: Credential): Promise<string[]> {
  const answer = await rpc(g, slug, credential, 'tools/list', {});
  expect(answer.status).toBe(200);
  return (answer.body.result.tools as { name: string }[]).map((t) => t.name);
}

export function callTool(g: Gateway, slug: string, credential: Credential, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) {
  return rpc(g, slug, credential, 'tools/call', { name, arguments: args }, headers);
}

/** Asserts a JSON-RPC error answer and returns its error object. */
export function expectRpcError(answer: RpcAnswer, code: number, messageIncludes?: string | RegExp, status = 200) {
  expect(answer.status).toBe(status);
  expect(answer.body?.jsonrpc).toBe('2.0');
  expect(answer.body?.result).toBeUndefined();
  expect(answer.body?.error?.code).toBe(code);
  expect(typeof answer.body.error.message).toBe('string');
  if (typeof messageIncludes === 'string') expect(answer.body.error.message).toContain(messageIncludes);
  else if (messageIncludes) expect(answer.body.error.message).toMatch(messageIncludes);
  return answer.body.error as { code: number; message: string };
}

export interface ConnectorInput {
  name: string;
  type: string;
  config: Record<string, unknown>;
  credential?: string;
  allow_write?: boolean;
  allow_ddl?: boolean;
}

/** Creates a connector over REST, waits for its background validation and returns the connector as GET shows it. */
export async function createConnector(g: Gateway, token: string, input: ConnectorInput) {
  const created = await sdk.createConnector({ client: sdkFor(g, token).client, body: input as sdk.CreateConnectorRequest });
  if (created.response.status !== 201) throw new Error(`connector creation failed: ${created.response.status} ${JSON.stringify(created.error)}`);
  await g.deps.jobs.idle();
  return getConnector(g, token, created.data!.id);
}

export async function getConnector(g: Gateway, token: string, id: string) {
  const { data, error, response } = await sdk.getConnector({ client: sdkFor(g, token).client, path: { connectorId: id } });
  if (response.status !== 200) throw new Error(`GET connector failed: ${response.status} ${JSON.stringify(error)}`);
  return data as any;
}

export interface ToolRow {
  id: string;
  kind: 'tool' | 'schema' | 'resource' | 'resource_template' | 'prompt';
  tool_name: string;
  name: string;
  description: string;
  enabled: boolean;
  requires_approval: boolean;
  approval_ttl_seconds: number;
  approval_emails: string[];
  connector_id: string;
  connector_name: string;
  connector_type: string;
  tool_name_override: string | null;
  /** A saved-statement tool (it has no policy of its own). */
  saved?: boolean;
  tool_description_override: string | null;
  read_only: boolean;
}

/** GET /api/mcp/{orgId}/tools (optionally for one connector). */
export async function restTools(g: Gateway, token: string, orgId: string, connectorId?: string): Promise<ToolRow[]> {
  const { data, error, response } = await sdk.listTools({
    client: sdkFor(g, token).client,
    path: { orgId },
    query: connectorId ? { connector_id: connectorId } : undefined,
  });
  if (response.status !== 200) throw new Error(`GET tools failed: ${response.status} ${JSON.stringify(error)}`);
  return data!.tools;
}

/** The JSON rows of a successful database tool call. */
export function rowsOf(answer: RpcAnswer): Record<string, unknown>[] {
  expect(answer.status).toBe(200);
  const result = answer.body?.result;
  if (!result || result.isError) throw new Error(`tool call failed: ${answer.text}`);
  return JSON.parse(result.content[0].text);
}
