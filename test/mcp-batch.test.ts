// JSON-RPC batches under MCP 2025-03-26 (the revision that requires them; src/mcp/batch.ts): answered
// message by message, each through the burst limits and the method table as if sent alone; refused from 2025-06-18
// on (test/mcp-endpoint.test.ts, RPC-BATCH).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as rpcValidators from '../generated/validators/jsonrpc.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector, rpcRaw, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
const NOTES = 'query_postgresql_notes';

let g: TestGateway;
let t: Targets;
let org: Onboarded;
let key: Credential;
let slow: Onboarded; // burst limit 3 per second

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_LOG_LEVEL: 'error' }), createTargets('tg_batch', 'pg')]);
  [org, slow] = await Promise.all([onboard(g), onboard(g, `batch-slow-${Date.now().toString(36)}`, 'enterprise', 3)]);
  key = { apiKey: org.apiKey };
  for (const o of [org, slow]) {
    const connector = await createConnector(g, await tokenFor(g, o.clientId, o.clientSecret), {
      name: 'pg',
      type: 'postgresql',
      config: t.pgConfig,
      allow_write: true,
    });
    expect(connector.status).toBe('active');
  }
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
}, 60_000);

const insert = (id: number, rpcId: number | string = id) => ({
  jsonrpc: '2.0',
  id: rpcId,
  method: 'tools/call',
  params: { name: NOTES, arguments: { sql: `INSERT INTO notes VALUES (${id}, 'batch')` } },
});
const noteIds = async () => (await t.pg('SELECT id FROM notes ORDER BY id')).map((r) => r.id as number);
const post = (messages: unknown, headers: Record<string, string> = {}, credential: Credential = key, slug = org.slug) =>
  rpcRaw(g, slug, credential, typeof messages === 'string' ? messages : JSON.stringify(messages), headers);

describe.skipIf(!available)('batches under MCP 2025-03-26', () => {
  test('without the header (2025-03-26) and with it: one response per request, in order, each run as if alone', async () => {
    verifies('RPC-BATCH-2025-03-26');
    await t.pg('DELETE FROM notes');
    for (const [headers, base] of [
      [{}, 100],
      [{ 'mcp-protocol-version': '2025-03-26' }, 200],
    ] as const) {
      const answer = await post(
        [
          insert(base, 'a'),
          { jsonrpc: '2.0', method: 'notifications/initialized' },
          { jsonrpc: '2.0', id: 7, method: 'ping' },
          { jsonrpc: '2.0', id: 'list', method: 'tools/list', params: {} },
          insert(base + 1, 'b'),
        ],
        headers,
      );
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toContain('application/json');
      expect(Array.isArray(answer.body)).toBe(true);
      expect(answer.body.map((r: { id: unknown }) => r.id)).toEqual(['a', 7, 'list', 'b']);
      for (const response of answer.body) expect(rpcValidators.JsonRpcResponse(response)).toBe(true);
      expect(answer.body[0].result.structuredContent.rowCount).toBe(1);
      expect(answer.body[1].result).toEqual({});
      expect(answer.body[2].result.tools.map((x: { name: string }) => x.name)).toContain(NOTES);
      expect(answer.body[3].result.structuredContent.rowCount).toBe(1);
    }
    expect(await noteIds()).toEqual([100, 101, 200, 201]);
  });

  test('each message keeps its own errors: invalid ones, unknown methods and tools, and initialize (not allowed in a batch)', async () => {
    await t.pg('DELETE FROM notes');
    const answer = await post([
      { jsonrpc: '1.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { jsonrpc: '2.0', id: 3, method: 'sampling/createMessage' }, // resources/list is served now (decision 0314)
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } },
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: NOTES, arguments: { sql: 'DROP TABLE notes' } } },
      insert(300, 6),
    ]);
    expect(answer.status).toBe(200);
    const [invalid, init, unknown, noTool, refused, ok] = answer.body;
    expect(invalid).toMatchObject({ id: 1, error: { code: -32600 } });
    expect(init).toMatchObject({ id: 2, error: { code: -32600, message: 'Invalid Request: initialize must not be part of a JSON-RPC batch.' } });
    expect(unknown).toMatchObject({ id: 3, error: { code: -32601 } });
    expect(noTool).toMatchObject({ id: 4, error: { code: -32602 } });
    expect(refused).toMatchObject({ id: 5, result: { isError: true } });
    expect(ok).toMatchObject({ id: 6, result: { structuredContent: { rowCount: 1 } } });
    expect(await noteIds()).toEqual([300]);
    expect((await t.pg("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'notes'"))[0]!.n).toBe(1);
  });

  test('only notifications and responses: 202 with an empty body', async () => {
    const answer = await post([
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 9, result: {} },
    ]);
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');
  });

  test('an empty batch and one over 20 messages are -32600 (HTTP 400), and nothing in them runs', async () => {
    await t.pg('DELETE FROM notes');
    const empty = await post('[]');
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: an empty batch.' } });
    const big = await post(Array.from({ length: 21 }, (_, i) => insert(400 + i)));
    expect(big.status).toBe(400);
    expect(big.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: a batch holds at most 20 messages.' } });
    expect(await noteIds()).toEqual([]);
    const twenty = await post(Array.from({ length: 20 }, (_, i) => insert(500 + i)));
    expect(twenty.status).toBe(200);
    expect(twenty.body).toHaveLength(20);
    expect(await noteIds()).toHaveLength(20);
  });

  test('every message counts against the burst limit: a batch over it is 429 and runs nothing', async () => {
    await t.pg('DELETE FROM notes');
    const slowKey = { apiKey: slow.apiKey };
    await Bun.sleep(1100); // a fresh one-second window
    const over = await post([insert(600), insert(601), insert(602), insert(603)], {}, slowKey, slow.slug);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    expect(await noteIds()).toEqual([]);
    await Bun.sleep(1100);
    const within = await post([insert(610), insert(611), insert(612)], {}, slowKey, slow.slug);
    expect(within.status).toBe(200);
    expect(await noteIds()).toEqual([610, 611, 612]);
  });
});
