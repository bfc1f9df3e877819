// MCP 2026-07-28 (the stateless revision) beside the 2025 ones: the official SDK v2 client (@modelcontextprotocol/client)
// pinned to 2026-07-28 against the gateway served on a real port with a real PostgreSQL connector (no fallback; the
// headers the server saw are recorded), its corrective step on -32022, its legacy mode (initialize) still working, and
// each check of the revision on the raw wire: header/body mismatches, the envelope, cache hints, batches.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import * as rpcValidators from '../generated/validators/jsonrpc.ts';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector, rpcRaw, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
const REVISION = '2026-07-28';
const ITEMS = 'query_postgresql_items';

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let key: Credential;
let manage: string;
let t: Targets;
const clients: Client[] = [];

/** What the served gateway saw of each POST: the body's method and the MCP headers, and whether it answered a session id. */
interface Seen {
  method: string | undefined;
  version: string | null;
  mcpMethod: string | null;
  mcpName: string | null;
  sessionId: string | null;
  status: number;
}
let seen: Seen[] = [];

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_LOG_LEVEL: 'error' }), createTargets('tg_mcp26', 'pg')]);
  org = await onboard(g);
  key = { apiKey: org.apiKey };
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  const pg = await createConnector(g, manage, { name: 'pg', type: 'postgresql', config: t.pgConfig });
  expect((pg as { status?: string }).status).toBe('active');
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const text = request.method === 'POST' ? await request.clone().text() : '';
      const response = await g.handle(request);
      let method: string | undefined;
      try {
        method = (JSON.parse(text) as { method?: string }).method;
      } catch {
        method = undefined;
      }
      const h = request.headers;
      seen.push({
        method,
        version: h.get('mcp-protocol-version'),
        mcpMethod: h.get('mcp-method'),
        mcpName: h.get('mcp-name'),
        sessionId: response.headers.get('mcp-session-id'),
        status: response.status,
      });
      return response;
    },
  });
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  server?.stop(true);
  await g?.close();
  await t?.drop();
}, 60_000);

async function connectV2(options: ConstructorParameters<typeof Client>[1]): Promise<Client> {
  const url = new URL(`http://127.0.0.1:${server.port}/mcp/${org.slug}`);
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { 'X-API-Key': org.apiKey } } });
  const client = new Client({ name: 'toolgate-2026', version: '1.0.0' }, options);
  await client.connect(transport);
  clients.push(client);
  return client;
}

type CallResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

/** The _meta envelope of a 2026-07-28 request. */
const envelope = (version = REVISION) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

let id = 1;
/** A raw request with the given params and headers (the 2026 headers are given explicitly, so each can be wrong). */
function post(method: string, params: Record<string, unknown>, headers: Record<string, string>) {
  return rpcRaw(g, org.slug, key, JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }), headers);
}
const modernHeaders = (method: string, extra: Record<string, string> = {}) => ({ 'mcp-protocol-version': REVISION, 'mcp-method': method, ...extra });
const callParams = (name: string) => ({ _meta: envelope(), name, arguments: { sql: 'SELECT id FROM items ORDER BY id' } });

/** The org's audited tool calls, once the audit writer has drained. */
async function toolCallsAudited(): Promise<number> {
  await g.deps.audit.drain();
  const response = await api(g, 'GET', '/api/audit?limit=200&action=tool.called', manage);
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: unknown[] }).events.length;
}

function expectError(answer: { status: number; body: any }, status: number, code: number): any {
  expect(answer.status).toBe(status);
  expect(rpcValidators.JsonRpcErrorResponse(answer.body)).toBe(true);
  expect(answer.body.error.code).toBe(code);
  return answer.body.error;
}

describe.skipIf(!available)('the SDK v2 client on MCP 2026-07-28', () => {
  test('pinned to 2026-07-28: server/discover, no initialize, no session; lists and calls tools with the headers checked', async () => {
    verifies('MCP-2026-SDK-V2', 'MCP-SDK-CLIENT', 'MCP-2026-CACHE');
    seen = [];
    const client = await connectV2({ versionNegotiation: { mode: { pin: REVISION } } });
    expect(client.getNegotiatedProtocolVersion()).toBe(REVISION);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()).toMatchObject({ name: 'toolgate', title: `Toolgate (${org.slug})` });
    expect(client.getInstructions()).toContain('tools/list');

    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(['check_approval_status', 'describe_pg', ITEMS, 'query_postgresql_notes']);
    const rows = (await client.callTool({ name: ITEMS, arguments: { sql: 'SELECT id, name FROM items ORDER BY id', limit: 2 } })) as CallResult;
    expect(rows.isError).toBeFalsy();
    expect(rows.structuredContent).toEqual({
      rows: [
        { id: 1, name: 'apple' },
        { id: 2, name: 'pear' },
      ],
      rowCount: 2,
      truncated: true,
    });
    const status = (await client.callTool({ name: 'check_approval_status', arguments: { approvalId: 'nope' } })) as CallResult;
    expect(status.structuredContent).toMatchObject({ status: 'not_found' });
    // A method error arrives as the revision's ProtocolError with the code.
    const unknown = await client.callTool({ name: 'query_postgresql_nope', arguments: { sql: 'SELECT 1' } }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(ProtocolError);
    expect((unknown as ProtocolError).code).toBe(-32602);

    // What the server saw: no initialize, every POST a 2026-07-28 one whose Mcp-Method names the body's method,
    // tools/call with Mcp-Name, and no session id handed out.
    const methods = seen.map((s) => s.method);
    expect(methods[0]).toBe('server/discover');
    expect(methods).not.toContain('initialize');
    expect(methods).not.toContain('notifications/initialized');
    expect(methods.filter((m) => m === 'tools/call')).toHaveLength(3);
    for (const s of seen) {
      expect(s).toMatchObject({ version: REVISION, mcpMethod: s.method, sessionId: null, status: 200 });
      if (s.method === 'tools/call') expect(s.mcpName).not.toBeNull();
    }
  });

  test('a client offering a later revision first is told -32022 with the supported ones and continues on 2026-07-28', async () => {
    verifies('MCP-2026-ENVELOPE', 'MCP-2026-SDK-V2');
    seen = [];
    const client = await connectV2({
      supportedProtocolVersions: ['2099-01-01', REVISION],
      versionNegotiation: { mode: 'auto' },
    });
    expect(client.getNegotiatedProtocolVersion()).toBe(REVISION);
    expect(seen.map((s) => [s.method, s.version, s.status])).toEqual([
      ['server/discover', '2099-01-01', 400],
      ['server/discover', REVISION, 200],
    ]);
    expect((await client.listTools()).tools.length).toBe(4);
  });

  test('the v2 client in its default (legacy) mode still connects with initialize on 2025-11-25', async () => {
    verifies('MCP-2026-LEGACY', 'MCP-INIT-NEGOTIATE');
    seen = [];
    const client = await connectV2({});
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(client.getProtocolEra()).toBe('legacy');
    const rows = (await client.callTool({ name: ITEMS, arguments: { sql: 'SELECT id FROM items ORDER BY id' } })) as CallResult;
    expect(rows.structuredContent).toMatchObject({ rowCount: 3 });
    expect(seen[0]!.method).toBe('initialize');
    expect(seen.every((s) => s.mcpMethod === null && s.sessionId === null)).toBe(true);
  });
});

describe.skipIf(!available)('MCP 2026-07-28 on the wire', () => {
  test('server/discover and tools/list answer resultType, the cache hints and the server identity', async () => {
    verifies('MCP-2026-CACHE', 'RPC-ENVELOPE');
    const discover = await post('server/discover', { _meta: envelope() }, modernHeaders('server/discover'));
    expect(discover.status).toBe(200);
    expect(rpcValidators.DiscoverResult(discover.body.result)).toBe(true);
    expect(discover.body.result).toMatchObject({ resultType: 'complete', supportedVersions: [REVISION], cacheScope: 'private' });
    expect(discover.body.result._meta['io.modelcontextprotocol/serverInfo'].name).toBe('toolgate');
    const list = await post('tools/list', { _meta: envelope() }, modernHeaders('tools/list'));
    expect(rpcValidators.CacheableToolsListResult(list.body.result)).toBe(true);
    expect(list.body.result).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'private' });
    const call = await post('tools/call', callParams(ITEMS), modernHeaders('tools/call', { 'mcp-name': ITEMS }));
    expect(call.body.result.resultType).toBe('complete');
    expect(rpcValidators.ToolsCallResult(call.body.result)).toBe(true);
    // The 2025 answers are unchanged: no resultType, no cache hints.
    const legacy = await post('tools/list', {}, { 'mcp-protocol-version': '2025-11-25' });
    expect(Object.keys(legacy.body.result)).toEqual(['tools']);
  });

  test('a header that disagrees with the body, or a required one missing, is HTTP 400 -32020 and the call is not run', async () => {
    verifies('MCP-2026-HEADERS');
    const before = await toolCallsAudited();
    const name = { 'mcp-name': ITEMS };
    const cases: [string, Record<string, unknown>, Record<string, string>, string][] = [
      ['tools/call', callParams(ITEMS), modernHeaders('tools/list', name), 'tools/list'],
      ['tools/call', callParams(ITEMS), modernHeaders('tools/call', { 'mcp-name': 'query_postgresql_notes' }), 'query_postgresql_notes'],
      ['tools/call', callParams(ITEMS), modernHeaders('tools/call'), '(missing)'],
      ['tools/call', callParams(ITEMS), { 'mcp-method': 'tools/call', ...name }, '(missing)'],
      ['tools/call', callParams(ITEMS), { 'mcp-protocol-version': REVISION, ...name }, '(missing)'],
      ['tools/call', callParams(ITEMS), modernHeaders('tools/call', { 'mcp-name': '=?base64?not base64?=' }), '=?base64?not base64?='],
      ['tools/list', { _meta: envelope() }, modernHeaders('tools/list', { 'mcp-protocol-version': '2025-11-25' }), '2025-11-25'],
      ['initialize', { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'x', version: '1' } }, modernHeaders('initialize'), REVISION],
    ];
    for (const [method, params, headers, header] of cases) {
      const error = expectError(await post(method, params, headers), 400, -32020);
      expect(rpcValidators.HeaderMismatchData(error.data)).toBe(true);
      expect(error.data.mismatch.header).toBe(header);
    }
    // The name Base64-wrapped (as clients send a non-ASCII one) is the same name; it is the only call that ran.
    const wrapped = `=?base64?${btoa(ITEMS)}?=`;
    expect((await post('tools/call', callParams(ITEMS), modernHeaders('tools/call', { 'mcp-name': wrapped }))).body.result.resultType).toBe('complete');
    expect(await toolCallsAudited()).toBe(before + 1);
    // A 2026 notification whose Mcp-Method disagrees is refused too; one that agrees is 202.
    const note = (m: string) => rpcRaw(g, org.slug, key, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} }), modernHeaders(m));
    expect((await note('tools/call')).status).toBe(400);
    expect((await note('notifications/cancelled')).status).toBe(202);
  });

  test('the envelope: missing or malformed is -32602, an unsupported revision -32022, a 2025 request keeps its rules', async () => {
    verifies('MCP-2026-ENVELOPE', 'MCP-VERSION-HEADER', 'RPC-BATCH');
    expect(expectError(await post('tools/list', {}, modernHeaders('tools/list')), 400, -32602).message).toContain('_meta');
    const { 'io.modelcontextprotocol/clientCapabilities': _, ...noCapabilities } = envelope();
    expect(expectError(await post('tools/list', { _meta: noCapabilities }, modernHeaders('tools/list')), 400, -32602).message).toContain('clientCapabilities');
    // A later revision in the header (and body): -32022 naming the supported ones, before anything else is read.
    const later = expectError(
      await post('tools/list', { _meta: envelope('2099-01-01') }, { ...modernHeaders('tools/list'), 'mcp-protocol-version': '2099-01-01' }),
      400,
      -32022,
    );
    expect(rpcValidators.UnsupportedProtocolVersionData(later.data)).toBe(true);
    expect(later.data).toEqual({ supported: [REVISION, '2025-11-25', '2025-06-18', '2025-03-26'], requested: '2099-01-01' });
    // ... and in the body only.
    expect(expectError(await post('tools/list', { _meta: envelope('2099-01-01') }, { 'mcp-method': 'tools/list' }), 400, -32022).data.requested).toBe(
      '2099-01-01',
    );
    // The revision removed initialize and ping: a 2026 request for them is -32601 (in a 200).
    expect(expectError(await post('ping', { _meta: envelope() }, modernHeaders('ping')), 200, -32601).message).toContain('server/discover');
    const init = { _meta: envelope(), protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'x', version: '1' } };
    expectError(await post('initialize', init, modernHeaders('initialize')), 200, -32601);
    // initialize without an envelope naming 2026-07-28 gets the latest 2025 revision, as a 2025 server answers.
    const legacyInit = await post('initialize', { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'x', version: '1' } }, {});
    expect(legacyInit.body.result.protocolVersion).toBe('2025-11-25');
    // A batch holding a 2026 request is refused whole, even under 2025-03-26.
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope() } },
    ];
    expectError(await rpcRaw(g, org.slug, key, JSON.stringify(batch)), 400, -32600);
    // 2025 traffic: an unknown old revision keeps its 400; _meta without a version claim is no 2026 request.
    expect((await post('ping', {}, { 'mcp-protocol-version': '1999-01-01' })).body.error).toBe('unsupported_protocol_version');
    const progress = await post('tools/list', { _meta: { progressToken: 7 } }, { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'ignored' });
    expect(progress.status).toBe(200);
    expect(progress.body.result.resultType).toBeUndefined();
  });
});
