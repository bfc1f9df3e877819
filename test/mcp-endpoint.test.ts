// POST /mcp/{orgSlug} on a real gateway with a real PostgreSQL connector: every JSON-RPC error of the spec, the
// transport checks of the security checklist ("Protocol"), hostile bodies, and golden responses.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as rpcValidators from '../generated/validators/jsonrpc.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { sdkFor } from './support/sdk.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, listToolNames, rpc, rpcRaw, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, deadPort, tcpProxy, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
const FIXTURES = join(import.meta.dir, 'fixtures', 'mcp');
const ITEMS = 'query_postgresql_items';
const NOTES = 'query_postgresql_notes';
const SECRET = 'S3cretPass!';

let g: TestGateway; // default body cap (1 MiB)
let small: TestGateway; // TOOLGATE_MAX_BODY_BYTES=65536
let org: Onboarded;
let other: Onboarded;
let smallOrg: Onboarded;
let token: string;
let key: Credential;
let t: Targets;
let writable: { id: string };
let down: { id: string; status: string; status_reason: string };

beforeAll(async () => {
  if (!available) return;
  // 127.0.0.1 as a whole: the 'pg down' connector aims at a dead port there, which must fail as unreachable, not be refused.
  [g, small, t] = await Promise.all([
    startTestGateway('pglite', { TOOLGATE_LOG_LEVEL: 'error', TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }),
    startTestGateway('pglite', { TOOLGATE_MAX_BODY_BYTES: '65536' }),
    createTargets('tg_mcp', 'pg'),
  ]);
  [org, other, smallOrg] = await Promise.all([onboard(g), onboard(g), onboard(small)]);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
  await t.pg('CREATE SCHEMA solo; CREATE TABLE solo.widgets (id integer PRIMARY KEY, label text NOT NULL)');
  writable = await createConnector(g, token, { name: 'pg main', type: 'postgresql', config: t.pgConfig, allow_write: true });
  expect((writable as { status?: string }).status).toBe('active');
  down = await createConnector(g, token, { name: 'pg down', type: 'postgresql', config: { ...t.pgConfig, port: await deadPort() }, credential: SECRET });
}, 120_000);
afterAll(async () => {
  await g?.close();
  await small?.close();
  await t?.drop();
}, 60_000);

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
const noteCount = async () => Number((await t.pg('SELECT count(*)::int AS n FROM notes'))[0]!.n);
const toolResult = (answer: { status: number; body: any }) => {
  expect(answer.status).toBe(200);
  expect(rpcValidators.ToolsCallResult(answer.body.result)).toBe(true);
  return answer.body.result as { isError?: boolean; content: { text: string }[]; structuredContent?: Record<string, any> };
};

describe.skipIf(!available)('JSON-RPC envelope errors', () => {
  test('malformed JSON: HTTP 400, -32700, id null', async () => {
    verifies('RPC-32700');
    for (const body of ['{"jsonrpc":"2.0","id":1,', "{'jsonrpc':'2.0'}", '', 'nul']) {
      const answer = await rpcRaw(g, org.slug, key, body);
      expect(expectRpcError(answer, -32700, 'Parse error', 400)).toBeTruthy();
      expect(answer.body.id).toBeNull();
    }
  });

  test('a valid JSON value that is not a request: -32600 with id null', async () => {
    verifies('RPC-32600');
    const odd = ['{"jsonrpc":"2.0","id":null,"method":"ping"}', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '{"jsonrpc":"2.0","method":"ping","params":[]}'];
    // Ids that cannot be echoed exactly: Infinity (would come back as null) and integers beyond 2^53.
    const inexact = ['{"jsonrpc":"2.0","id":1e400,"method":"ping"}', '{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}'];
    for (const body of ['42', '{}', '{"jsonrpc":"2.0"}', '"ping"', 'null', 'true', '{"jsonrpc":"1.0","method":"ping"}', ...odd, ...inexact]) {
      const answer = await rpcRaw(g, org.slug, key, body);
      expectRpcError(answer, -32600, undefined, 400);
      expect(answer.body.id).toBeNull();
    }
  });

  test('batches are refused with -32600 and nothing in them runs (MCP 2025-06-18 and later; 2025-03-26: mcp-batch.test.ts)', async () => {
    verifies('RPC-BATCH');
    const before = await noteCount();
    const insert = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: NOTES, arguments: { sql: "INSERT INTO notes VALUES (90, 'batched')" } } };
    for (const body of [JSON.stringify([insert]), '[]', JSON.stringify([{ jsonrpc: '2.0', id: 2, method: 'ping' }])]) {
      for (const revision of ['2025-06-18', '2025-11-25']) {
        const answer = await rpcRaw(g, org.slug, key, body, { 'mcp-protocol-version': revision });
        expectRpcError(answer, -32600, 'Batches are not supported', 400);
        expect(answer.body.id).toBeNull();
      }
      const answer = await rpcRaw(g, org.slug, key, body, { 'mcp-protocol-version': '2025-06-18' });
      expect(answer.body.id).toBeNull();
    }
    expect(await noteCount()).toBe(before);
  });

  test('a notification: HTTP 202 with an empty body', async () => {
    verifies('RPC-NOTIFY-202');
    const answer = await rpcRaw(g, org.slug, key, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');
  });

  test('an unknown method: -32601 with the request id echoed', async () => {
    verifies('RPC-32601', 'RPC-ENVELOPE');
    const answer = await rpcRaw(g, org.slug, key, JSON.stringify({ jsonrpc: '2.0', id: 'abc', method: 'sampling/createMessage', params: {} }));
    expectRpcError(answer, -32601, 'sampling/createMessage');
    expect(answer.body.id).toBe('abc');
  });

  test('ping answers {}', async () => {
    const answer = await rpc(g, org.slug, key, 'ping');
    expect(answer.status).toBe(200);
    expect(answer.body.result).toEqual({});
  });

  test('initialize negotiates the protocol revision', async () => {
    verifies('MCP-INIT-NEGOTIATE');
    const init = (protocolVersion: string) =>
      rpc(g, org.slug, key, 'initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 'test', version: '1' } });
    for (const [asked, got] of [
      ['2025-06-18', '2025-06-18'],
      ['2025-03-26', '2025-03-26'],
      ['2025-11-25', '2025-11-25'],
      ['2099-01-01', '2025-11-25'],
      ['garbage', '2025-11-25'],
    ]) {
      const answer = await init(asked!);
      expect(answer.status).toBe(200);
      expect(rpcValidators.InitializeResult(answer.body.result)).toBe(true);
      expect(answer.body.result.protocolVersion).toBe(got);
    }
    expectRpcError(await rpc(g, org.slug, key, 'initialize', { capabilities: {} }), -32602, 'protocolVersion');
  });
});

describe.skipIf(!available)('tools/call argument and scope errors', () => {
  test('an unknown tool: -32602', async () => {
    verifies('RPC-32602-UNKNOWN-TOOL');
    expectRpcError(await callTool(g, org.slug, key, 'query_postgresql_nope', { sql: 'SELECT 1' }), -32602, 'Unknown tool');
  });

  test('arguments that do not match the inputSchema: -32602 naming the field', async () => {
    verifies('RPC-32602', 'SQL-LIMIT-ARG');
    expectRpcError(await callTool(g, org.slug, key, ITEMS, {}), -32602, 'arguments.sql is required');
    expectRpcError(await callTool(g, org.slug, key, ITEMS, { sql: 'SELECT * FROM items', limit: 5000 }), -32602, 'arguments.limit');
    expectRpcError(await callTool(g, org.slug, key, ITEMS, { sql: 42 }), -32602, 'arguments.sql');
    expectRpcError(await callTool(g, org.slug, key, ITEMS, { sql: 'SELECT * FROM items', limit: '10' }), -32602, 'arguments.limit');
    expectRpcError(await callTool(g, org.slug, key, ITEMS, { sql: 'SELECT * FROM items', verbose: true }), -32602, 'arguments.verbose');
    expectRpcError(await rpc(g, org.slug, key, 'tools/call', { arguments: {} }), -32602, 'params.name is required');
  });

  test('a tool outside the credential scope: -32003', async () => {
    verifies('RPC-32003', 'TOOLS-SCOPE-FILTER', 'AUTH-APIKEY-CONNECTORS');
    const created = await sdk.createApiKey({ client: sdkFor(g, token).client, throwOnError: true, body: { name: 'only-down', connector_ids: [down.id] } });
    expect(created.response.status).toBe(201);
    const scoped = { apiKey: created.data.key };
    expect(await listToolNames(g, org.slug, scoped)).toEqual(['check_approval_status']);
    expectRpcError(await callTool(g, org.slug, scoped, ITEMS, { sql: 'SELECT * FROM items' }), -32003, ITEMS);
  });

  test('__proto__ and constructor keys: -32602 and no prototype pollution', async () => {
    verifies('HOSTILE-BODIES-PROTO');
    for (const extra of ['"__proto__":{"polluted":"yes"}', '"constructor":{"prototype":{"polluted":"yes"}}']) {
      const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${ITEMS}","arguments":{"sql":"SELECT * FROM items",${extra}}}}`;
      const answer = await rpcRaw(g, org.slug, key, body);
      expectRpcError(answer, -32602, /__proto__|constructor/);
    }
    const params = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"__proto__":{"polluted":"yes"}}}`;
    expect((await rpcRaw(g, org.slug, key, params)).status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });

  test('check_approval_status with an unknown id: status not_found', async () => {
    verifies('MCP-CHECK-APPROVAL-STATUS');
    const result = toolResult(await callTool(g, org.slug, key, 'check_approval_status', { approvalId: 'nope-123' }));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ status: 'not_found', approvalId: 'nope-123' });
    expectRpcError(await callTool(g, org.slug, key, 'check_approval_status', {}), -32602, 'params.arguments.approvalId is required');
    expectRpcError(await callTool(g, org.slug, key, 'check_approval_status', { approvalId: 'x', extra: 1 }), -32602, 'params.arguments.extra');
  });
});

describe.skipIf(!available)('transport checks', () => {
  const insert = (id: number, headers: Record<string, string>) =>
    callTool(g, org.slug, key, NOTES, { sql: `INSERT INTO notes VALUES (${id}, 'origin test')` }, headers);

  test('a foreign Origin or Origin: null is 403 and executes nothing; no Origin and our own origin pass', async () => {
    verifies('MCP-ORIGIN');
    const before = await noteCount();
    for (const origin of ['http://evil.example', 'null', 'http://gateway.test.evil.example', 'https://gateway.test', 'http://gateway.test:8080']) {
      const answer = await insert(100, { origin });
      expect(answer.status).toBe(403);
      expect(answer.body.error).toBe('forbidden_origin');
    }
    expect(await noteCount()).toBe(before);
    // The same call is a real write without Origin, and with the gateway's own origin.
    expect(toolResult(await insert(100, {})).structuredContent?.rowCount).toBe(1);
    expect(toolResult(await insert(101, { origin: 'http://gateway.test' })).structuredContent?.rowCount).toBe(1);
    expect(await noteCount()).toBe(before + 2);
    await t.pg('DELETE FROM notes WHERE id >= 100');
  });

  test('MCP-Protocol-Version: unsupported is 400; absent and supported values pass', async () => {
    verifies('MCP-VERSION-HEADER');
    const bad = await rpc(g, org.slug, key, 'ping', undefined, { 'mcp-protocol-version': '1999-01-01' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('unsupported_protocol_version');
    expect((await rpc(g, org.slug, key, 'ping')).status).toBe(200);
    for (const v of ['2025-06-18', '2025-03-26', '2025-11-25'])
      expect((await rpc(g, org.slug, key, 'ping', undefined, { 'mcp-protocol-version': v })).status).toBe(200);
  });

  test('GET and DELETE on the endpoint: 405; a wrong Content-Type: 415', async () => {
    verifies('MCP-405', 'HTTP-CONTENT-TYPE-415');
    for (const method of ['GET', 'DELETE']) {
      const answer = await rpcRaw(g, org.slug, key, null, {}, method);
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('POST');
    }
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
      const answer = await rpcRaw(g, org.slug, key, ping, { 'content-type': type });
      expect(answer.status).toBe(415);
      expect(answer.body.error).toBe('unsupported_media_type');
    }
    expect((await rpcRaw(g, org.slug, key, ping, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
  });

  test('an unknown slug and another org credential get identical 401 bodies', async () => {
    verifies('AUTH-SLUG-ENUM', 'AUTH-CROSS-ORG');
    const otherToken = await tokenFor(g, other.clientId, other.clientSecret, 'mcp:call');
    const pairs: [Credential, Credential][] = [
      [{ apiKey: other.apiKey }, { apiKey: other.apiKey }],
      [{ apiKey: `tg_${'x'.repeat(40)}` }, { apiKey: `tg_${'x'.repeat(40)}` }],
      [{ token: otherToken }, { token: otherToken }],
      [null, null],
    ];
    for (const [atOrg, atNowhere] of pairs) {
      const known = await rpc(g, org.slug, atOrg, 'tools/list', {});
      const unknown = await rpc(g, 'no-such-org-slug', atNowhere, 'tools/list', {});
      expect(known.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(unknown.text).toBe(known.text);
      // The challenge names the resource metadata of the URL asked for (its own slug), and differs in nothing else.
      const challenge = (r: typeof known, slug: string) => r.headers.get('www-authenticate')!.replace(`/mcp/${slug}"`, '/mcp/SLUG"');
      expect(challenge(unknown, 'no-such-org-slug')).toBe(challenge(known, org.slug));
    }
  });
});

describe.skipIf(!available)('hostile bodies', () => {
  test('100,000-deep nesting: 400 -32700, and the next request works', async () => {
    verifies('HOSTILE-BODIES-NESTING');
    for (const body of [
      '['.repeat(100_000) + ']'.repeat(100_000),
      `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}}`,
    ]) {
      const answer = await rpcRaw(g, org.slug, key, body);
      expectRpcError(answer, -32700, 'nested too deeply', 400);
      expect(answer.body.id).toBeNull();
    }
    expect((await rpc(g, org.slug, key, 'ping')).body.result).toEqual({});
  });

  test('a body larger than TOOLGATE_MAX_BODY_BYTES: 413, and the next request works', async () => {
    verifies('HOSTILE-BODIES-SIZE');
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: ITEMS, arguments: { sql: 'SELECT 1', x: 'a'.repeat(3_000_000) } },
    });
    const smallKey = { apiKey: smallOrg.apiKey };
    const answer = await rpcRaw(small, smallOrg.slug, smallKey, huge);
    expect(answer.status).toBe(413);
    expect(answer.body.error).toBe('payload_too_large');
    // Streamed without Content-Length: the cap applies while reading.
    const stream = new Blob([huge]).stream();
    const streamed = await rpcRaw(small, smallOrg.slug, smallKey, stream as unknown as BodyInit);
    expect(streamed.status).toBe(413);
    expect((await rpcRaw(g, org.slug, key, huge)).status).toBe(413);
    expect((await rpc(small, smallOrg.slug, smallKey, 'ping')).body.result).toEqual({});
  });

  test('invalid UTF-8: 400 -32700', async () => {
    verifies('HOSTILE-BODIES-UTF8');
    for (const body of [
      bytes('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"', [0xff, 0xfe], '"}}'),
      bytes([0xc3, 0x28]),
      bytes('{"a":"', [0xed, 0xa0, 0x80], '"}'),
    ]) {
      const answer = await rpcRaw(g, org.slug, key, body);
      expectRpcError(answer, -32700, 'UTF-8', 400);
      expect(answer.body.id).toBeNull();
    }
  });
});

describe.skipIf(!available)('tool failures are results with isError', () => {
  test('guard refusals: stacked statements, writes to another table, a table outside the connector', async () => {
    verifies('RPC-TOOL-ERROR-RESULT', 'SQL-STACKED', 'SQL-OTHER-TABLE');
    // Reading the connector's other tables is allowed since issue 38 (decision 0292); reaching outside them is not.
    for (const sql of ['SELECT 1; COMMIT; DROP TABLE items', 'DROP TABLE items', 'DELETE FROM notes', 'SELECT * FROM information_schema.tables']) {
      const result = toolResult(await callTool(g, org.slug, key, ITEMS, { sql }));
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text.length).toBeGreaterThan(10);
    }
    expect((await t.pg('SELECT count(*)::int AS n FROM items'))[0]!.n).toBe(3);
  });

  test('a database error names the problem', async () => {
    verifies('RPC-TOOL-ERROR-RESULT');
    const result = toolResult(await callTool(g, org.slug, key, ITEMS, { sql: 'SELECT no_such_column FROM items' }));
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toContain('no_such_column');
    expect(result.content[0]!.text).toContain('does not exist');
  });

  test('a database that cannot be reached: the connector fails with a reason free of the password', async () => {
    verifies('CONN-CREDENTIAL-HIDDEN');
    expect(down.status).toBe('failed');
    expect(down.status_reason).toMatch(/could not connect to 127\.0\.0\.1:\d+: connection refused/);
    expect(JSON.stringify(down)).not.toContain(SECRET);
    const listed = JSON.stringify((await sdk.listConnectors({ client: sdkFor(g, token).client, throwOnError: true })).data);
    expect(listed).not.toContain(SECRET);
  });

  test('a database that goes down after validation: the call is isError with a clear text', async () => {
    verifies('RPC-TOOL-ERROR-RESULT');
    const proxy = await tcpProxy(t.pgConfig.host, t.pgConfig.port);
    const via = await createConnector(g, token, {
      name: 'pg via proxy',
      type: 'postgresql',
      config: { ...t.pgConfig, port: proxy.port, schemas: ['solo'] },
      credential: SECRET,
    });
    expect(via.status).toBe('active');
    const widgets = 'query_postgresql_widgets';
    expect(toolResult(await callTool(g, org.slug, key, widgets, { sql: 'SELECT * FROM widgets' })).isError).toBeFalsy();
    await proxy.close();
    const result = toolResult(await callTool(g, org.slug, key, widgets, { sql: 'SELECT * FROM widgets' }));
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(/unavailable|closed|connection refused/);
    expect(result.content[0]!.text).not.toContain(SECRET);
    expect((await sdk.archiveConnector({ client: sdkFor(g, token).client, path: { connectorId: via.id } })).response.status).toBe(200);
  });
});

describe.skipIf(!available)('golden responses', () => {
  // `npm run fixtures:update` (UPDATE_FIXTURES=1) rewrites test/fixtures/mcp/*.json from the live gateway; otherwise a
  // missing fixture fails the test rather than being written and then compared with itself.
  const golden = (name: string, live: unknown, validator: (data: unknown) => boolean) => {
    const file = join(FIXTURES, name);
    const normalised = JSON.parse(JSON.stringify(live).replaceAll(org.slug, '<slug>'));
    if (process.env.UPDATE_FIXTURES) {
      mkdirSync(FIXTURES, { recursive: true });
      writeFileSync(file, `${JSON.stringify(normalised, null, 2)}\n`);
    }
    if (!existsSync(file)) throw new Error(`golden fixture ${name} is missing: run \`npm run fixtures:update\` and review the diff`);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    expect(rpcValidators.JsonRpcResponse(saved)).toBe(true);
    expect(validator(saved.result ?? saved.error)).toBe(true);
    expect(normalised).toEqual(saved);
  };
  const isError = (e: unknown) => rpcValidators.JsonRpcErrorObject(e);

  test('initialize, tools/list with one tool, tools/call and errors match the saved fixtures', async () => {
    verifies('RPC-ENVELOPE', 'MCP-TOOL-DESCRIPTOR', 'MCP-DB-RESULT');
    const admin = sdkFor(g, token).client;
    const created = await sdk.createApiKey({ client: admin, throwOnError: true, body: { name: 'solo', connector_ids: [writable.id] } });
    const scoped = { apiKey: created.data.key };
    const init = await rpcRaw(
      g,
      org.slug,
      key,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'golden', version: '1.0.0' } },
      }),
    );
    golden('initialize.json', init.body, rpcValidators.InitializeResult);
    // The down connector has no tools: a key scoped to it sees exactly one tool, the built-in one.
    const downKey = await sdk.createApiKey({ client: admin, throwOnError: true, body: { name: 'down', connector_ids: [down.id] } });
    const one = await rpcRaw(g, org.slug, { apiKey: downKey.data.key }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }));
    golden('tools-list-one.json', one.body, rpcValidators.ToolsListResult);
    const list = await rpcRaw(g, org.slug, scoped, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }));
    golden('tools-list.json', list.body, rpcValidators.ToolsListResult);
    const call = await rpcRaw(
      g,
      org.slug,
      scoped,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: ITEMS, arguments: { sql: 'SELECT id, name FROM items ORDER BY id', limit: 2 } },
      }),
    );
    golden('tools-call.json', call.body, rpcValidators.ToolsCallResult);
    const failed = await rpcRaw(
      g,
      org.slug,
      scoped,
      JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: ITEMS, arguments: { sql: 'DELETE FROM notes' } } }),
    );
    golden('tools-call-refused.json', failed.body, rpcValidators.ToolsCallResult);
    golden('error-method-not-found.json', (await rpcRaw(g, org.slug, key, '{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage"}')).body, isError);
    golden(
      'error-invalid-params.json',
      (await rpcRaw(g, org.slug, key, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${ITEMS}","arguments":{}}}`)).body,
      isError,
    );
    golden('error-parse.json', (await rpcRaw(g, org.slug, key, '{')).body, isError);
  });
});
