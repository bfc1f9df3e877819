// Discovery of an org's sign-in from its MCP URL alone (issue 29 item 1): the 401's resource_metadata, the protected
// resource metadata (RFC 9728) and the authorization server metadata (RFC 8414) at every path clients probe.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { connectors } from '../src/store/schema.ts';
import { upsertIdpConfig } from '../src/auth/idp/repository.ts';
import { BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';

const HOOK_TIMEOUT_MS = 60_000;
let g: TestGateway;
let a: Onboarded;

beforeAll(async () => {
  g = await startTestGateway('pglite');
  a = await onboard(g);
  // Someone can sign in to the org (issue 40: registration is refused where nobody can).
  await addMember(g, await tokenFor(g, a.clientId, a.clientSecret), 'someone@a.example', 'a long password');
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
}, HOOK_TIMEOUT_MS);

const get = (path: string) => g.handle(new Request(`${BASE}${path}`));
const mcp = (slug: string, headers: Record<string, string> = {}) =>
  g.handle(
    new Request(`${BASE}/mcp/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );

/** The resource_metadata parameter of a challenge. */
const metadataUrlOf = (challenge: string | null) => /resource_metadata="([^"]+)"/.exec(challenge ?? '')?.[1];

describe('discovery from the MCP URL alone', () => {
  test('a 401 without a credential names the resource metadata, which names the org authorization server', async () => {
    const res = await mcp(a.slug);
    expect(res.status).toBe(401);
    const url = metadataUrlOf(res.headers.get('www-authenticate'));
    expect(url).toBe(`${BASE}/.well-known/oauth-protected-resource/mcp/${a.slug}`);
    const prm = await get(new URL(url!).pathname);
    expect(prm.status).toBe(200);
    expect(prm.headers.get('access-control-allow-origin')).toBe('*');
    const doc = (await prm.json()) as Record<string, unknown>;
    expect(doc.resource).toBe(`${BASE}/mcp/${a.slug}`);
    expect(doc.authorization_servers).toEqual([`${BASE}/oauth/${a.slug}`]);
    expect(doc.scopes_supported).toEqual(['mcp:call']);
    expect(doc.bearer_methods_supported).toEqual(['header']);
  });

  test('a bad token and a bad API key get the same discovery challenge', async () => {
    for (const headers of [{ authorization: 'Bearer not.a.jwt' }, { 'x-api-key': `tgk_${'A'.repeat(43)}` }] as Array<Record<string, string>>) {
      const res = await mcp(a.slug, headers);
      expect(res.status).toBe(401);
      expect(metadataUrlOf(res.headers.get('www-authenticate'))).toBe(`${BASE}/.well-known/oauth-protected-resource/mcp/${a.slug}`);
    }
  });

  test('a token without mcp:call gets 403 insufficient_scope with the scope to ask for', async () => {
    const manageOnly = await tokenFor(g, a.clientId, a.clientSecret, 'org:manage');
    const res = await mcp(a.slug, { authorization: `Bearer ${manageOnly}` });
    expect(res.status).toBe(403);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp:call"');
    expect(metadataUrlOf(challenge)).toBe(`${BASE}/.well-known/oauth-protected-resource/mcp/${a.slug}`);
  });

  test('API keys and client-credentials tokens keep working unchanged', async () => {
    expect((await mcp(a.slug, { 'x-api-key': a.apiKey })).status).toBe(200);
    expect((await mcp(a.slug, { authorization: `Bearer ${await tokenFor(g, a.clientId, a.clientSecret)}` })).status).toBe(200);
  });

  test('connector scopes are listed once the org has connectors', async () => {
    // A row as the connector service writes it (the metadata reads the org's active connectors, nothing more).
    const [row] = await g.deps.store.db
      .insert(connectors)
      .values({ orgId: a.orgId, name: 'remote tools', type: 'mcp', status: 'active', config: {} })
      .returning();
    const id = row!.id;
    const doc = (await (await get(`/.well-known/oauth-protected-resource/mcp/${a.slug}`)).json()) as { scopes_supported: string[] };
    expect(doc.scopes_supported).toEqual(['mcp:call', `mcp:call:${id}`]);
  });

  test('the authorization server metadata is served at the RFC 8414 and OpenID Connect paths, alike', async () => {
    const paths = [
      `/.well-known/oauth-authorization-server/oauth/${a.slug}`,
      `/.well-known/openid-configuration/oauth/${a.slug}`,
      `/oauth/${a.slug}/.well-known/openid-configuration`,
    ];
    const docs = await Promise.all(paths.map(async (p) => (await get(p)).json() as Promise<Record<string, unknown>>));
    const issuer = `${BASE}/oauth/${a.slug}`;
    expect(docs[0]!.issuer).toBe(issuer);
    expect(docs[0]!.authorization_endpoint).toBe(`${issuer}/authorize`);
    expect(docs[0]!.code_challenge_methods_supported).toEqual(['S256']);
    expect(docs[0]!.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    expect(docs[0]!.authorization_response_iss_parameter_supported).toBe(true);
    expect(docs[1]).toEqual(docs[0]!);
    expect(docs[2]).toEqual(docs[0]!);
  });

  test("the org's own IdP is listed too when it issues tokens for this endpoint (its audience is the MCP URL)", async () => {
    const c = await onboard(g);
    const prm = async () =>
      ((await (await get(`/.well-known/oauth-protected-resource/mcp/${c.slug}`)).json()) as { authorization_servers: string[] }).authorization_servers;
    await upsertIdpConfig(g.deps.store.db, {
      orgId: c.orgId,
      issuer: 'https://idp.example.com',
      jwksUri: 'https://idp.example.com/jwks',
      audience: 'https://api.example.com',
    });
    expect(await prm()).toEqual([`${BASE}/oauth/${c.slug}`]);
    await upsertIdpConfig(g.deps.store.db, {
      orgId: c.orgId,
      issuer: 'https://idp.example.com',
      jwksUri: 'https://idp.example.com/jwks',
      audience: `${BASE}/mcp/${c.slug}`,
    });
    expect(await prm()).toEqual([`${BASE}/oauth/${c.slug}`, 'https://idp.example.com']);
  });

  test('an unknown org has no metadata', async () => {
    expect((await get('/.well-known/oauth-protected-resource/mcp/no-such-org-here')).status).toBe(404);
    expect((await get('/.well-known/oauth-authorization-server/oauth/no-such-org-here')).status).toBe(404);
  });
});

// Decision 0249: browser-based MCP clients read the documents and post to the token, revocation and registration
// endpoints from their own origin; the person's pages, the MCP endpoint and /api/* get no CORS at all.
describe('CORS for browser-based MCP clients', () => {
  const ORIGIN = 'https://agent.example.com';
  const preflight = (path: string, method: string) =>
    g.handle(
      new Request(`${BASE}${path}`, {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': method, 'access-control-request-headers': 'content-type, mcp-protocol-version' },
      }),
    );
  const post = (path: string, body: BodyInit, type: string) =>
    g.handle(new Request(`${BASE}${path}`, { method: 'POST', headers: { origin: ORIGIN, 'content-type': type }, body }));
  const publicPaths = () =>
    [
      [`/.well-known/oauth-protected-resource/mcp/${a.slug}`, 'GET'],
      [`/.well-known/oauth-authorization-server/oauth/${a.slug}`, 'GET'],
      [`/.well-known/openid-configuration/oauth/${a.slug}`, 'GET'],
      [`/oauth/${a.slug}/.well-known/openid-configuration`, 'GET'],
      ['/.well-known/jwks.json', 'GET'],
      [`/oauth/${a.slug}/token`, 'POST'],
      [`/oauth/${a.slug}/revoke`, 'POST'],
      [`/oauth/${a.slug}/register`, 'POST'],
    ] as const;

  test('preflights of the documents and the token, revocation and registration endpoints: 204, any origin, no credentials', async () => {
    for (const [path, method] of publicPaths()) {
      const res = await preflight(path, method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-methods'), path).toBe(`${method}, OPTIONS`);
      expect(res.headers.get('access-control-allow-headers')!.toLowerCase(), path).toContain('mcp-protocol-version');
      expect(res.headers.get('access-control-allow-headers')!.toLowerCase(), path).toContain('content-type');
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(res.headers.get('x-request-id'), path).toBeTruthy();
    }
  });

  test('the answers themselves, errors included, carry Access-Control-Allow-Origin: *', async () => {
    for (const [path, method] of publicPaths().filter(([, m]) => m === 'GET')) {
      const res = await g.handle(new Request(`${BASE}${path}`, { method, headers: { origin: ORIGIN } }));
      expect(res.status, path).toBe(200);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
    const form = 'application/x-www-form-urlencoded';
    const token = await post(`/oauth/${a.slug}/token`, new URLSearchParams({ grant_type: 'authorization_code', code: 'nope', client_id: 'x' }), form);
    expect(token.status).toBe(400);
    expect(token.headers.get('access-control-allow-origin')).toBe('*');
    const revoke = await post(`/oauth/${a.slug}/revoke`, new URLSearchParams({ token: 'nope' }), form);
    expect(revoke.status).toBe(200);
    expect(revoke.headers.get('access-control-allow-origin')).toBe('*');
    const register = await post(
      `/oauth/${a.slug}/register`,
      JSON.stringify({ client_name: 'Browser agent', redirect_uris: ['https://agent.example.com/cb'], token_endpoint_auth_method: 'none' }),
      'application/json',
    );
    expect(register.status).toBe(201);
    expect(register.headers.get('access-control-allow-origin')).toBe('*');
    // An unknown org's document is a 404 a page may read too.
    const missing = await g.handle(new Request(`${BASE}/.well-known/oauth-protected-resource/mcp/no-such-org-here`, { headers: { origin: ORIGIN } }));
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe('*');
  });

  test("none on the person's pages, the MCP endpoint, the gateway's client-credentials token endpoint and /api/*", async () => {
    const authorize = await g.handle(new Request(`${BASE}/oauth/${a.slug}/authorize?response_type=code`, { headers: { origin: ORIGIN } }));
    expect(authorize.headers.get('access-control-allow-origin')).toBeNull();
    for (const [path, method] of [
      [`/oauth/${a.slug}/authorize`, 'GET'],
      [`/oauth/${a.slug}/callback`, 'GET'],
      [`/oauth/${a.slug}/consent`, 'POST'],
      [`/mcp/${a.slug}`, 'POST'],
      ['/oauth/token', 'POST'],
      ['/api/org/mcp-grants', 'GET'],
      ['/api/org/mcp-clients', 'POST'],
      ['/api/org/mcp-sign-in', 'PUT'],
    ] as const) {
      const res = await preflight(path, method);
      expect(res.status, path).toBe(405);
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
      expect(res.headers.get('access-control-allow-methods'), path).toBeNull();
    }
    const manage = await tokenFor(g, a.clientId, a.clientSecret);
    const grants = await g.handle(new Request(`${BASE}/api/org/mcp-grants`, { headers: { origin: ORIGIN, authorization: `Bearer ${manage}` } }));
    expect(grants.status).toBe(200);
    expect(grants.headers.get('access-control-allow-origin')).toBeNull();
    const issued = await g.handle(
      new Request(`${BASE}/oauth/token`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret }),
      }),
    );
    expect(issued.status).toBe(200);
    expect(issued.headers.get('access-control-allow-origin')).toBeNull();
  });
});
