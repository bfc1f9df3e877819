// Issue 29: each refusal of the org's authorization server, on its own, against a real gateway (PGlite) and a real
// https server of client ID metadata documents (a test CA the gateway is told to trust). Codes are minted by the
// consent step's own function (auth/oauth-server/consent.ts), as the consent page does after the person allows.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { grantConsent } from '../src/auth/oauth-server/consent.ts';
import { BASE, OPERATOR_TOKEN, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { makeTestCa, opensslPresent, startMetadataServer, type MetadataServer } from './support/mcp-sign-in.ts';
import { addMember } from './support/members.ts';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/store/db.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { verifies } from './requirements.ts';

const HOOK_TIMEOUT_MS = 60_000;
const CIMD_HOST = 'agent-metadata.test';
const REDIRECT = 'http://127.0.0.1:47823/callback';

let g: TestGateway;
let a: Onboarded;
let b: Onboarded;
let metadata: MetadataServer | null = null;
let clientA: string; // a pre-registered client of org A
let clientA2: string;

beforeAll(async () => {
  const ca = opensslPresent ? makeTestCa(CIMD_HOST) : null;
  if (ca) metadata = startMetadataServer(ca, CIMD_HOST, REDIRECT);
  const resolve = async (host: string) => (host === CIMD_HOST ? ['127.0.0.1'] : ['203.0.113.1']);
  g = await startTestGateway(
    'pglite',
    metadata ? { TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${CIMD_HOST}:${metadata.port}`, TOOLGATE_OUTBOUND_CA_FILE: ca!.caFile } : {},
    undefined,
    { resolve },
  );
  a = await onboard(g);
  b = await onboard(g);
  const manage = await tokenFor(g, a.clientId, a.clientSecret);
  const make = async (name: string) => {
    const res = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: name, redirect_uris: [REDIRECT] });
    expect(res.status).toBe(201);
    return ((await res.json()) as { client_id: string }).client_id;
  };
  clientA = await make('agent one');
  clientA2 = await make('agent two');
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  metadata?.stop();
  await g?.close();
}, HOOK_TIMEOUT_MS);

const verifier = () => randomBytes(32).toString('base64url');
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');

function authorize(slug: string, params: Record<string, string>) {
  const url = new URL(`${BASE}/oauth/${slug}/authorize`);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return g.handle(new Request(url));
}

const goodParams = (clientId: string, v = verifier()) => ({
  response_type: 'code',
  client_id: clientId,
  redirect_uri: REDIRECT,
  state: 'st-1',
  code_challenge: challengeOf(v),
  code_challenge_method: 'S256',
  resource: `${BASE}/mcp/${a.slug}`,
});

function token(slug: string, form: Record<string, string>) {
  return g.handle(
    new Request(`${BASE}/oauth/${slug}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    }),
  );
}

/** A code as the consent page issues it once the person allows (org A, the given client). */
async function mintCode(clientId: string, codeVerifier: string, org: Onboarded = a): Promise<string> {
  return grantConsent(
    g.deps.store.db,
    {
      org: { id: org.orgId, slug: org.slug, name: org.slug },
      request: {
        client: { clientId, kind: 'preregistered', name: null, redirectUris: [REDIRECT] },
        redirectUri: REDIRECT,
        state: 's',
        codeChallenge: challengeOf(codeVerifier),
        scopes: ['mcp:call'],
      },
      person: { subject: 'user-1', email: 'user-1@example.com', roles: ['contributor'], attributes: {} },
      csrf: 'unused',
      expiresAt: Date.now() + 60_000,
    },
    ['mcp:call'],
  );
}

async function tokensFor(clientId = clientA) {
  const v = verifier();
  const code = await mintCode(clientId, v);
  const res = await token(a.slug, { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: v });
  expect(res.status).toBe(200);
  return { code, v, ...((await res.json()) as { access_token: string; refresh_token: string }) };
}

const mcp = (slug: string, accessToken: string) =>
  g.handle(
    new Request(`${BASE}/mcp/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );

async function oauthError(res: Response): Promise<string> {
  expect(res.status).toBe(400);
  return ((await res.json()) as { error: string }).error;
}

/** An authorization error redirected to the client: its error, with state and iss (RFC 9207). */
function redirectedError(res: Response): string | null {
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  expect(location.href.startsWith(REDIRECT)).toBe(true);
  expect(location.searchParams.get('state')).toBe('st-1');
  expect(location.searchParams.get('iss')).toBe(`${BASE}/oauth/${a.slug}`);
  return location.searchParams.get('error');
}

describe('authorization request refusals', () => {
  test('PKCE missing: refused (redirected with invalid_request)', async () => {
    const { code_challenge: _c, code_challenge_method: _m, ...params } = goodParams(clientA);
    expect(redirectedError(await authorize(a.slug, params))).toBe('invalid_request');
  });

  test('PKCE plain: refused', async () => {
    const v = verifier();
    expect(redirectedError(await authorize(a.slug, { ...goodParams(clientA), code_challenge: v, code_challenge_method: 'plain' }))).toBe('invalid_request');
  });

  test('a resource other than the org MCP URL: invalid_target', async () => {
    expect(redirectedError(await authorize(a.slug, { ...goodParams(clientA), resource: `${BASE}/mcp/${b.slug}` }))).toBe('invalid_target');
  });

  test('a redirect_uri not among the client redirect URIs: an error page, nothing redirected', async () => {
    for (const redirect of [`${REDIRECT}/other`, 'https://evil.example/cb', `${REDIRECT}?x=1`]) {
      const res = await authorize(a.slug, { ...goodParams(clientA), redirect_uri: redirect });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
  });

  test("another org's client is unknown here", async () => {
    const res = await authorize(b.slug, { ...goodParams(clientA), resource: `${BASE}/mcp/${b.slug}` });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  test('an org without IdP sign-in says so on a page (decision 0246)', async () => {
    const res = await authorize(a.slug, goodParams(clientA));
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('no way to sign people in');
  });
});

describe.skipIf(!opensslPresent)('client ID metadata documents', () => {
  test('a good document is fetched through the policy and cached by its Cache-Control', async () => {
    const url = metadata!.url('/agent.json');
    for (let i = 0; i < 2; i++) expect((await authorize(a.slug, goodParams(url))).status).toBe(403); // on to the (missing) IdP
    expect(metadata!.hits.get('/agent.json')).toBe(1);
    // Its redirect_uris are enforced.
    expect((await authorize(a.slug, { ...goodParams(url), redirect_uri: 'https://evil.example/cb' })).status).toBe(400);
  });

  test("without the test CA (TOOLGATE_OUTBOUND_CA_FILE) the same server's certificate is refused", async () => {
    const untrusting = await startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${CIMD_HOST}:${metadata!.port}` }, undefined, {
      resolve: async () => ['127.0.0.1'],
    });
    try {
      const c = await onboard(untrusting);
      const url = new URL(`${BASE}/oauth/${c.slug}/authorize`);
      for (const [k, v] of Object.entries({ ...goodParams(metadata!.url('/no-cache-here.json')), resource: `${BASE}/mcp/${c.slug}` }))
        url.searchParams.set(k, v);
      const res = await untrusting.handle(new Request(url));
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('could not be fetched');
    } finally {
      await untrusting.close();
    }
  }, 30_000);

  test('a client_id URL on a private address, or not https, is refused', async () => {
    for (const clientId of [
      `https://127.0.0.1:${metadata!.port}/agent.json`,
      `https://10.0.0.7/agent.json`,
      `http://${CIMD_HOST}:${metadata!.port}/agent.json`,
    ]) {
      const res = await authorize(a.slug, goodParams(clientId));
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
  });

  test('an oversized document is refused', async () => {
    const res = await authorize(a.slug, goodParams(metadata!.url('/big.json')));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('exceeds');
  });

  test('a slow document is refused at the time cap', async () => {
    const started = Date.now();
    const res = await authorize(a.slug, goodParams(metadata!.url('/slow.json')));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('timed out');
    expect(Date.now() - started).toBeLessThan(5500);
  }, 15_000);
});

describe('token endpoint refusals', () => {
  test('a verifier that does not match the challenge: invalid_grant', async () => {
    const code = await mintCode(clientA, verifier());
    expect(
      await oauthError(await token(a.slug, { grant_type: 'authorization_code', code, client_id: clientA, redirect_uri: REDIRECT, code_verifier: verifier() })),
    ).toBe('invalid_grant');
  });

  test('no verifier: invalid_request', async () => {
    const code = await mintCode(clientA, verifier());
    expect(await oauthError(await token(a.slug, { grant_type: 'authorization_code', code, client_id: clientA, redirect_uri: REDIRECT }))).toBe(
      'invalid_request',
    );
  });

  test('a replayed code is refused and revokes what was issued on it', async () => {
    const first = await tokensFor();
    expect((await mcp(a.slug, first.access_token)).status).toBe(200);
    const replay = await token(a.slug, {
      grant_type: 'authorization_code',
      code: first.code,
      client_id: clientA,
      redirect_uri: REDIRECT,
      code_verifier: first.v,
    });
    expect(await oauthError(replay)).toBe('invalid_grant');
    expect((await mcp(a.slug, first.access_token)).status).toBe(401);
  });

  test('a code issued to another client: invalid_grant', async () => {
    const v = verifier();
    const code = await mintCode(clientA, v);
    expect(
      await oauthError(await token(a.slug, { grant_type: 'authorization_code', code, client_id: clientA2, redirect_uri: REDIRECT, code_verifier: v })),
    ).toBe('invalid_grant');
  });

  test("iss mix-up: org A's code at org B's token endpoint is invalid there", async () => {
    const v = verifier();
    const code = await mintCode(clientA, v);
    expect(
      await oauthError(await token(b.slug, { grant_type: 'authorization_code', code, client_id: clientA, redirect_uri: REDIRECT, code_verifier: v })),
    ).toBe('invalid_grant');
  });

  test('refresh tokens rotate; a reused one revokes the family', async () => {
    const first = await tokensFor();
    const rotated = await token(a.slug, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientA });
    expect(rotated.status).toBe(200);
    const second = (await rotated.json()) as { access_token: string; refresh_token: string };
    expect((await mcp(a.slug, second.access_token)).status).toBe(200);
    expect(await oauthError(await token(a.slug, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientA }))).toBe(
      'invalid_grant',
    );
    // The whole family is gone: the newest refresh token and every access token.
    expect(await oauthError(await token(a.slug, { grant_type: 'refresh_token', refresh_token: second.refresh_token, client_id: clientA }))).toBe(
      'invalid_grant',
    );
    expect((await mcp(a.slug, second.access_token)).status).toBe(401);
    expect((await mcp(a.slug, first.access_token)).status).toBe(401);
  });

  test("a token for org A's resource is refused at org B's endpoint and at /api/*", async () => {
    const { access_token } = await tokensFor();
    expect((await mcp(a.slug, access_token)).status).toBe(200);
    expect((await mcp(b.slug, access_token)).status).toBe(401);
    expect((await api(g, 'GET', '/api/org', access_token)).status).toBe(401);
  });

  test('an expired token is refused', async () => {
    const { access_token } = await tokensFor();
    const claims = JSON.parse(Buffer.from(access_token.split('.')[1]!, 'base64url').toString()) as { tg_grant: string };
    const expired = await g.deps.signer.issueSignedIn({
      issuer: `${BASE}/oauth/${a.slug}`,
      audience: `${BASE}/mcp/${a.slug}`,
      orgId: a.orgId,
      grantId: claims.tg_grant,
      subject: 'user-1',
      clientId: clientA,
      scopes: ['mcp:call'],
      ttlSeconds: -120,
    });
    expect((await mcp(a.slug, expired)).status).toBe(401);
  });

  test('keys rotate without signing anyone out: old tokens keep working, new ones carry the new key', async () => {
    const before = await tokensFor();
    const kid = await g.deps.signer.rotate();
    expect((await mcp(a.slug, before.access_token)).status).toBe(200);
    const res = await token(a.slug, { grant_type: 'refresh_token', refresh_token: before.refresh_token, client_id: clientA });
    const after = (await res.json()) as { access_token: string };
    expect(JSON.parse(Buffer.from(after.access_token.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    expect((await mcp(a.slug, after.access_token)).status).toBe(200);
  });

  test('revocation (RFC 7009) of a refresh token ends the grant; unknown tokens get the same 200', async () => {
    const { access_token, refresh_token } = await tokensFor();
    const revoke = (t: string) =>
      g.handle(
        new Request(`${BASE}/oauth/${a.slug}/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: t, client_id: clientA }),
        }),
      );
    expect((await revoke('not-a-token')).status).toBe(200);
    expect((await revoke(refresh_token)).status).toBe(200);
    expect((await mcp(a.slug, access_token)).status).toBe(401);
  });
});

describe('a suspended org', () => {
  test('no sign-in starts and no token is issued', async () => {
    const c = await onboard(g);
    const op = await g.handle(
      new Request(`${BASE}/operator/orgs/${c.slug}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
        body: JSON.stringify({ suspended: true }),
      }),
    );
    expect(op.status).toBe(200);
    expect((await authorize(c.slug, { ...goodParams(clientA), resource: `${BASE}/mcp/${c.slug}` })).status).toBe(403);
    const res = await token(c.slug, { grant_type: 'refresh_token', refresh_token: 'x', client_id: clientA });
    expect(await oauthError(res)).toBe('unauthorized_client');
  });
});

describe('dynamic client registration', () => {
  const register = (slug: string, body: unknown) =>
    g.handle(
      new Request(`${BASE}/oauth/${slug}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    );
  const good = { client_name: 'Flood', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };
  // Registration is for orgs someone can sign in to (issue 40): each gets a member.
  beforeAll(async () => {
    for (const org of [a, b]) await addMember(g, await tokenFor(g, org.clientId, org.clientSecret), `someone@${org.slug}.example`, 'a long password');
  }, HOOK_TIMEOUT_MS);

  test('bad metadata is refused: a javascript: redirect, a confidential client', async () => {
    expect((await register(a.slug, { redirect_uris: ['javascript:alert(1)'] })).status).toBe(400);
    expect((await register(a.slug, { ...good, token_endpoint_auth_method: 'client_secret_basic' })).status).toBe(400);
  });

  test('a flood is rate-limited (429 with Retry-After)', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => register(b.slug, good)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const limited = answers.find((r) => r.status === 429)!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  test('an org can switch it off; the metadata then names no registration endpoint', async () => {
    const manage = await tokenFor(g, a.clientId, a.clientSecret);
    expect((await api(g, 'PUT', '/api/org/mcp-sign-in', manage, { registration_enabled: false })).status).toBe(200);
    await Bun.sleep(1100);
    expect((await register(a.slug, good)).status).toBe(403);
    const meta = (await (await g.handle(new Request(`${BASE}/.well-known/oauth-authorization-server/oauth/${a.slug}`))).json()) as Record<string, unknown>;
    expect(meta.registration_endpoint).toBeUndefined();
  });
});

describe('the member page’s passkey options', () => {
  test('a few per second per address: a flood of renders writes at most that many challenges, the password form stays', async () => {
    verifies('PASSKEY-OPTIONS-LIMITED');
    // Each rendering of the member page issues a passkey challenge (a stored row); the console's anonymous options
    // are 5 a second per address (decision 0380), and this page now shares that window.
    const manage = await tokenFor(g, b.clientId, b.clientSecret);
    await addMember(g, manage, 'flood@b.example', 'member password 0001');
    const created = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: 'agent of b', redirect_uris: [REDIRECT] });
    const clientB = ((await created.json()) as { client_id: string }).client_id;
    const challenges = async () => Number(rowsOf<{ n: string }>(await g.deps.store.db.execute(sql`SELECT count(*) AS n FROM passkey_challenges`))[0]!.n);
    const render = (address: string) => {
      const url = new URL(`${BASE}/oauth/${b.slug}/authorize`);
      for (const [k, v] of Object.entries({ ...goodParams(clientB), resource: `${BASE}/mcp/${b.slug}` })) url.searchParams.set(k, v);
      const request = new Request(url);
      notePeerAddress(request, address);
      return g.handle(request);
    };
    const before = await challenges();
    const pages = await Promise.all(Array.from({ length: 20 }, () => render('198.51.100.60')));
    const htmls = await Promise.all(pages.map((p) => p.text()));
    expect(pages.map((p) => p.status).filter((s) => s !== 200)).toEqual([]);
    expect(htmls.every((h) => h.includes('name="password"'))).toBe(true);
    const offered = htmls.filter((h) => h.includes('id="passkey-options"')).length;
    // One window per second: a burst that straddles a second boundary may get two windows' worth.
    expect(offered).toBeGreaterThanOrEqual(1);
    expect(offered).toBeLessThanOrEqual(10);
    expect((await challenges()) - before).toBe(offered);
    // Another address has its own window.
    expect(await (await render('198.51.100.61')).text()).toContain('id="passkey-options"');
  });
});
