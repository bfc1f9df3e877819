// Authentication at the door, against a real gateway: the token endpoint, gateway tokens and API keys on
// /api/* and on the MCP endpoint, forged and foreign credentials, revocation, scopes, and the operator token.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { desc, isNull } from 'drizzle-orm';
import { SignJWT, base64url, decodeJwt, decodeProtectedHeader, exportSPKI, generateKeyPair, importJWK, type JWK } from 'jose';
import { randomUUID } from 'node:crypto';
import { TOKEN_AUDIENCE } from '../src/auth/signing.ts';
import { signingKeys } from '../src/store/schema.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { sdkFor } from './support/sdk.ts';
import { BASE, OPERATOR_TOKEN, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';

/** Hooks default to 5 s in bun whatever bunfig says; starting PGlite under load can take longer. */
const HOOK_TIMEOUT_MS = 60_000;

let g: TestGateway;
let a: Onboarded; // the org under test
let b: Onboarded; // another org
let aToken: string; // mcp:call + org:manage
let bToken: string;
let signer: { kid: string; key: CryptoKey };

const INVALID_TOKEN_CHALLENGE = 'Bearer realm="toolgate", error="invalid_token"';
const NO_CREDENTIAL_CHALLENGE = 'Bearer realm="toolgate"';
/** The MCP endpoint's challenge: where to discover the org's sign-in (RFC 9728), then the RFC 6750 parameters. */
const mcpChallenge = (org: Onboarded, error?: string) =>
  `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp/${org.slug}", realm="toolgate"${error ? `, ${error}` : ''}`;
const INVALID_TOKEN_BODY = { error: 'unauthenticated', message: 'The token is invalid or expired.' };

beforeAll(async () => {
  g = await startTestGateway('pglite');
  a = await onboard(g);
  b = await onboard(g);
  aToken = await tokenFor(g, a.clientId, a.clientSecret);
  bToken = await tokenFor(g, b.clientId, b.clientSecret);
  // The gateway's own key material, opened from the store, to mint tokens whose claims we choose.
  const [row] = await g.deps.store.db.select().from(signingKeys).where(isNull(signingKeys.retiredAt)).orderBy(desc(signingKeys.createdAt)).limit(1);
  const jwk = JSON.parse(g.deps.box.decrypt(row!.privateKeySealed, `signing_key:${row!.kid}`)) as JWK;
  signer = { kid: row!.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
}, HOOK_TIMEOUT_MS);

const now = () => Math.floor(Date.now() / 1000);

function tokenRequest(form: Record<string, string>, headers: Record<string, string> = {}) {
  return g.handle(
    new Request(`${BASE}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
    }),
  );
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function mcp(slug: string, headers: Record<string, string>, query = '') {
  return g.handle(
    new Request(`${BASE}/mcp/${slug}${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function expectError(res: Response, status: number, body: Record<string, unknown>, challenge?: string | null) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/json');
  const got = (await res.json()) as Record<string, unknown>;
  expect(got).toEqual(body as never);
  if (challenge !== undefined) expect(res.headers.get('www-authenticate')).toBe(challenge);
  return got;
}

async function expectOAuthError(res: Response, status: number, error: string, challenge: string | null = null) {
  expect(res.status).toBe(status);
  expect(res.headers.get('cache-control')).toBe('no-store');
  const got = (await res.json()) as Record<string, string>;
  expect(Object.keys(got).sort()).toEqual(['error', 'error_description', 'message']);
  expect(got.error).toBe(error);
  expect(got.message).toBe(got.error_description!);
  expect(res.headers.get('www-authenticate')).toBe(challenge);
}

/** Claims of a valid gateway token of org A; each case changes one thing. */
const claimsOf = (org: Onboarded = a): Record<string, unknown> => ({
  iss: BASE,
  aud: TOKEN_AUDIENCE,
  sub: org.clientId,
  tg_org: org.orgId,
  scope: 'mcp:call org:manage',
  jti: randomUUID(),
  iat: now(),
  exp: now() + 600,
});

function mint(claims: Record<string, unknown>, header: Record<string, unknown> = {}, key: CryptoKey | Uint8Array = signer.key) {
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: signer.kid, typ: 'at+jwt', ...header } as never).sign(key);
}

describe('token endpoint', () => {
  test("form credentials: a Bearer token for 3600 s with all of the client's scopes", async () => {
    verifies('TOKEN-ENDPOINT-ISSUE');
    const res = await tokenRequest({ grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
    expect(body.token_type).toBe('Bearer');
    expect(body.expires_in).toBe(3600);
    expect(String(body.scope).split(' ').sort()).toEqual(['mcp:call', 'org:manage']);
    const claims = decodeJwt(String(body.access_token));
    expect(claims).toMatchObject({ iss: BASE, aud: TOKEN_AUDIENCE, sub: a.clientId, tg_org: a.orgId, scope: body.scope });
    expect(claims.exp! - claims.iat!).toBe(3600);
    const header = decodeProtectedHeader(String(body.access_token));
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: signer.kid });
  });

  test('HTTP Basic credentials, and a requested subset of scopes is honoured', async () => {
    verifies('TOKEN-ENDPOINT-SCOPE');
    const res = await tokenRequest({ grant_type: 'client_credentials', scope: 'mcp:call' }, { authorization: basic(a.clientId, a.clientSecret) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string; scope: string; expires_in: number; token_type: string };
    expect(body).toMatchObject({ scope: 'mcp:call', expires_in: 3600, token_type: 'Bearer' });
    expect(decodeJwt(body.access_token).scope).toBe('mcp:call');
  });

  test('invalid_client 401: wrong secret, unknown client, revoked client', async () => {
    verifies('TOKEN-ENDPOINT-ERRORS');
    const wrong = { grant_type: 'client_credentials', client_id: a.clientId, client_secret: `${a.clientSecret}x` };
    await expectOAuthError(await tokenRequest(wrong), 401, 'invalid_client');
    await expectOAuthError(
      await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basic(a.clientId, 'nope') }),
      401,
      'invalid_client',
      'Basic realm="toolgate"',
    );
    const unknown = { grant_type: 'client_credentials', client_id: `tgc_${'0'.repeat(24)}`, client_secret: a.clientSecret };
    await expectOAuthError(await tokenRequest(unknown), 401, 'invalid_client');
    await expectOAuthError(await tokenRequest({ ...unknown, client_id: 'not-a-client' }), 401, 'invalid_client');

    const admin = sdkFor(g, aToken).client;
    const { data: created } = await sdk.createOAuthClient({ client: admin, throwOnError: true, body: { name: 'doomed', scopes: ['mcp:call'] } });
    const form = { grant_type: 'client_credentials', client_id: created.client_id, client_secret: created.client_secret };
    expect((await tokenRequest(form)).status).toBe(200);
    expect((await sdk.revokeOAuthClient({ client: admin, path: { clientId: created.client_id } })).response.status).toBe(200);
    await expectOAuthError(await tokenRequest(form), 401, 'invalid_client');
  });

  test('unsupported_grant_type, invalid_scope and invalid_request are 400', async () => {
    verifies('TOKEN-ENDPOINT-ERRORS');
    const creds = { client_id: a.clientId, client_secret: a.clientSecret };
    await expectOAuthError(await tokenRequest({ grant_type: 'password', ...creds }), 400, 'unsupported_grant_type');
    await expectOAuthError(await tokenRequest({ grant_type: 'client_credentials', ...creds, scope: 'mcp:call admin' }), 400, 'invalid_scope');
    await expectOAuthError(await tokenRequest({ grant_type: 'client_credentials', ...creds, scope: `mcp:call:${randomUUID()}` }), 400, 'invalid_scope');
    await expectOAuthError(await tokenRequest({ grant_type: 'client_credentials', client_secret: a.clientSecret }), 400, 'invalid_request');
    await expectOAuthError(await tokenRequest(creds), 400, 'invalid_request'); // no grant_type
    await expectOAuthError(
      await tokenRequest({ grant_type: 'client_credentials', ...creds }, { authorization: basic(a.clientId, a.clientSecret) }),
      400,
      'invalid_request',
    );
  });
});

/** The two bearer-protected doors under test, each with the request a valid token passes. */
const doors = {
  'GET /api/org': (headers: Record<string, string>, query = '') => g.handle(new Request(`${BASE}/api/org${query}`, { headers })),
  'POST /mcp/{slug}': (headers: Record<string, string>, query = '') => mcp(a.slug, headers, query),
};

/** A door's challenge: the MCP endpoint's names where its sign-in is discovered (RFC 9728) first. */
const challengeAt = (door: string, error?: string) =>
  door.startsWith('POST /mcp') ? mcpChallenge(a, error) : `Bearer realm="toolgate"${error ? `, ${error}` : ''}`;

describe.each(Object.entries(doors))('%s', (name, call) => {
  test('a valid token passes (the forged cases below differ from it in one respect only)', async () => {
    verifies('AUTH-METHODS');
    expect((await call(bearer(aToken))).status).toBe(200);
    expect((await call(bearer(await mint(claimsOf())))).status).toBe(200);
  });

  test('no credential: 401 with a bare Bearer challenge', async () => {
    verifies('AUTH-401-MISSING');
    const res = await call({});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(challengeAt(name));
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('unauthenticated');
    expect(body.message.length).toBeGreaterThan(0);
  });

  const forged: Array<[string, () => Promise<string>]> = [
    ['garbage', async () => 'not.a.jwt'],
    [
      'alg none',
      async () => {
        const [, payload] = aToken.split('.');
        return `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'at+jwt' }))}.${payload}.`;
      },
    ],
    [
      'HS256 keyed with the public key',
      async () => {
        const jwks = (await (await g.handle(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: JWK[] };
        const pem = await exportSPKI((await importJWK(jwks.keys[0]!, 'ES256', { extractable: true })) as CryptoKey);
        return mint(claimsOf(), { alg: 'HS256' }, new TextEncoder().encode(pem));
      },
    ],
    ['another ES256 key with the same kid', async () => mint(claimsOf(), {}, (await generateKeyPair('ES256')).privateKey)],
    ['payload of another org under this signature', async () => `${aToken.split('.')[0]}.${bToken.split('.')[1]}.${aToken.split('.')[2]}`],
    ['wrong iss', async () => mint({ ...claimsOf(), iss: 'https://evil.example' })],
    ['wrong aud', async () => mint({ ...claimsOf(), aud: 'someone-else' })],
    ['missing exp', async () => mint({ ...claimsOf(), exp: undefined })],
    ['past exp', async () => mint({ ...claimsOf(), iat: now() - 7200, exp: now() - 60 })],
    ['nbf in the future', async () => mint({ ...claimsOf(), nbf: now() + 600 })],
    ['missing tg_org', async () => mint({ ...claimsOf(), tg_org: undefined })],
    ['not an access token (typ JWT)', async () => mint(claimsOf(), { typ: 'JWT' })],
  ];
  test.each(forged)('%s: 401 invalid_token, the same body as any invalid token', async (_case, make) => {
    verifies(
      'AUTH-JWT-ALG-NONE',
      'AUTH-JWT-HS256-PUBKEY',
      'AUTH-JWT-SIGNATURE',
      'AUTH-JWT-ISS',
      'AUTH-JWT-AUD',
      'AUTH-JWT-EXP',
      'AUTH-JWT-NBF',
      'AUTH-401-MISSING',
    );
    await expectError(await call(bearer(await make())), 401, INVALID_TOKEN_BODY, challengeAt(name, 'error="invalid_token"'));
  });

  test('credentials in the query string are never accepted', async () => {
    verifies('AUTH-QUERY-STRING');
    for (const query of [`?access_token=${aToken}`, `?api_key=${a.apiKey}`, `?token=${aToken}`]) {
      const res = await call({}, query);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(challengeAt(name));
    }
  });

  test("a revoked OAuth client's existing token is refused on the next request", async () => {
    verifies('AUTH-CLIENT-REVOKE');
    const admin = sdkFor(g, aToken).client;
    const { data: client } = await sdk.createOAuthClient({
      client: admin,
      throwOnError: true,
      body: { name: 'revoked-soon', scopes: ['mcp:call', 'org:manage'] },
    });
    const token = await tokenFor(g, client.client_id, client.client_secret);
    expect((await call(bearer(token))).status).toBe(200);
    expect((await sdk.revokeOAuthClient({ client: admin, path: { clientId: client.client_id } })).response.status).toBe(200);
    const res = await call(bearer(token));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(challengeAt(name, 'error="invalid_token"'));
    expect(((await res.json()) as { error: string }).error).toBe('unauthenticated');
  });
});

describe('MCP endpoint credentials', () => {
  test("another org's OAuth token: 401 identical to an invalid token", async () => {
    verifies('AUTH-CROSS-ORG');
    const foreign = await mcp(a.slug, bearer(bToken));
    const invalid = await mcp(a.slug, bearer('not.a.jwt'));
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('www-authenticate')).toBe(invalid.headers.get('www-authenticate'));
    expect(await foreign.text()).toBe(await invalid.text());
    expect((await mcp(b.slug, bearer(bToken))).status).toBe(200);
  });

  test("another org's API key: 401 identical to an unknown key", async () => {
    verifies('AUTH-CROSS-ORG');
    const foreign = await mcp(a.slug, { 'x-api-key': b.apiKey });
    const unknown = await mcp(a.slug, { 'x-api-key': `tgk_${'A'.repeat(43)}` });
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('www-authenticate')).toBe(unknown.headers.get('www-authenticate'));
    const body = await foreign.text();
    expect(body).toBe(await unknown.text());
    expect(JSON.parse(body)).toEqual({ error: 'unauthenticated', message: 'The API key is invalid or revoked.' });
    expect((await mcp(b.slug, { 'x-api-key': b.apiKey })).status).toBe(200);
  });

  test('an unknown slug answers exactly like a known one with a bad credential (no org enumeration)', async () => {
    verifies('AUTH-SLUG-ENUM');
    for (const headers of [{ 'x-api-key': `tgk_${'B'.repeat(43)}` }, bearer('not.a.jwt'), bearer(bToken), {}] as Array<Record<string, string>>) {
      const known = await mcp(a.slug, headers);
      const unknownSlug = `no-such-org-${Date.now().toString(36)}`;
      const unknown = await mcp(unknownSlug, headers);
      expect(unknown.status).toBe(401);
      expect(known.status).toBe(401);
      // The challenge names the resource metadata of the URL asked for (its own slug), and differs in nothing else.
      expect(unknown.headers.get('www-authenticate')!.replace(`/mcp/${unknownSlug}"`, '/mcp/SLUG"')).toBe(
        known.headers.get('www-authenticate')!.replace(`/mcp/${a.slug}"`, '/mcp/SLUG"'),
      );
      expect(await unknown.text()).toBe(await known.text());
    }
  });

  test('a revoked API key is refused on the very next request', async () => {
    verifies('AUTH-APIKEY-REVOKE');
    const admin = sdkFor(g, aToken).client;
    const { data: key } = await sdk.createApiKey({ client: admin, throwOnError: true, body: { name: 'short-lived' } });
    expect((await mcp(a.slug, { 'x-api-key': key.key })).status).toBe(200);
    expect((await sdk.revokeApiKey({ client: admin, path: { keyId: key.id } })).response.status).toBe(200);
    await expectError(
      await mcp(a.slug, { 'x-api-key': key.key }),
      401,
      { error: 'unauthenticated', message: 'The API key is invalid or revoked.' },
      mcpChallenge(a),
    );
    expect((await mcp(a.slug, { 'x-api-key': a.apiKey })).status).toBe(200);
  });

  test('an org:manage-only token may not call tools: 403 insufficient_scope', async () => {
    verifies('AUTH-SCOPE-MCP-CALL');
    const manageOnly = await tokenFor(g, a.clientId, a.clientSecret, 'org:manage');
    const res = await mcp(a.slug, bearer(manageOnly));
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(mcpChallenge(a, 'error="insufficient_scope", scope="mcp:call"'));
    expect(((await res.json()) as { error: string }).error).toBe('insufficient_scope');
  });

  test('an API key sent as a bearer token is not a token: the answer says where it goes (decision 0365)', async () => {
    const body = { error: 'unauthenticated', message: 'This is an API key: send it in the X-API-Key header, not as Authorization: Bearer.' };
    await expectError(await mcp(a.slug, bearer(a.apiKey)), 401, body, mcpChallenge(a, 'error="invalid_token"'));
  });
});

describe('REST credentials', () => {
  test('an mcp:call-only token on /api/*: 403 insufficient_scope, nothing done', async () => {
    verifies('REST-ORG-MANAGE-SCOPE');
    const callOnly = await tokenFor(g, a.clientId, a.clientSecret, 'mcp:call');
    expect((await mcp(a.slug, bearer(callOnly))).status).toBe(200);
    const challenge = 'Bearer realm="toolgate", error="insufficient_scope", scope="org:manage"';
    for (const [method, path, body] of [
      ['GET', '/api/org', undefined],
      ['GET', '/api/org/api-keys', undefined],
      ['POST', '/api/org/api-keys', { name: 'sneaky' }],
    ] as const) {
      const res = await api(g, method, path, callOnly, body);
      expect(res.status).toBe(403);
      expect(res.headers.get('www-authenticate')).toBe(challenge);
      expect(((await res.json()) as { error: string }).error).toBe('insufficient_scope');
    }
    const { api_keys: keys } = (await sdk.listApiKeys({ client: sdkFor(g, aToken).client, throwOnError: true })).data;
    expect(keys.map((k) => k.name)).not.toContain('sneaky');
  });

  test('an API key is not accepted on /api/*', async () => {
    verifies('REST-BEARER-ONLY');
    const message =
      'This is an API key: API keys work only at an MCP endpoint, in the X-API-Key header. /api/* takes an OAuth access token with the org:manage scope.';
    await expectError(await api(g, 'GET', '/api/org', a.apiKey), 401, { error: 'unauthenticated', message }, INVALID_TOKEN_CHALLENGE);
    expect((await api(g, 'GET', '/api/org', null, undefined, { 'x-api-key': a.apiKey })).status).toBe(401);
  });

  test("another org's id in the path is 404 org_not_found, exactly like a random id", async () => {
    verifies('REST-BOLA');
    for (const [method, suffix] of [
      ['GET', 'status'],
      ['POST', 'provision'],
    ] as const) {
      const foreign = await api(g, method, `/api/mcp/${b.orgId}/${suffix}`, aToken);
      const random = await api(g, method, `/api/mcp/${randomUUID()}/${suffix}`, aToken);
      expect(foreign.status).toBe(404);
      const body = await foreign.text();
      expect(JSON.parse(body)).toEqual({ error: 'org_not_found', message: 'No such org.' });
      expect(body).toBe(await random.text());
      expect(random.status).toBe(404);
    }
    expect((await api(g, 'GET', `/api/mcp/${a.orgId}/status`, aToken)).status).toBe(200);
  });
});

describe('operator endpoint', () => {
  const body = { slug: `op-${Date.now().toString(36)}`, name: 'Operator test' };
  test('a wrong, missing or org token is 401; the right one creates', async () => {
    await expectError(
      await api(g, 'POST', '/operator/orgs', `${OPERATOR_TOKEN}x`, body),
      401,
      { error: 'unauthenticated', message: 'The operator token is invalid.' },
      INVALID_TOKEN_CHALLENGE,
    );
    const missing = await api(g, 'POST', '/operator/orgs', null, body);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe(NO_CREDENTIAL_CHALLENGE);
    expect((await api(g, 'POST', '/operator/orgs', aToken, body)).status).toBe(401);
    expect((await api(g, 'POST', '/operator/orgs', null, body, { 'x-api-key': OPERATOR_TOKEN })).status).toBe(401);
    expect((await api(g, 'POST', `/operator/orgs?token=${OPERATOR_TOKEN}`, null, body)).status).toBe(401);
    expect((await api(g, 'POST', '/operator/orgs', OPERATOR_TOKEN, body)).status).toBe(201);
  });
});
