// The response check every suite goes through (test/support/contract.ts, openapi-backend over openapi.yaml) really
// catches drift: a wrong field type, an undeclared status, a missing declared header, an undeclared media type, a
// body where none is declared. And it is wired in: a gateway from startTestGateway whose handler drifts fails the
// request that meets the drift.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { buildApp } from '../src/app.ts';
import { json } from '../src/errors.ts';
import { handlers } from '../src/handlers/index.ts';
import { verifies } from './requirements.ts';
import { ContractViolation, contractChecked, contractViolations } from './support/contract.ts';
import { BASE, onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';

const HOOK_TIMEOUT_MS = 60_000;

let g: TestGateway;
let token: string;
beforeAll(async () => {
  g = await startTestGateway('pglite');
  const org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
}, HOOK_TIMEOUT_MS);

const problems = (method: string, path: string, response: Response) => contractViolations(method, `${BASE}${path}`, response);

describe('the response check against openapi.yaml', () => {
  test('real responses of the gateway conform (and requests outside the contract are not judged)', async () => {
    verifies('CONTRACT-RESPONSES');
    const org = await g.handle(new Request(`${BASE}/api/org`, { headers: { authorization: `Bearer ${token}` } }));
    expect(org.status).toBe(200);
    expect(await problems('GET', '/api/org', org)).toEqual([]);
    // The check read a clone: the test still gets the body.
    expect(((await org.json()) as { id: string }).id).toBeString();
    expect(await problems('GET', '/no/such/route', json({ anything: 1 }, 418))).toEqual([]);
  });

  test('a body field of the wrong type or a missing required field fails, naming the field', async () => {
    verifies('CONTRACT-RESPONSES');
    const real = (await (await g.handle(new Request(`${BASE}/api/org`, { headers: { authorization: `Bearer ${token}` } }))).json()) as Record<string, unknown>;
    expect(await problems('GET', '/api/org', json(real))).toEqual([]);
    expect((await problems('GET', '/api/org', json({ ...real, name: 42 }))).join('\n')).toContain('/name must be string');
    expect((await problems('GET', '/api/org', json({ ...real, created_at: 'yesterday' }))).join('\n')).toContain('/created_at must match format "date-time"');
    const { id: _id, ...withoutId } = real;
    expect((await problems('GET', '/api/org', json(withoutId))).join('\n')).toContain("must have required property 'id'");
    expect((await problems('GET', '/healthz', json({ status: 'fine' }))).join('\n')).toContain('/status must be equal to one of the allowed values');
  });

  test('an undeclared status fails, however well-formed the body', async () => {
    verifies('CONTRACT-RESPONSES');
    expect(await problems('GET', '/healthz', json({ error: 'teapot', message: 'I am a teapot.' }, 418))).toEqual([
      'getHealth (GET /healthz) 418: status 418 is not declared',
    ]);
    expect(await problems('GET', '/api/org/api-keys', json({ error: 'not_found', message: 'x' }, 404))).toEqual([
      'listApiKeys (GET /api/org/api-keys) 404: status 404 is not declared',
    ]);
  });

  test('a declared header that is missing or off its schema fails', async () => {
    verifies('CONTRACT-RESPONSES');
    const error = { jsonrpc: '2.0', id: 1, error: { code: -32029, message: 'Slow down.' } };
    expect(await problems('POST', '/mcp/acme', json(error, 429, { 'retry-after': '3' }))).toEqual([]);
    // The MCP endpoint's 429 is a JSON-RPC error, not a REST body.
    expect((await problems('POST', '/mcp/acme', json({ error: 'rate_limited', message: 'Slow down.' }, 429, { 'retry-after': '3' }))).join('\n')).toContain(
      "required property 'jsonrpc'",
    );
    expect((await problems('POST', '/mcp/acme', json(error, 429))).join('\n')).toContain("must have required property 'retry-after'");
    expect((await problems('POST', '/mcp/acme', json(error, 429, { 'retry-after': 'soon' }))).join('\n')).toContain('/headers/retry-after must be integer');
    const tokenBody = { access_token: 'x', token_type: 'Bearer', expires_in: 3600, scope: 'mcp:call' };
    expect((await problems('POST', '/oauth/token', json(tokenBody, 200, { 'cache-control': 'public' }))).join('\n')).toContain(
      '/headers/cache-control must be equal to constant',
    );
  });

  test('an undeclared media type, a non-JSON JSON body and a body where none is declared fail', async () => {
    verifies('CONTRACT-RESPONSES');
    const text = new Response('{"status":"ok"}', { headers: { 'content-type': 'text/plain' } });
    expect(await problems('GET', '/healthz', text)).toEqual(['getHealth (GET /healthz) 200: content-type text/plain is not one of application/json']);
    const broken = new Response('{"status":', { headers: { 'content-type': 'application/json' } });
    expect(await problems('GET', '/healthz', broken)).toEqual(['getHealth (GET /healthz) 200: the body is not JSON']);
    expect(await problems('POST', '/mcp/acme', new Response(null, { status: 202 }))).toEqual([]);
    expect(await problems('POST', '/mcp/acme', json({ ok: true }, 202))).toEqual([
      'mcpEndpoint (POST /mcp/acme) 202: a body (application/json) where the response declares none',
    ]);
  });

  test('contractChecked throws a ContractViolation for a drifting response', async () => {
    verifies('CONTRACT-RESPONSES');
    const checked = contractChecked(async () => json({ status: 'ok', extra: true }, 201));
    await expect(checked(new Request(`${BASE}/healthz`))).rejects.toThrow(ContractViolation);
    await expect(checked(new Request(`${BASE}/healthz`))).rejects.toThrow('status 201 is not declared');
  });

  test('a test gateway with a drifting handler fails the request that meets the drift', async () => {
    verifies('CONTRACT-RESPONSES');
    const original = g.app;
    try {
      g.app = buildApp(g.deps, { ...handlers, getHealth: () => json({ status: 1 }) });
      await expect(g.handle(new Request(`${BASE}/healthz`))).rejects.toThrow(ContractViolation);
      g.app = original;
      expect((await g.handle(new Request(`${BASE}/healthz`))).status).toBe(200);
    } finally {
      g.app = original;
    }
  });
});
