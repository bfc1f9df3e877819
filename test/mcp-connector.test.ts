// The `mcp` connector type against real upstream MCP servers: the official TypeScript SDK's server on Streamable
// HTTP (test/support/upstream-mcp.ts) and the reference package @modelcontextprotocol/server-everything, both on
// 127.0.0.1 and reached only because the test gateway allow-lists 127.0.0.1 (TOOLGATE_OUTBOUND_ALLOW_HOSTS); the
// refusal tests use a second gateway without that list. Ports 3930-3959 belong to this suite.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, getConnector, listToolNames, restTools, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { startListingUpstream, startUpstream, type Upstream } from './support/upstream-mcp.ts';
import { and, eq, sql } from 'drizzle-orm';
import { MAX_DESCRIPTION, MAX_INPUT_SCHEMA_BYTES, MAX_INPUT_SCHEMA_DEPTH, MAX_UPSTREAM_TOOLS } from '../src/connectors/mcp/tools.ts';
import { bumpCatalogVersion } from '../src/connectors/repository.ts';
import { tools as toolsTable } from '../src/store/schema.ts';

setDefaultTimeout(60_000);
/** A port the OS gives out free now (for the spawned reference server, which cannot report an ephemeral one). */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) });
  const port = probe.port!;
  probe.stop(true);
  return port;
}
const EVERYTHING_PORT = freePort();
const SECRET = 'upstream-secret-token-9f8e7d';

type Result = { content: { type: string; text?: string; data?: string; mimeType?: string }[]; structuredContent?: Record<string, any>; isError?: boolean };

let g: TestGateway;
let closed: TestGateway;
let http: ReturnType<typeof Bun.serve>;
let redirect: ReturnType<typeof Bun.serve>;
let upstream: Upstream;
let everything: ChildProcess | null = null;
let everythingError = '';
let org: Onboarded;
let manage: string;
let conn: any;
let client: Client;

async function waitForPort(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) }).then(
      () => true,
      () => false,
    );
    if (ok) return true;
    await Bun.sleep(100);
  }
  return false;
}

beforeAll(async () => {
  upstream = startUpstream(0);
  redirect = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.redirect(upstream.url, 307) });
  // The reference server, run with node as its package intends (bin `mcp-server-everything`), streamable HTTP mode.
  const entry = join(import.meta.dir, '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  everything = spawn('node', [entry, 'streamableHttp'], { env: { ...process.env, PORT: String(EVERYTHING_PORT) }, stdio: ['ignore', 'ignore', 'pipe'] });
  everything.stderr?.on('data', (d) => (everythingError += String(d)));
  [g, closed] = await Promise.all([
    startTestGateway('pglite', {
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      TOOLGATE_STATEMENT_TIMEOUT_MS: '1500',
      // A short queue deadline, so the concurrency case can hold its slow calls well inside the call timeout.
      TOOLGATE_CONNECTOR_QUEUE_TIMEOUT_MS: '300',
    }),
    startTestGateway('pglite'),
  ]);
  http = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  conn = await createConnector(g, manage, {
    name: 'Upstream',
    type: 'mcp',
    config: { url: upstream.url, headers: { 'X-Tenant': 'acme' } },
    credential: SECRET,
  });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.port}/mcp/${org.slug}`), {
    requestInit: { headers: { 'x-api-key': org.apiKey } },
  });
  client = new Client({ name: 'toolgate-mcp-connector-test', version: '1.0.0' });
  await client.connect(transport);
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  http?.stop(true);
  redirect?.stop(true);
  upstream?.stop();
  if (everything && everything.exitCode === null) everything.kill('SIGTERM');
  await Promise.all([g?.close(), closed?.close()]);
}, 60_000);

/** The SDK's client for the org's org:manage token. */
const rest = () => sdkFor(g, manage).client;
const setTool = (toolId: string, body: sdk.UpdateToolRequest) => sdk.updateToolMetadata({ client: rest(), path: { orgId: org.orgId, toolId }, body });
const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as Result;

describe('an upstream MCP server (official SDK, Streamable HTTP) as a connector', () => {
  test('validation runs initialize + tools/list: the connector is active and its tools join the catalog as <connector>__<tool>', async () => {
    verifies('MCPC-VALIDATE', 'MCPC-NAMES');
    expect(conn.status).toBe('active');
    expect(conn.type).toBe('mcp');
    expect(conn.config).toEqual({ url: upstream.url, headers: { 'X-Tenant': 'acme' } });
    const rows = await restTools(g, manage, org.orgId, conn.id);
    expect(rows.map((r) => r.tool_name).sort()).toEqual([
      'upstream__add',
      'upstream__boom',
      'upstream__echo',
      'upstream__fail',
      'upstream__headers',
      'upstream__huge',
      'upstream__picture',
      'upstream__slow',
    ]);
    expect(rows.every((r) => r.connector_type === 'mcp')).toBe(true);
    // The credential is write-only: never in the REST answer.
    const raw = JSON.stringify((await sdk.getConnector({ client: rest(), throwOnError: true, path: { connectorId: conn.id } })).data);
    expect(raw).not.toContain(SECRET);
    expect(conn.has_credential).toBe(true);
  });

  test('the official SDK client lists and calls upstream tools through the gateway; content and structured content pass through', async () => {
    verifies('MCPC-SDK-CALL', 'MCPC-PASSTHROUGH');
    const { tools } = await client.listTools();
    const add = tools.find((t) => t.name === 'upstream__add')!;
    expect(add.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] });
    expect(add.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(await call('upstream__add', { a: 2, b: 40 })).toEqual({ content: [{ type: 'text', text: '42' }], structuredContent: { sum: 42 } });
    expect(await call('upstream__echo', { text: 'héllo' })).toEqual({ content: [{ type: 'text', text: 'héllo' }] });
    const picture = await call('upstream__picture');
    expect(picture.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(picture.content[0]!.data!.length).toBeGreaterThan(20);
    // The gateway validates arguments against the passed-through schema before anything reaches the upstream.
    const before = upstream.calls.length;
    await expect(client.callTool({ name: 'upstream__add', arguments: { a: 'two' } })).rejects.toThrow(/Invalid arguments/);
    expect(upstream.calls.length).toBe(before);
  });

  test("the caller's Authorization / X-API-Key never reach the upstream: it sees the connector's own sealed credential", async () => {
    verifies('MCPC-NO-TOKEN-PASSTHROUGH');
    const viaKey = JSON.parse((await call('upstream__headers')).content[0]!.text!);
    expect(viaKey.authorization).toBe(`Bearer ${SECRET}`);
    expect(viaKey['x-tenant']).toBe('acme');
    expect(viaKey['x-api-key']).toBeUndefined();
    // A bearer-token caller, with a cookie and a forwarded-for header of its own.
    const token = await tokenFor(g, org.clientId, org.clientSecret, 'mcp:call');
    const answer = await callTool(g, org.slug, { token }, 'upstream__headers', {}, { cookie: 'session=abc', 'x-forwarded-for': '10.0.0.1' });
    const viaToken = JSON.parse(answer.body.result.content[0].text);
    expect(viaToken.authorization).toBe(`Bearer ${SECRET}`);
    expect(viaToken.cookie).toBeUndefined();
    const everyHeader = JSON.stringify(upstream.seen);
    for (const leaked of [org.apiKey, token, 'session=abc', '10.0.0.1']) expect(everyHeader).not.toContain(leaked);
  });

  test('upstream tool errors and thrown errors are tool results with isError, never protocol errors', async () => {
    verifies('MCPC-UPSTREAM-ERRORS');
    expect(await call('upstream__fail')).toEqual({ isError: true, content: [{ type: 'text', text: 'upstream tool failed: disk on fire' }] });
    const boom = await call('upstream__boom');
    expect(boom.isError).toBe(true);
    expect(boom.content[0]!.text).toContain('kaboom');
  });

  test('a slow upstream call ends at the per-call timeout with a tool error; other calls are not held up', async () => {
    verifies('MCPC-TIMEOUT');
    const started = Date.now();
    const slow = call('upstream__slow', { ms: 5000 });
    const quick = await call('upstream__echo', { text: 'still here' });
    expect(quick.content[0]!.text).toBe('still here');
    expect(Date.now() - started).toBeLessThan(1000);
    const result = await slow;
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(/did not answer in time/);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  test('bounded concurrency per upstream: past the per-connector cap calls answer busy; another connector is not held up', async () => {
    verifies('MCPC-CONCURRENCY');
    const cap = g.config.connectorMaxConcurrentCalls;
    const key = { apiKey: org.apiKey };
    const other = await createConnector(g, manage, { name: 'Neighbour', type: 'mcp', config: { url: upstream.url } });
    expect(other.status).toBe('active');
    const slow = Array.from({ length: cap + 3 }, () => callTool(g, org.slug, key, 'upstream__slow', { ms: 900 }));
    await Bun.sleep(100);
    const started = Date.now();
    const neighbour = await callTool(g, org.slug, key, 'neighbour__echo', { text: 'next door' });
    expect(neighbour.body.result.content[0].text).toBe('next door');
    expect(Date.now() - started).toBeLessThan(500);
    const texts = (await Promise.all(slow)).map((a) => a.body.result.content[0].text as string);
    expect({ texts, served: texts.filter((t) => t === 'slept 900').length }).toMatchObject({ served: cap });
    expect(texts.filter((t) => t.startsWith('The connector is busy'))).toHaveLength(3);
  });

  test('an answer over the result-size cap is refused whole with a tool error', async () => {
    verifies('MCPC-SIZE-CAP');
    const result = await call('upstream__huge');
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toContain(`cap of ${g.config.maxResultBytes} bytes`);
    expect(JSON.stringify(result).length).toBeLessThan(10_000);
  });

  test('scopes apply to upstream tools: a key limited to another connector neither lists nor calls them (-32003)', async () => {
    verifies('MCPC-SCOPES');
    const other = await createConnector(g, manage, { name: 'Second', type: 'mcp', config: { url: upstream.url } });
    expect(other.status).toBe('active');
    const created = await sdk.createApiKey({ client: rest(), body: { name: 'second-only', connector_ids: [other.id] } });
    expect(created.response.status).toBe(201);
    const key = { apiKey: created.data!.key };
    const names = await listToolNames(g, org.slug, key);
    expect(names).toContain('second__echo');
    expect(names).not.toContain('upstream__echo');
    const before = upstream.calls.length;
    expectRpcError(await callTool(g, org.slug, key, 'upstream__echo', { text: 'x' }), -32003);
    expect(upstream.calls.length).toBe(before);
    const ok = await callTool(g, org.slug, key, 'second__echo', { text: 'mine' });
    expect(ok.body.result.content[0].text).toBe('mine');
    // Without the credential, the second connector's calls carry no Authorization at all.
    const seen = JSON.parse((await callTool(g, org.slug, key, 'second__headers', {})).body.result.content[0].text);
    expect(seen.authorization).toBeUndefined();
  });

  test('approvals apply to upstream tools: a flagged tool is held, nothing reaches the upstream until approved', async () => {
    verifies('MCPC-APPROVALS');
    const tool = (await restTools(g, manage, org.orgId, conn.id)).find((t) => t.tool_name === 'upstream__echo')!;
    expect((await setTool(tool.id, { requires_approval: true })).response.status).toBe(200);
    const before = upstream.calls.filter((c) => c === 'echo').length;
    const held = await callTool(g, org.slug, { apiKey: org.apiKey }, 'upstream__echo', { text: 'approved text' });
    expect(held.body.result.structuredContent.status).toBe('pending_approval');
    const approvalId = held.body.result.structuredContent.approvalId;
    expect(upstream.calls.filter((c) => c === 'echo').length).toBe(before);
    expect((await sdk.approveApproval({ client: rest(), path: { approvalId } })).response.status).toBe(200);
    const status = await callTool(g, org.slug, { apiKey: org.apiKey }, 'check_approval_status', { approvalId });
    expect(status.body.result.structuredContent.status).toBe('executed');
    expect(JSON.stringify(status.body.result)).toContain('approved text');
    expect(upstream.calls.filter((c) => c === 'echo').length).toBe(before + 1);
    expect((await setTool(tool.id, { requires_approval: false })).response.status).toBe(200);
  });

  test('disabling an upstream tool removes it from tools/list and tools/call', async () => {
    verifies('MCPC-MANAGED');
    const tool = (await restTools(g, manage, org.orgId, conn.id)).find((t) => t.tool_name === 'upstream__picture')!;
    expect((await setTool(tool.id, { enabled: false })).response.status).toBe(200);
    expect(await listToolNames(g, org.slug, { apiKey: org.apiKey })).not.toContain('upstream__picture');
    expectRpcError(await callTool(g, org.slug, { apiKey: org.apiKey }, 'upstream__picture', {}), -32602);
  });
});

describe('the outbound guard and failures', () => {
  test('without the operator allow-list a loopback upstream is refused at save (422), before any request', async () => {
    verifies('MCPC-PRIVATE-REFUSED');
    const o = await onboard(closed);
    const token = await tokenFor(closed, o.clientId, o.clientSecret);
    const client = sdkFor(closed, token).client;
    const before = upstream.seen.length;
    const refuse = async (url: string) => {
      const res = await sdk.createConnector({ client, body: { name: `p ${url}`, type: 'mcp', config: { url }, credential: SECRET } });
      expect({ url, status: res.response.status, error: (res.error as { error?: string } | undefined)?.error }).toEqual({
        url,
        status: 422,
        error: 'connector_target_refused',
      });
      expect((res.error as { message: string }).message).toContain('not allowed');
    };
    await refuse(upstream.url);
    for (const url of ['http://169.254.169.254/mcp', 'https://[::1]/mcp', 'https://0x7f000001/mcp', 'https://10.1.2.3/mcp']) await refuse(url);
    // http is refused for a host that is not allow-listed, whatever it resolves to.
    await refuse('http://example.com/mcp');
    expect(upstream.seen.length).toBe(before);
    expect(await listToolNames(closed, o.slug, { apiKey: o.apiKey })).toEqual(['check_approval_status']);
  });

  test('a redirecting upstream is refused, not followed', async () => {
    verifies('MCPC-NO-REDIRECT');
    const before = upstream.seen.length;
    const c = await createConnector(g, manage, { name: 'bouncer', type: 'mcp', config: { url: `http://127.0.0.1:${redirect.port}/mcp` } });
    expect(c.status).toBe('failed');
    expect(c.status_reason).toContain('redirect');
    expect(upstream.seen.length).toBe(before);
  });

  test('config is checked against McpConfig (400) and reserved headers fail validation', async () => {
    verifies('MCPC-CONFIG');
    const badConfigs = [
      {},
      { url: upstream.url, host: 'x' },
      { url: 5 },
      { url: upstream.url, headers: { 'bad header': 'x' } },
      { url: upstream.url, headers: { 'X-A': 'a\r\nInjected: 1' } },
      { host: 'h', database: 'd', user: 'u' },
    ];
    for (const config of badConfigs) {
      // Raw HTTP: configs outside the contract's McpConfig, which the typed SDK cannot send.
      const res = await api(g, 'POST', '/api/connectors', manage, { name: 'bad', type: 'mcp', config });
      expect(res.status).toBe(400);
    }
    const c = await createConnector(g, manage, { name: 'sneaky', type: 'mcp', config: { url: upstream.url, headers: { Authorization: 'Bearer other' } } });
    expect(c.status).toBe('failed');
    expect(c.status_reason).toContain('Authorization');
  });

  test('upstream down: the connector fails with a clear reason, its tools answer a tool error; revalidate recovers', async () => {
    verifies('MCPC-DOWN-RECOVER');
    let later: Upstream | null = startUpstream(0);
    const downPort = Number(new URL(later.url).port);
    const c = await createConnector(g, manage, { name: 'Flaky', type: 'mcp', config: { url: later.url } });
    expect(c.status).toBe('active');
    later.stop();
    // Active but unreachable: a call is a tool error saying so.
    const down = await callTool(g, org.slug, { apiKey: org.apiKey }, 'flaky__echo', { text: 'x' });
    expect(down.body.result.isError).toBe(true);
    expect(down.body.result.content[0].text).toContain('unreachable');
    expect((await sdk.revalidateConnector({ client: rest(), path: { connectorId: c.id } })).response.status).toBe(202);
    await g.deps.jobs.idle();
    const failed = await getConnector(g, manage, c.id);
    expect(failed.status).toBe('failed');
    expect(failed.status_reason).toBe(`The MCP server at 127.0.0.1:${downPort} is unreachable.`);
    expect(await listToolNames(g, org.slug, { apiKey: org.apiKey })).not.toContain('flaky__echo');
    later = startUpstream(downPort);
    try {
      expect((await sdk.revalidateConnector({ client: rest(), path: { connectorId: c.id } })).response.status).toBe(202);
      await g.deps.jobs.idle();
      expect((await getConnector(g, manage, c.id)).status).toBe('active');
      const back = await callTool(g, org.slug, { apiKey: org.apiKey }, 'flaky__echo', { text: 'back' });
      expect(back.body.result.content[0].text).toBe('back');
    } finally {
      later.stop();
    }
  });
});

describe('one upstream tool at a time: a malformed tool is skipped and reported, the others are served', () => {
  const obj = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties });
  const nested = (depth: number): Record<string, unknown> => (depth === 0 ? { type: 'string' } : { type: 'object', properties: { n: nested(depth - 1) } });

  test('every kind of bad tool among good ones: the connector is active, the good tools answer, each bad one is listed with its reason', async () => {
    verifies('MCPC-TOOL-ONE-BY-ONE', 'MCPC-VALIDATE');
    // [upstream name, what the admin is shown as its name, a word of the reason], in the upstream's order.
    const bad: [unknown, Record<string, unknown>, string, string][] = [
      ['bell\u0007name', { inputSchema: obj() }, 'bell\\u0007name', 'characters MCP does not allow'],
      ['nul\u0000name', { inputSchema: obj() }, 'nul\\u0000name', 'characters MCP does not allow'],
      ['line\nbreak', { inputSchema: obj() }, 'line\\u000abreak', 'characters MCP does not allow'],
      ['rtl\u202eoverride', { inputSchema: obj() }, 'rtl\\u202eoverride', 'characters MCP does not allow'],
      ['lone\ud800surrogate', { inputSchema: obj() }, 'lone\ufffdsurrogate', 'characters MCP does not allow'],
      ['has space', { inputSchema: obj() }, 'has space', 'characters MCP does not allow'],
      ['x'.repeat(129), { inputSchema: obj() }, `${'x'.repeat(128)}...`, 'longer than 128'],
      ['', { inputSchema: obj() }, '(no name)', 'no name'],
      [42, { inputSchema: obj() }, '(no name)', 'no name'],
      ['good_one', { inputSchema: obj({ other: { type: 'number' } }) }, 'good_one', 'same name'],
      ['no_schema', {}, 'no_schema', 'not an object'],
      ['array_schema', { inputSchema: { type: 'array' } }, 'array_schema', 'not "object"'],
      [
        'huge_schema',
        { inputSchema: obj({ a: { type: 'string', description: 'd'.repeat(MAX_INPUT_SCHEMA_BYTES) } }) },
        'huge_schema',
        `larger than ${MAX_INPUT_SCHEMA_BYTES}`,
      ],
      ['deep_schema', { inputSchema: nested(MAX_INPUT_SCHEMA_DEPTH) }, 'deep_schema', 'nested deeper'],
      ['nul_in_schema', { inputSchema: obj({ a: { type: 'string', description: 'a\u0000b' } }) }, 'nul_in_schema', 'control character'],
      ['control_key', { inputSchema: obj({ 'a\u0001': { type: 'string' } }) }, 'control_key', 'key with a control character'],
      ['surrogate_in_schema', { inputSchema: obj({ a: { type: 'string', default: '\udc00' } }) }, 'surrogate_in_schema', 'control character'],
      ['bad_keyword', { inputSchema: obj({ a: { type: 'no-such-type' } }) }, 'bad_keyword', 'not a valid JSON Schema'],
      ['remote_ref', { inputSchema: obj({ a: { $ref: 'https://evil.example/schema.json' } }) }, 'remote_ref', 'refers to another schema'],
      ['shared_id', { inputSchema: { $id: 'shared-schema', ...obj() } }, 'shared_id', '$id'],
      ['redos_pattern', { inputSchema: obj({ a: { type: 'string', pattern: '^(a+)+$' } }) }, 'redos_pattern', 'exponential time'],
    ];
    const listed: unknown[] = [
      { name: 'good_one', description: 'The first good tool.', inputSchema: obj({ text: { type: 'string' } }) },
      ...bad.map(([name, rest]) => ({ name, description: 'A bad tool.', ...rest })),
      'not a tool at all',
      // Characters that cannot be stored or that hide text are removed from a description, not the tool dropped.
      {
        name: 'good.two-x',
        description: `Clean\u0000 me\u0007 \u202eplease\ud800\r\n${'z'.repeat(MAX_DESCRIPTION)}`,
        inputSchema: obj(),
        annotations: { readOnlyHint: true },
      },
    ];
    const upstream = startListingUpstream(listed);
    try {
      const c = await createConnector(g, manage, { name: 'Sloppy', type: 'mcp', config: { url: upstream.url } });
      expect({ status: c.status, reason: c.status_reason }).toEqual({ status: 'active', reason: null });
      const skipped = c.skipped_tools as { name: string; reason: string }[];
      expect(skipped.map((s) => s.name)).toEqual([...bad.map(([, , shown]) => shown), '(no name)']);
      for (const [i, [, , , word]] of bad.entries()) expect([skipped[i]!.name, skipped[i]!.reason]).toEqual([skipped[i]!.name, expect.stringContaining(word)]);
      // Served: exactly the good tools, callable, reaching the upstream by their own names.
      const rows = await restTools(g, manage, org.orgId, c.id);
      expect(rows.map((r) => r.tool_name).sort()).toEqual(['sloppy__good_one', 'sloppy__good_two_x']);
      const names = await listToolNames(g, org.slug, { apiKey: org.apiKey });
      expect(names).toEqual(expect.arrayContaining(['sloppy__good_one', 'sloppy__good_two_x']));
      const answer = await callTool(g, org.slug, { apiKey: org.apiKey }, 'sloppy__good_two_x', {});
      expect(answer.body.result.content[0].text).toBe('called good.two-x');
      expect((await callTool(g, org.slug, { apiKey: org.apiKey }, 'sloppy__good_one', { text: 'hi' })).body.result.content[0].text).toBe('called good_one');
      const listedTools = (await rpc(g, org.slug, { apiKey: org.apiKey }, 'tools/list', {})).body.result.tools as { name: string; description: string }[];
      const description = listedTools.find((t) => t.name === 'sloppy__good_two_x')!.description;
      expect(description.startsWith('Clean me please\ufffd\nzzz')).toBe(true);
      // The upstream's text is cut at MAX_DESCRIPTION; the gateway's own line naming the connector follows it (decision 0305).
      expect(description.endsWith('\nConnector: Sloppy')).toBe(true);
      expect(description.length).toBe(MAX_DESCRIPTION + '\nConnector: Sloppy'.length);
      expect(description).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
      // The audit row of the validation counts what was left out.
      const audit = await sdk.listAuditEvents({ client: rest(), query: { action: 'connector.validated' } });
      expect(JSON.stringify(audit.data)).toContain(`"skipped":${bad.length + 1}`);
    } finally {
      upstream.stop();
    }
  });

  test('stored tools from before these checks cannot break a catalog: each org compiles its own schemas, one bad schema costs only its tool', async () => {
    verifies('MCPC-TOOL-ONE-BY-ONE');
    const upstream = startListingUpstream([
      { name: 'alpha', inputSchema: obj({ a: { type: 'string' } }) },
      { name: 'beta', inputSchema: obj({ b: { type: 'string' } }) },
    ]);
    try {
      const other = await onboard(g);
      const otherToken = await tokenFor(g, other.clientId, other.clientSecret);
      const mine = await createConnector(g, manage, { name: 'Stored', type: 'mcp', config: { url: upstream.url } });
      const theirs = await createConnector(g, otherToken, { name: 'Stored', type: 'mcp', config: { url: upstream.url } });
      // As a row written before the checks could hold them: the same $id in two orgs, and a schema Ajv cannot compile.
      const setSchema = async (orgId: string, connectorId: string, baseName: string, inputSchema: unknown) => {
        await g.deps.store.db
          .update(toolsTable)
          .set({ spec: sql`jsonb_set(${toolsTable.spec}, '{inputSchema}', ${JSON.stringify(inputSchema)}::jsonb)` })
          .where(and(eq(toolsTable.connectorId, connectorId), eq(toolsTable.baseName, baseName)));
        await bumpCatalogVersion(g.deps.store.db, orgId);
        await g.deps.authCache.changed();
      };
      await setSchema(org.orgId, mine.id, 'stored__alpha', { $id: 'same-everywhere', ...obj({ a: { type: 'string' } }) });
      await setSchema(other.orgId, theirs.id, 'stored__alpha', { $id: 'same-everywhere', ...obj({ a: { type: 'number' } }) });
      await setSchema(other.orgId, theirs.id, 'stored__beta', obj({ b: { type: 'no-such-type' } }));
      // Each org's catalog builds, with its own schema under the shared $id.
      expect((await callTool(g, org.slug, { apiKey: org.apiKey }, 'stored__alpha', { a: 'text' })).body.result.content[0].text).toBe('called alpha');
      expect((await callTool(g, other.slug, { apiKey: other.apiKey }, 'stored__alpha', { a: 7 })).body.result.content[0].text).toBe('called alpha');
      expectRpcError(await callTool(g, other.slug, { apiKey: other.apiKey }, 'stored__alpha', { a: 'text' }), -32602);
      // The tool whose schema no longer compiles is left out; the rest of that org's catalog is served.
      const names = await listToolNames(g, other.slug, { apiKey: other.apiKey });
      expect(names).toContain('stored__alpha');
      expect(names).not.toContain('stored__beta');
    } finally {
      upstream.stop();
    }
  });

  test('more tools than the gateway reads: the first are checked and served, the rest and the excess of skipped entries are counted', async () => {
    verifies('MCPC-TOOL-ONE-BY-ONE');
    // 60 names MCP does not allow among the first MAX_UPSTREAM_TOOLS, then 7 more, listed in pages of 100.
    const listed = Array.from({ length: MAX_UPSTREAM_TOOLS + 7 }, (_, i) => ({ name: i < 60 ? `bad name ${i}` : `t${i}`, inputSchema: obj() }));
    const upstream = startListingUpstream(listed, 100);
    try {
      const c = await createConnector(g, manage, { name: 'Many', type: 'mcp', config: { url: upstream.url } });
      expect(c.status).toBe('active');
      expect((await restTools(g, manage, org.orgId, c.id)).length).toBe(MAX_UPSTREAM_TOOLS - 60);
      const skipped = c.skipped_tools as { name: string; reason: string }[];
      expect(skipped.length).toBe(50);
      expect(skipped[0]).toEqual({ name: 'bad name 0', reason: expect.stringContaining('characters MCP does not allow') });
      // 49 listed by name; the last entry counts the other 11 bad names and the unread rest.
      expect(skipped[49]).toEqual({ name: '(more)', reason: '12 further tools were skipped' });
    } finally {
      upstream.stop();
    }
  });
});

describe('the reference server @modelcontextprotocol/server-everything (streamable HTTP, run with node)', () => {
  test('its tools are listed and callable through the gateway with the official SDK client', async () => {
    verifies('MCPC-EVERYTHING');
    expect(await waitForPort(EVERYTHING_PORT, 20_000)).toBe(true);
    const c = await createConnector(g, manage, { name: 'Everything', type: 'mcp', config: { url: `http://127.0.0.1:${EVERYTHING_PORT}/mcp` } });
    expect({ status: c.status, reason: c.status_reason, stderr: c.status === 'active' ? '' : everythingError.slice(0, 500) }).toMatchObject({
      status: 'active',
    });
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('everything__echo');
    const echo = await call('everything__echo', { message: 'through the gateway' });
    expect(echo.isError).toBeFalsy();
    expect(echo.content[0]!.text).toContain('through the gateway');
  });
});
