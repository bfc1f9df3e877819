// Issue 40 item 6, decision 0365: errors that point the right way. An IdP on plain http or a private address is
// refused with the name of the switch that allows it (TOOLGATE_OUTBOUND_ALLOW_HOSTS), at save and at sign-in; an API
// key sent as Authorization: Bearer is told to use X-API-Key, and the key is not repeated. Real gateway (PGlite),
// driven over app.handle; host names resolve through the suite's resolver, so no DNS is used.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { verifies } from './requirements.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';

const SWITCH = 'TOOLGATE_OUTBOUND_ALLOW_HOSTS';
const REDIRECT = 'http://127.0.0.1:47823/callback';
/** Names and the addresses the suite's resolver gives them: one public, one private. */
const ADDRESSES: Record<string, string> = { 'idp.example.com': '8.8.8.8', 'idp.corp.internal': '10.20.0.7' };

let g: TestGateway;
let a: Onboarded;
let manage: string;

beforeAll(async () => {
  g = await startTestGateway('pglite', { TEST_EXACT_OUTBOUND_ALLOW_HOSTS: '1' }, undefined, {
    resolve: async (host: string) => (ADDRESSES[host] ? [ADDRESSES[host]] : []),
  });
  a = await onboard(g);
  manage = await tokenFor(g, a.clientId, a.clientSecret);
}, 60_000);
afterAll(async () => {
  await g?.close();
}, 60_000);

const idpBody = (issuer: string, jwksUri: string) => ({ issuer, jwks_uri: jwksUri, audience: `${BASE}/mcp/${a.slug}`, console_client_id: 'toolgate-console' });

describe('an IdP the outbound policy refuses', () => {
  test('at save: a JWKS URI on plain http or a private or loopback address answers 422 naming the switch', async () => {
    verifies('AUTH-ERRORS-POINT-THE-WAY');
    for (const jwks of ['http://idp.example.com/jwks', 'https://idp.corp.internal/jwks', 'https://10.0.0.5/jwks', 'https://127.0.0.1/jwks']) {
      const res = await api(g, 'PUT', '/api/org/idp', manage, idpBody('https://idp.example.com', jwks));
      const body = (await res.json()) as { error: string; message: string };
      expect({ jwks, status: res.status, error: body.error }).toEqual({ jwks, status: 422, error: 'jwks_uri_refused' });
      expect(body.message).toContain(SWITCH);
    }
  });

  test('at sign-in: an issuer on plain http or a private address answers a page naming the switch', async () => {
    verifies('AUTH-ERRORS-POINT-THE-WAY');
    const created = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: 'agent', redirect_uris: [REDIRECT] });
    const clientId = ((await created.json()) as { client_id: string }).client_id;
    for (const issuer of ['http://idp.example.com', 'https://idp.corp.internal']) {
      // The JWKS URI is public https (it passes at save); the issuer is what sign-in reads its discovery document from.
      const saved = await api(g, 'PUT', '/api/org/idp', manage, idpBody(issuer, 'https://idp.example.com/jwks'));
      expect(saved.status).toBe(200);
      const url = new URL(`${BASE}/oauth/${a.slug}/authorize`);
      const challenge = createHash('sha256').update(randomBytes(32)).digest('base64url');
      for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: `${BASE}/mcp/${a.slug}`,
      }))
        url.searchParams.set(k, v);
      const res = await g.handle(new Request(url));
      expect({ issuer, status: res.status, location: res.headers.get('location') }).toEqual({ issuer, status: 502, location: null });
      expect(await res.text()).toContain(SWITCH);
    }
  });
});

describe('an API key sent as Authorization: Bearer', () => {
  const mcp = (headers: Record<string, string>) =>
    g.handle(
      new Request(`${BASE}/mcp/${a.slug}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      }),
    );

  test('at the MCP endpoint: 401 saying to use X-API-Key, the key not repeated; the same key in X-API-Key works', async () => {
    verifies('AUTH-ERRORS-POINT-THE-WAY');
    const res = await mcp({ authorization: `Bearer ${a.apiKey}` });
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(text).toContain('X-API-Key');
    expect(text).toContain('not as Authorization: Bearer');
    expect(text).not.toContain(a.apiKey);
    expect(text).not.toContain(a.apiKey.slice(4, 16));
    expect(res.headers.get('www-authenticate') ?? '').not.toContain(a.apiKey);
    // A revoked or made-up key gets the same pointer (the shape decides; nothing is looked up).
    expect(await (await mcp({ authorization: `Bearer tgk_${randomBytes(32).toString('base64url')}` })).text()).toContain('X-API-Key');
    expect((await mcp({ 'x-api-key': a.apiKey })).status).toBe(200);
  });

  test('at /api/*: 401 saying API keys go in X-API-Key at an MCP endpoint, the key not repeated', async () => {
    verifies('AUTH-ERRORS-POINT-THE-WAY');
    const res = await api(g, 'GET', '/api/org', a.apiKey);
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('unauthenticated');
    expect(body.message).toContain('X-API-Key');
    expect(JSON.stringify(body)).not.toContain(a.apiKey);
  });
});
