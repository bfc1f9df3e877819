// The REST interface on a real gateway: validation before handlers, hostile bodies, routing errors (raw HTTP, as the
// typed SDK cannot send them), and API keys, OAuth clients and provisioning (through the SDK, contract-checked).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { verifies } from './requirements.ts';
import * as sdk from '../sdk/index.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';

/** Hooks default to 5 s in bun whatever bunfig says; starting PGlite under load can take longer. */
const HOOK_TIMEOUT_MS = 60_000;

let g: TestGateway;
let small: TestGateway; // TOOLGATE_MAX_BODY_BYTES=2048
let org: Onboarded;
let token: string;
let smallToken: string;
let smallOrg: Onboarded;
let client: sdk.Client;
/** Every error body seen, checked at the end for leaked internals. */
const errorBodies: string[] = [];

beforeAll(async () => {
  [g, small] = await Promise.all([startTestGateway('pglite'), startTestGateway('pglite', { TOOLGATE_MAX_BODY_BYTES: '2048' })]);
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  client = sdkFor(g, token).client;
  smallOrg = await onboard(small);
  smallToken = await tokenFor(small, smallOrg.clientId, smallOrg.clientSecret);
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
  await small?.close();
}, HOOK_TIMEOUT_MS);

function raw(gateway: TestGateway, method: string, path: string, body: BodyInit | null, headers: Record<string, string>) {
  return gateway.handle(new Request(`${BASE}${path}`, { method, headers, body }));
}
const authed = (contentType = 'application/json') => ({ authorization: `Bearer ${token}`, 'content-type': contentType });

async function expectError(res: Response | Promise<Response>, status: number, code: string, messageIncludes?: string) {
  const response = await res;
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  const text = await response.text();
  errorBodies.push(text);
  const body = JSON.parse(text) as { error: string; message: string };
  expect(Object.keys(body).sort()).toEqual(['error', 'message']);
  expect(body.error).toBe(code);
  if (messageIncludes) expect(body.message).toContain(messageIncludes);
  return { response, body };
}

/** The same checks for an SDK result: the status, a JSON body of exactly {error, message}, a ToolgateError. */
function expectSdkError(result: { error?: unknown; response: Response }, status: number, code: string, messageIncludes?: string) {
  expect(result.response.status).toBe(status);
  expect(result.response.headers.get('content-type')).toContain('application/json');
  expect(result.error).toBeInstanceOf(sdk.ToolgateError);
  const error = result.error as sdk.ToolgateError;
  errorBodies.push(JSON.stringify(error.body));
  expect(Object.keys(error.body as object).sort()).toEqual(['error', 'message']);
  expect(error.error).toBe(code);
  expect(error.message).toBe((error.body as { message: string }).message);
  if (messageIncludes) expect(error.message).toContain(messageIncludes);
  return error;
}

describe('request validation happens before the handler', () => {
  const path = '/api/org/api-keys';
  const keyCount = async () => ((await (await api(g, 'GET', path, token)).json()) as { api_keys: unknown[] }).api_keys.length;

  test('malformed JSON: 400 invalid_json', async () => {
    verifies('REST-ERROR-BODY');
    await expectError(raw(g, 'POST', path, '{"name": "x",', authed()), 400, 'invalid_json');
    await expectError(raw(g, 'POST', path, "{'name': 'x'}", authed()), 400, 'invalid_json');
  });

  test('a wrong type, a missing field and an unknown field are 400 naming the field', async () => {
    verifies('REST-400-FIELD');
    const before = await keyCount();
    await expectError(api(g, 'POST', path, token, { name: 5 }), 400, 'validation_error', 'body.name');
    await expectError(api(g, 'POST', path, token, { name: 'x', connector_ids: 'all' }), 400, 'validation_error', 'body.connector_ids');
    await expectError(api(g, 'POST', path, token, {}), 400, 'validation_error', 'body.name is required');
    await expectError(api(g, 'POST', '/api/org/oauth-clients', token, { name: 'x' }), 400, 'validation_error', 'body.scopes is required');
    await expectError(api(g, 'POST', path, token, { name: 'x', admin: true }), 400, 'validation_error', 'body.admin');
    await expectError(api(g, 'POST', path, token, { name: '' }), 400, 'validation_error', 'body.name');
    await expectError(api(g, 'POST', path, token, [{ name: 'x' }]), 400, 'validation_error', 'body');
    await expectError(api(g, 'POST', '/api/org/oauth-clients', token, { name: 'x', scopes: ['admin'] }), 400, 'validation_error', 'body.scopes');
    await expectError(raw(g, 'POST', path, null, authed()), 400, 'validation_error', 'body is required');
    expect(await keyCount()).toBe(before);
  });

  test('a non-uuid path parameter: 400 naming it', async () => {
    verifies('REST-400-FIELD');
    await expectError(api(g, 'DELETE', '/api/org/api-keys/not-a-uuid', token), 400, 'validation_error', 'path.keyId');
    await expectError(api(g, 'GET', '/api/mcp/123/status', token), 400, 'validation_error', 'path.orgId');
    await expectError(api(g, 'POST', "/api/mcp/'%20OR%201=1/provision", token), 400, 'validation_error', 'path.orgId');
  });

  test('a wrong Content-Type: 415', async () => {
    verifies('HTTP-CONTENT-TYPE-415');
    const body = JSON.stringify({ name: 'x' });
    await expectError(raw(g, 'POST', path, body, authed('text/plain')), 415, 'unsupported_media_type');
    await expectError(raw(g, 'POST', path, body, authed('application/x-www-form-urlencoded')), 415, 'unsupported_media_type');
    // The JSON endpoint is still fine with a charset parameter.
    expect((await raw(g, 'POST', path, body, authed('application/json; charset=utf-8'))).status).toBe(201);
  });

  test('a body over TOOLGATE_MAX_BODY_BYTES: 413, declared or streamed', async () => {
    verifies('HOSTILE-BODIES-SIZE');
    const big = JSON.stringify({ name: 'x'.repeat(3000) });
    const headers = { authorization: `Bearer ${smallToken}`, 'content-type': 'application/json' };
    await expectError(raw(small, 'POST', path, big, headers), 413, 'payload_too_large');
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1000)));
        controller.close();
      },
    });
    await expectError(raw(small, 'POST', path, stream, headers), 413, 'payload_too_large');
    const mcp = await raw(
      small,
      'POST',
      `/mcp/${smallOrg.slug}`,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { pad: 'x'.repeat(3000) } } }),
      {
        'content-type': 'application/json',
        'x-api-key': smallOrg.apiKey,
      },
    );
    expect(mcp.status).toBe(413);
    // Under the cap, the same gateway works.
    expect((await raw(small, 'POST', path, JSON.stringify({ name: 'fits' }), headers)).status).toBe(201);
  });

  test('10,000 nested brackets: 400, and the app keeps working', async () => {
    verifies('HOSTILE-BODIES-NESTING', 'RPC-32700');
    await expectError(raw(g, 'POST', path, '['.repeat(10_000), authed()), 400, 'body_too_deep');
    await expectError(raw(g, 'POST', path, `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, authed()), 400, 'body_too_deep');
    const mcp = await raw(g, 'POST', `/mcp/${org.slug}`, '['.repeat(10_000), { 'content-type': 'application/json', 'x-api-key': org.apiKey });
    expect(mcp.status).toBe(400);
    expect(((await mcp.json()) as { error: { code: number } }).error.code).toBe(-32700);
    expect((await api(g, 'GET', '/api/org', token)).status).toBe(200);
    expect((await raw(g, 'GET', '/healthz', null, {})).status).toBe(200);
  });

  test('a __proto__ key is refused (additionalProperties) and pollutes nothing', async () => {
    verifies('HOSTILE-BODIES-PROTO');
    await expectError(raw(g, 'POST', path, '{"name":"x","__proto__":{"polluted":true}}', authed()), 400, 'validation_error', '__proto__');
    await expectError(raw(g, 'POST', path, '{"name":"x","constructor":{"prototype":{"polluted":true}}}', authed()), 400, 'validation_error', 'constructor');
    await expectError(
      raw(g, 'POST', '/operator/orgs', '{"slug":"pp","name":"x","__proto__":{"polluted":true}}', {
        authorization: 'Bearer test-operator-token-0123456789abcdef',
        'content-type': 'application/json',
      }),
      400,
      'validation_error',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('invalid UTF-8: 400', async () => {
    verifies('HOSTILE-BODIES-UTF8');
    const bytes = new Uint8Array([...new TextEncoder().encode('{"name":"'), 0xff, 0xfe, 0xc3, ...new TextEncoder().encode('"}')]);
    await expectError(raw(g, 'POST', path, bytes, authed()), 400, 'invalid_encoding');
    const overlong = new Uint8Array([...new TextEncoder().encode('{"name":"'), 0xc0, 0xaf, ...new TextEncoder().encode('"}')]);
    await expectError(raw(g, 'POST', path, overlong, authed()), 400, 'invalid_encoding');
  });
});

describe('routing', () => {
  test('an unknown route: 404 JSON', async () => {
    verifies('REST-ERROR-BODY');
    for (const p of ['/nope', '/api/orgs', '/api/org/api-keys/x/y', '/mcp', '/.env', '/api/../etc/passwd']) {
      await expectError(api(g, 'GET', p, token), 404, 'not_found');
    }
  });

  test('a wrong method on a known path: 405 with Allow', async () => {
    verifies('REST-METHOD-SWAP');
    const cases: Array<[string, string, string]> = [
      // The org's settings (audit_statements, issue 41) are changed with PATCH.
      ['PUT', '/api/org', 'GET, PATCH'],
      ['DELETE', '/api/org', 'GET, PATCH'],
      ['PATCH', '/api/org/api-keys', 'GET, POST'],
      ['GET', '/oauth/token', 'POST'],
      ['GET', `/mcp/${'acme'}`, 'POST'],
      // A key's attributes are set with PATCH (issue 38 item 6), so the key's path answers DELETE and PATCH.
      ['GET', `/api/org/api-keys/${randomUUID()}`, 'DELETE, PATCH'],
    ];
    for (const [method, p, allow] of cases) {
      const { response } = await expectError(api(g, method, p, token), 405, 'method_not_allowed');
      expect(response.headers.get('allow')!.split(', ').sort()).toEqual(allow.split(', ').sort());
    }
  });
});

describe('API keys', () => {
  test('created with its secret shown once; the list never shows it', async () => {
    verifies('AUTH-HASHED-SECRETS');
    const { data, response } = await sdk.createApiKey({ client, body: { name: 'reporting' } });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const created = data as unknown as Record<string, unknown>;
    expect(Object.keys(created).sort()).toEqual(['attributes', 'connector_ids', 'created_at', 'id', 'key', 'last_used_at', 'name', 'prefix', 'revoked_at']);
    expect(created).toMatchObject({ name: 'reporting', connector_ids: null, revoked_at: null });
    expect(String(created.key).startsWith(String(created.prefix))).toBe(true);
    const listText = (await sdk.listApiKeys({ client, throwOnError: true, parseAs: 'text' })).data as unknown as string;
    expect(listText).not.toContain(String(created.key));
    const list = JSON.parse(listText) as { api_keys: Array<Record<string, unknown>> };
    for (const item of list.api_keys) expect(item).not.toHaveProperty('key');
    expect(list.api_keys.find((k) => k.id === created.id)).toMatchObject({ name: 'reporting', prefix: created.prefix });
  });

  test('connector_ids of unknown connectors: 422', async () => {
    verifies('AUTH-APIKEY-CONNECTORS');
    expectSdkError(await sdk.createApiKey({ client, body: { name: 'scoped', connector_ids: [randomUUID()] } }), 422, 'connector_not_found');
  });

  test('revoke: 200 with revoked_at, then 404; an unknown id is 404', async () => {
    verifies('REST-404-NOT-FOUND');
    const created = (await sdk.createApiKey({ client, throwOnError: true, body: { name: 'temp' } })).data;
    const first = await sdk.revokeApiKey({ client, path: { keyId: created.id } });
    expect(first.response.status).toBe(200);
    const revoked = first.data!;
    expect(revoked.id).toBe(created.id);
    expect(Date.parse(revoked.revoked_at!)).toBeGreaterThan(0);
    expectSdkError(await sdk.revokeApiKey({ client, path: { keyId: created.id } }), 404, 'api_key_not_found');
    expectSdkError(await sdk.revokeApiKey({ client, path: { keyId: randomUUID() } }), 404, 'api_key_not_found');
    const list = (await sdk.listApiKeys({ client, throwOnError: true })).data;
    expect(list.api_keys.find((k) => k.id === created.id)!.revoked_at).toBe(revoked.revoked_at);
  });
});

describe('OAuth clients', () => {
  test('created with its secret shown once; the list never shows it', async () => {
    verifies('AUTH-HASHED-SECRETS');
    const { data, response } = await sdk.createOAuthClient({ client, body: { name: 'agent', scopes: ['mcp:call'] } });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const created = data as unknown as Record<string, unknown>;
    expect(Object.keys(created).sort()).toEqual([
      'attributes',
      'client_id',
      'client_secret',
      'created_at',
      'id',
      'last_used_at',
      'name',
      'revoked_at',
      'scopes',
    ]);
    expect(created).toMatchObject({ name: 'agent', scopes: ['mcp:call'], revoked_at: null });
    const listText = (await sdk.listOAuthClients({ client, throwOnError: true, parseAs: 'text' })).data as unknown as string;
    expect(listText).not.toContain(String(created.client_secret));
    const list = JSON.parse(listText) as { oauth_clients: Array<Record<string, unknown>> };
    for (const item of list.oauth_clients) expect(item).not.toHaveProperty('client_secret');
    expect(list.oauth_clients.map((c) => c.client_id)).toContain(created.client_id);
    const signedIn = sdkFor(g, { clientId: String(created.client_id), clientSecret: String(created.client_secret) });
    expect(await signedIn.accessToken()).toBeString();
  });

  test('a scope naming an unknown connector: 422', async () => {
    expectSdkError(await sdk.createOAuthClient({ client, body: { name: 'scoped', scopes: [`mcp:call:${randomUUID()}`] } }), 422, 'connector_not_found');
  });

  test('revoke: 200, then 404; an unknown client is 404', async () => {
    verifies('REST-404-NOT-FOUND');
    const created = (await sdk.createOAuthClient({ client, throwOnError: true, body: { name: 'temp', scopes: ['mcp:call'] } })).data;
    const first = await sdk.revokeOAuthClient({ client, path: { clientId: created.client_id } });
    expect(first.response.status).toBe(200);
    expect(first.data!.revoked_at).toBeString();
    expectSdkError(await sdk.revokeOAuthClient({ client, path: { clientId: created.client_id } }), 404, 'oauth_client_not_found');
    expectSdkError(await sdk.revokeOAuthClient({ client, path: { clientId: 'tgc_unknown' } }), 404, 'oauth_client_not_found');
  });
});

describe('provisioning', () => {
  test('status: provisioned, the absolute endpoint, no tools yet', async () => {
    verifies('PROVISION-STATUS');
    const { data, response } = await sdk.getProvisioningStatus({ client, path: { orgId: org.orgId } });
    expect(response.status).toBe(200);
    expect(data).toEqual({ status: 'provisioned', endpoint: `${BASE}/mcp/${org.slug}`, toolCount: 0 });
  });

  test('provision: 200 with the status, idempotent', async () => {
    verifies('PROVISION-MANUAL');
    for (let i = 0; i < 2; i++) {
      const { data, response } = await sdk.provisionOrg({ client, path: { orgId: org.orgId } });
      expect(response.status).toBe(200);
      expect(data).toEqual({ status: 'provisioned', endpoint: `${BASE}/mcp/${org.slug}`, toolCount: 0 });
    }
    const me = (await sdk.getOrg({ client, throwOnError: true })).data;
    expect(me).toMatchObject({ id: org.orgId, provision_status: 'provisioned' });
  });
});

test('no error response discloses a stack trace or a file path', () => {
  verifies('REST-ERROR-BODY');
  expect(errorBodies.length).toBeGreaterThan(20);
  for (const body of errorBodies) {
    expect(body).not.toMatch(/\bat .*\.(ts|js):\d+/);
    expect(body).not.toMatch(/\/(src|node_modules|work)\//);
    expect(body).not.toMatch(/\.ts\b/);
  }
});
