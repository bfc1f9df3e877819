// The contract holds the code: every operation has exactly one handler (or the app refuses to start), every
// operation declares its access policy, generated files say so, and the JSON-RPC golden messages validate
// against the compiled validators and match what the live endpoint says.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { operations } from '../generated/operations.ts';
import * as rpc from '../generated/validators/jsonrpc.ts';
import { buildApp } from '../src/app.ts';
import { RpcCode } from '../src/errors.ts';
import { handlers } from '../src/handlers/index.ts';
import type { Handler } from '../src/handlers/context.ts';
import { checkHandlerTable } from '../src/http/router.ts';
import { classify } from '../src/mcp/protocol.ts';
import { verifies } from './requirements.ts';
import { BASE, onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';

/** Hooks default to 5 s in bun whatever bunfig says; starting PGlite under load can take longer. */
const HOOK_TIMEOUT_MS = 60_000;

const ROOT = join(import.meta.dir, '..');
const FIXTURES = join(import.meta.dir, 'fixtures', 'jsonrpc');
type Validator = ((data: unknown) => boolean) & { errors?: unknown[] | null };
const validators = rpc as unknown as Record<string, Validator>;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}
const fixture = (name: string): unknown => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));

function isValid(def: string, value: unknown): boolean {
  const validate = validators[def];
  if (!validate) throw new Error(`no compiled validator ${def}`);
  return validate(value);
}

let g: TestGateway;
let org: Onboarded;
beforeAll(async () => {
  g = await startTestGateway('pglite');
  org = await onboard(g, 'acme');
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
}, HOOK_TIMEOUT_MS);

describe('handler table', () => {
  const without = (id: string) => Object.fromEntries(Object.entries(handlers).filter(([k]) => k !== id)) as Record<string, Handler>;
  const noop: Handler = () => new Response(null);

  test('the real table matches the operations exactly', () => {
    expect(() => checkHandlerTable(operations, handlers)).not.toThrow();
    expect(Object.keys(handlers).sort()).toEqual(operations.map((o) => o.operationId).sort());
  });

  test('a missing handler, an extra handler, or a non-function is refused, naming it', () => {
    expect(() => checkHandlerTable(operations, without('getHealth'))).toThrow(/no handler for getHealth/);
    expect(() => checkHandlerTable(operations, { ...handlers, deleteEverything: noop })).toThrow(/no operation for deleteEverything/);
    expect(() => checkHandlerTable(operations, { ...without('issueToken'), deleteEverything: noop })).toThrow(
      /no handler for issueToken; no operation for deleteEverything/,
    );
    expect(() => checkHandlerTable(operations, { ...handlers, getOrg: 'nope' as unknown as Handler })).toThrow(/no handler for getOrg/);
    expect(() => checkHandlerTable(operations, {})).toThrow(/no handler for/);
  });

  test('the app refuses to start with a handler missing, and starts with the real table', async () => {
    expect(() => buildApp(g.deps, without('createOrg') as never)).toThrow(/no handler for createOrg/);
    expect(() => buildApp(g.deps, { ...handlers, extra: noop } as never)).toThrow(/no operation for extra/);
    const app = buildApp(g.deps);
    expect((await app.handle(new Request(`${BASE}/healthz`))).status).toBe(200);
  });
});

describe('operations', () => {
  const POLICIES = ['public', 'operator', 'mcp', 'console', 'contributor', 'admin', 'finance'];

  test('every operation has an auth policy, and it is the one openapi.yaml declares', () => {
    verifies('REST-ROLES-MATRIX');
    const doc = parseYaml(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const declared = new Map<string, unknown>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (typeof op === 'object' && op && 'operationId' in op)
          declared.set(String(op.operationId), { auth: op['x-toolgate-auth'], path, method: method.toUpperCase() });
      }
    }
    expect(operations.length).toBeGreaterThan(0);
    expect(declared.size).toBe(operations.length);
    for (const op of operations) {
      expect(POLICIES).toContain(op.auth);
      expect(declared.get(op.operationId)).toEqual({ auth: op.auth, path: op.path, method: op.method });
    }
  });

  test('only the token endpoint, metadata and the explorer are public; only onboarding and /metrics are operator-only', () => {
    verifies('REST-ROLES-MATRIX');
    const publicOps = operations.filter((o) => o.auth === 'public');
    for (const op of publicOps) expect(op.path === '/oauth/token' || !op.path.startsWith('/api/')).toBe(true);
    for (const op of operations.filter((o) => o.path.startsWith('/api/'))) expect(['contributor', 'admin', 'finance']).toContain(op.auth);
    // /metrics keeps the path scrapers expect; it is guarded by the operator token (docs/decisions/0120-metrics-behind-operator-token.md).
    expect(operations.filter((o) => o.auth === 'operator').every((o) => o.path.startsWith('/operator/') || o.path === '/metrics')).toBe(true);
    expect(operations.find((o) => o.path === '/mcp/{orgSlug}')?.auth).toBe('mcp');
  });

  // A member's own passkeys (tag passkeys, decision 0380) have the console's policy too: the session is their only
  // credential; the tag keeps them in the generated client.
  test("the console's routes are the contract's operations tagged console or passkeys, and only they have its policy", () => {
    const doc = parseYaml(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as {
      paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
    };
    const tagged = Object.values(doc.paths)
      .flatMap((item) => Object.values(item))
      .filter((op) => op.tags?.includes('console') || op.tags?.includes('passkeys'))
      .map((op) => op.operationId);
    expect(operations.filter((o) => o.auth === 'console').map((o) => o.operationId)).toEqual(tagged as never);
    const routes = operations.filter((o) => o.auth === 'console').map((o) => `${o.method} ${o.path}`);
    for (const route of [
      'GET /',
      'GET /console',
      'GET /console/assets/{asset}',
      'GET /console/session',
      'POST /console/auth/client',
      'POST /console/auth/logout',
      'GET /console/auth/idp',
      'GET /console/auth/callback',
    ])
      expect(routes).toContain(route);
  });

  test('every generated source file starts with a DO NOT EDIT line', () => {
    const files = walk(join(ROOT, 'generated')).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const first = readFileSync(file, 'utf8').split('\n', 1)[0]!;
      if (!first.startsWith('// DO NOT EDIT')) throw new Error(`${relative(ROOT, file)} starts with "${first.slice(0, 60)}"`);
    }
  });
});

/** What each golden message is: the envelope validators it passes and the payload validator of its params or result. */
const GOLDEN: Record<string, { kind: 'request' | 'notification' | 'result' | 'error'; payload?: string; code?: number }> = {
  'initialize.request.json': { kind: 'request', payload: 'InitializeParams' },
  'initialize.result.json': { kind: 'result', payload: 'InitializeResult' },
  'tools-list.request.json': { kind: 'request', payload: 'ToolsListParams' },
  'tools-list.result.json': { kind: 'result', payload: 'ToolsListResult' },
  'tools-call.request.json': { kind: 'request', payload: 'ToolsCallParams' },
  'tools-call.result.json': { kind: 'result', payload: 'ToolsCallResult' },
  'notification.initialized.json': { kind: 'notification' },
  'error.parse-error.json': { kind: 'error', code: RpcCode.ParseError },
  'error.invalid-request.json': { kind: 'error', code: RpcCode.InvalidRequest },
  'error.method-not-found.json': { kind: 'error', code: RpcCode.MethodNotFound },
  'error.invalid-params.json': { kind: 'error', code: RpcCode.InvalidParams },
  'error.quota-exceeded.json': { kind: 'error', code: RpcCode.QuotaExceeded },
  'error.insufficient-scope.json': { kind: 'error', code: RpcCode.InsufficientScope },
  'error.rate-limited.json': { kind: 'error', code: RpcCode.RateLimited },
  // MCP 2026-07-28 (decision 0240)
  'server-discover.request.json': { kind: 'request', payload: 'DiscoverParams' },
  'server-discover.result.json': { kind: 'result', payload: 'DiscoverResult' },
  'error.header-mismatch.json': { kind: 'error', code: -32020, payload: 'HeaderMismatchData' },
  'error.unsupported-protocol-version.json': { kind: 'error', code: -32022, payload: 'UnsupportedProtocolVersionData' },
};

describe('JSON-RPC golden fixtures', () => {
  test('every fixture file is listed (none escapes validation)', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(Object.keys(GOLDEN).sort());
  });

  test.each(Object.entries(GOLDEN))('%s', (name, spec) => {
    verifies('RPC-ENVELOPE');
    const message = fixture(name) as Record<string, unknown>;
    const envelope = {
      JsonRpcRequest: spec.kind === 'request',
      JsonRpcNotification: spec.kind === 'notification',
      JsonRpcSuccess: spec.kind === 'result',
      JsonRpcErrorResponse: spec.kind === 'error',
      JsonRpcResponse: spec.kind === 'result' || spec.kind === 'error',
    };
    for (const [def, expected] of Object.entries(envelope)) {
      if (isValid(def, message) !== expected) throw new Error(`${name}: ${def} should be ${expected}: ${JSON.stringify(validators[def]!.errors)}`);
    }
    if (spec.payload) {
      const payload = spec.kind === 'request' ? message.params : spec.kind === 'error' ? (message.error as { data?: unknown }).data : message.result;
      if (!isValid(spec.payload, payload)) throw new Error(`${name}: ${spec.payload}: ${JSON.stringify(validators[spec.payload]!.errors)}`);
    }
    if (spec.kind === 'error') {
      expect((message.error as { code: number }).code).toBe(spec.code!);
      expect(isValid('JsonRpcErrorObject', message.error)).toBe(true);
    }
    if (spec.kind === 'request') expect(classify(message).kind).toBe('request');
    if (spec.kind === 'notification') expect(classify(message).kind).toBe('notification');
  });

  test('the payload validators refuse what the schema refuses', () => {
    expect(isValid('InitializeResult', { protocolVersion: '2024-11-05', capabilities: {}, serverInfo: { name: 'x', version: '1' } })).toBe(false);
    expect(isValid('ToolsListResult', { tools: [{ name: 'Bad Name', description: 'x', inputSchema: { type: 'object' } }] })).toBe(false);
    expect(isValid('ToolsCallResult', { content: [{ type: 'image', data: '' }] })).toBe(false);
    expect(isValid('ToolsCallParams', { arguments: {} })).toBe(false);
    expect(isValid('InitializeParams', { protocolVersion: '2025-06-18', capabilities: {} })).toBe(false);
  });
});

describe('invalid JSON-RPC messages', () => {
  const invalid = readdirSync(join(FIXTURES, 'invalid')).filter((f) => f.endsWith('.json'));
  const requests = invalid.filter((f) => !f.startsWith('response.'));
  const responses = invalid.filter((f) => f.startsWith('response.'));

  test('the set includes a batch, a null id, jsonrpc 1.0 and a fractional id', () => {
    expect(requests).toEqual(expect.arrayContaining(['batch.json', 'id-null.json', 'jsonrpc-1.0.json', 'fractional-id.json']));
    expect(responses.length).toBeGreaterThan(0);
  });

  test.each(requests)('%s is neither a request nor a notification, and the endpoint answers -32600', async (name) => {
    verifies('RPC-32600');
    const message = fixture(`invalid/${name}`);
    expect(isValid('JsonRpcRequest', message)).toBe(false);
    expect(isValid('JsonRpcNotification', message)).toBe(false);
    expect(classify(message).kind).toBe('invalid');
    // As a 2025-06-18 client: under 2025-03-26 batch.json is a valid batch (test/mcp-batch.test.ts).
    const res = await post(JSON.stringify(message), { 'mcp-protocol-version': '2025-06-18' });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(isValid('JsonRpcErrorResponse', body)).toBe(true);
    expect((body as { error: { code: number } }).error.code).toBe(RpcCode.InvalidRequest);
  });

  test.each(responses)('%s is not a valid response', (name) => {
    const message = fixture(`invalid/${name}`);
    expect(isValid('JsonRpcResponse', message)).toBe(false);
    expect(isValid('JsonRpcSuccess', message) || isValid('JsonRpcErrorResponse', message)).toBe(false);
  });
});

function post(body: string, headers: Record<string, string> = {}) {
  return g.handle(
    new Request(`${BASE}/mcp/${org.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.apiKey, ...headers },
      body,
    }),
  );
}
async function liveRpc(message: unknown): Promise<Record<string, any>> {
  const res = await post(JSON.stringify(message));
  const body = (await res.json()) as Record<string, any>;
  if (!isValid('JsonRpcResponse', body)) throw new Error(`live response is not a JSON-RPC response: ${JSON.stringify(body)}`);
  return body;
}

describe('the live endpoint speaks the goldens', () => {
  test('initialize', async () => {
    verifies('RPC-ENVELOPE');
    const live = await liveRpc(fixture('initialize.request.json'));
    const golden = fixture('initialize.result.json') as Record<string, any>;
    expect(isValid('InitializeResult', live.result)).toBe(true);
    expect(live.id).toBe(golden.id);
    const { instructions: _i, ...stable } = golden.result;
    expect(live.result).toMatchObject(stable);
    expect(live.result.instructions).toBeString();
  });

  test('tools/list', async () => {
    verifies('MCP-TOOL-DESCRIPTOR', 'MCP-CHECK-APPROVAL-STATUS');
    const live = await liveRpc(fixture('tools-list.request.json'));
    const golden = fixture('tools-list.result.json') as Record<string, any>;
    expect(isValid('ToolsListResult', live.result)).toBe(true);
    expect(live.id).toBe(golden.id);
    const builtIn = golden.result.tools.find((t: { name: string }) => t.name === 'check_approval_status');
    expect(live.result.tools).toContainEqual(builtIn);
  });

  test('tools/call', async () => {
    verifies('MCP-CHECK-APPROVAL-STATUS');
    const live = await liveRpc(fixture('tools-call.request.json'));
    expect(isValid('ToolsCallResult', live.result)).toBe(true);
    expect(live).toEqual(fixture('tools-call.result.json') as never);
  });

  test('error codes -32700, -32600, -32601, -32602, as the goldens', async () => {
    verifies('RPC-32700', 'RPC-32600', 'RPC-32601');
    const parse = await post('{"jsonrpc": "2.0",');
    expect(parse.status).toBe(400);
    expect(await parse.json()).toEqual(fixture('error.parse-error.json') as never);
    // Batches are refused from 2025-06-18 on (2025-03-26 answers them: test/mcp-batch.test.ts).
    const batch = await post(JSON.stringify(fixture('invalid/batch.json')), { 'mcp-protocol-version': '2025-06-18' });
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as Record<string, any>).error).toEqual((fixture('error.invalid-request.json') as any).error);
    // resources/list and prompts/list are served (decisions 0314/0315); sampling/createMessage is a client's method, not ours.
    expect(await liveRpc({ jsonrpc: '2.0', id: 7, method: 'sampling/createMessage' })).toEqual(fixture('error.method-not-found.json') as never);
    expect(await liveRpc({ jsonrpc: '2.0', id: 'call-2', method: 'tools/call', params: {} })).toEqual(fixture('error.invalid-params.json') as never);
  });

  test('a notification is accepted with 202 and no body', async () => {
    verifies('RPC-NOTIFY-202');
    const res = await post(JSON.stringify(fixture('notification.initialized.json')));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
  });
});
