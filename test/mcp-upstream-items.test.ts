// Issue 43 item 5 (decision 0315): an upstream MCP server whole. A real upstream (the official SDK's McpServer over
// Streamable HTTP, test/support/upstream-mcp.ts with `items`) serves resources, a resource template and prompts; the
// gateway lists and serves them through the official SDK client with the governance of tools: per-item enable/disable,
// names and URIs prefixed per connector, size cap, audit, no credential passthrough, capabilities only when served.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector, expectRpcError, restTools, rpc, type ToolRow } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { startUpstream, type Upstream } from './support/upstream-mcp.ts';

setDefaultTimeout(60_000);
const SECRET = 'h7-upstream-items-secret';

let g: TestGateway;
let http: ReturnType<typeof Bun.serve>;
let upstream: Upstream;
let plain: Upstream;
let org: Onboarded;
let token: string;
let rows: ToolRow[];
let client: Client;

const rest = () => sdkFor(g, token).client;
const row = (kind: string, name: string) => {
  const found = rows.find((r) => r.kind === kind && r.tool_name === name);
  if (!found) throw new Error(`no ${kind} ${name}: ${rows.map((r) => `${r.kind}:${r.tool_name}`).join(', ')}`);
  return found;
};

beforeAll(async () => {
  upstream = startUpstream(0, '/mcp', { items: true });
  plain = startUpstream(0);
  g = await startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1', TOOLGATE_MAX_RESULT_BYTES: '1048576' });
  http = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  const conn = await createConnector(g, token, { name: 'Docs', type: 'mcp', config: { url: upstream.url }, credential: SECRET });
  expect(conn.status).toBe('active');
  rows = await restTools(g, token, org.orgId, conn.id);
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.port}/mcp/${org.slug}`), {
    requestInit: { headers: { 'x-api-key': org.apiKey } },
  });
  client = new Client({ name: 'h7-upstream-items', version: '1.0.0' });
  await client.connect(transport);
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  http?.stop(true);
  upstream?.stop();
  plain?.stop();
  await g?.close();
});

describe('an upstream MCP server whole', () => {
  test('validation stores its resources, template and prompts beside its tools, prefixed per connector; REST lists them with their kind', () => {
    expect(
      rows
        .filter((r) => r.kind === 'resource')
        .map((r) => r.tool_name)
        .sort(),
    ).toEqual(['docs__huge', 'docs__readme', 'docs__secret']);
    expect(rows.filter((r) => r.kind === 'resource_template').map((r) => r.tool_name)).toEqual(['docs__note']);
    expect(
      rows
        .filter((r) => r.kind === 'prompt')
        .map((r) => r.tool_name)
        .sort(),
    ).toEqual(['docs__forbidden', 'docs__greet']);
    expect(row('tool', 'docs__echo').enabled).toBe(true);
    expect(row('resource', 'docs__readme').description).toStartWith('The project readme.');
  });

  test('the gateway declares resources, prompts and completions, as the upstream serves them', () => {
    const caps = client.getServerCapabilities()!;
    expect(caps.resources).toEqual({ listChanged: false });
    expect(caps.prompts).toEqual({ listChanged: false });
    expect(caps.completions).toEqual({});
  });

  test('the SDK client lists and reads resources through the gateway, URIs in gateway form', async () => {
    const { resources } = await client.listResources();
    const readme = resources.find((r) => r.name === 'docs__readme')!;
    expect(readme).toMatchObject({ uri: 'toolgate://docs/docs://readme', title: 'Readme', mimeType: 'text/plain' });
    const read = await client.readResource({ uri: readme.uri });
    expect(read.contents).toEqual([{ uri: 'toolgate://docs/docs://readme', mimeType: 'text/plain', text: 'hello from the readme' }]);
    expect(upstream.calls).toContain('read docs://readme');
  });

  test('a template is listed in gateway form, and a URI it yields is read from the upstream', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['toolgate://docs/notes://{id}']);
    const read = await client.readResource({ uri: 'toolgate://docs/notes://7' });
    expect(read.contents[0]).toMatchObject({ uri: 'toolgate://docs/notes://7', text: 'note number 7' });
  });

  test('prompts are listed and got through the gateway; completion is forwarded for a completable argument', async () => {
    const { prompts } = await client.listPrompts();
    const greet = prompts.find((p) => p.name === 'docs__greet')!;
    expect(greet.arguments).toEqual([{ name: 'name', required: true }]);
    const got = await client.getPrompt({ name: 'docs__greet', arguments: { name: 'Ada' } });
    expect(got.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Hello Ada' } }]);
    const done = await client.complete({ ref: { type: 'ref/prompt', name: 'docs__greet' }, argument: { name: 'name', value: 'A' } });
    expect(done.completion.values).toEqual(['Ada', 'Alan']);
    const ids = await client.complete({ ref: { type: 'ref/resource', uri: 'toolgate://docs/notes://{id}' }, argument: { name: 'id', value: '1' } });
    expect(ids.completion.values).toEqual(['1', '12']);
  });

  test('a disabled resource or prompt is neither listed nor served, and never reaches the upstream', async () => {
    const setTool = (id: string, enabled: boolean) => sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId: id }, body: { enabled } });
    expect((await setTool(row('resource', 'docs__secret').id, false)).response.status).toBe(200);
    expect((await setTool(row('prompt', 'docs__forbidden').id, false)).response.status).toBe(200);
    expect((await client.listResources()).resources.map((r) => r.name)).not.toContain('docs__secret');
    expect((await client.listPrompts()).prompts.map((p) => p.name)).not.toContain('docs__forbidden');
    const before = upstream.calls.length;
    // Not through its own URI, nor through a template that could yield it.
    expectRpcError(await rpc(g, org.slug, { apiKey: org.apiKey }, 'resources/read', { uri: 'toolgate://docs/docs://secret' }), -32002, 'Resource not found');
    expectRpcError(await rpc(g, org.slug, { apiKey: org.apiKey }, 'prompts/get', { name: 'docs__forbidden' }), -32602, 'Unknown prompt');
    expectRpcError(await rpc(g, org.slug, { apiKey: org.apiKey }, 'resources/read', { uri: 'toolgate://docs/file:///etc/passwd' }), -32002);
    expect(upstream.calls.slice(before)).toEqual([]);
    // Disabling the template stops the URIs it yields too.
    expect((await setTool(row('resource_template', 'docs__note').id, false)).response.status).toBe(200);
    expectRpcError(await rpc(g, org.slug, { apiKey: org.apiKey }, 'resources/read', { uri: 'toolgate://docs/notes://7' }), -32002);
    expect((await setTool(row('resource_template', 'docs__note').id, true)).response.status).toBe(200);
  });

  test("a resource larger than the gateway's cap is refused whole", async () => {
    const answer = await rpc(g, org.slug, { apiKey: org.apiKey }, 'resources/read', { uri: 'toolgate://docs/docs://huge' });
    expectRpcError(answer, -32004, 'larger than the gateway');
    expect(answer.text.length).toBeLessThan(2000);
  });

  test("the upstream gets the connector's credential, never the agent's", () => {
    const reads = upstream.seen.filter((h) => h['mcp-session-id'] !== undefined || h.authorization !== undefined);
    expect(reads.length).toBeGreaterThan(0);
    for (const headers of upstream.seen) {
      expect(headers['x-api-key']).toBeUndefined();
      expect(headers.authorization).toBe(`Bearer ${SECRET}`);
    }
  });

  test('every read, get and completion is audited', async () => {
    const events = async (action: string) => (await sdk.listAuditEvents({ client: rest(), query: { action, limit: 200 } })).data!.events;
    // Rows are listed once sealed (in the background): wait for the last read's.
    let reads = await events('resource.read');
    for (let i = 0; i < 50 && !reads.some((e) => e.target_id === 'toolgate://docs/docs://huge'); i++) {
      await Bun.sleep(100);
      reads = await events('resource.read');
    }
    expect(reads.some((e) => e.target_id === 'toolgate://docs/docs://readme' && e.outcome === 'success')).toBe(true);
    expect(reads.filter((e) => e.target_id === 'toolgate://docs/docs://huge').map((e) => e.outcome)).toEqual(['error']);
    expect((await events('prompt.got')).some((e) => e.target_id === 'docs__greet')).toBe(true);
    expect((await events('completion.asked')).length).toBeGreaterThanOrEqual(2);
    const refused = await events('tool.call_refused');
    expect(refused.some((e) => e.target_id === 'docs__forbidden')).toBe(true);
  });

  test('an upstream with tools only declares no resources or prompts capability', async () => {
    const other = await onboard(g);
    const otherToken = await tokenFor(g, other.clientId, other.clientSecret);
    const conn = await createConnector(g, otherToken, { name: 'Plain', type: 'mcp', config: { url: plain.url } });
    expect(conn.status).toBe('active');
    const init = await rpc(g, other.slug, { apiKey: other.apiKey }, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    });
    expect(init.body.result.capabilities).toEqual({ tools: { listChanged: false } });
    expect((await rpc(g, other.slug, { apiKey: other.apiKey }, 'prompts/list', {})).body.result.prompts).toEqual([]);
  });
});
