// The console's sign-in, session and pass-through, checked on the responses themselves (app.handle, real gateway on
// PGlite, a real OpenID provider for discovery): cookie attributes, CSRF, session fixation and logout, what the
// pass-through refuses to forward, the login transaction (state, PKCE, return targets), and the page's headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { eq } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { idpConfigs } from '../src/store/schema.ts';
import { beginLogin, finishLogin, openLogin, sealLogin, SignInError } from '../src/auth/idp/oidc-client.ts';
import { consoleSecretContext } from '../src/auth/idp/service.ts';
import { createIdpVerifier } from '../src/auth/idp/verifier.ts';
import { parseOutboundPolicy } from '../src/net/outbound.ts';
import { SecretBox } from '../src/util/crypto.ts';
import { makeKey, nowSec, signToken, startFakeIdp, type FakeIdp, type TestKey } from './support/idp.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { startOidcProvider, type TestOidc } from './support/oidc.ts';
import { sdkFor } from './support/sdk.ts';

const PUBLIC = 'http://127.0.0.1:4199';

describe('console sign-in and session', () => {
  let gateway: TestGateway;
  let oidc: TestOidc;
  let org: Onboarded;
  let manage: string;

  beforeAll(async () => {
    oidc = await startOidcProvider(`${PUBLIC}/console/auth/callback`, {});
    gateway = await startTestGateway('pglite', {
      TOOLGATE_PUBLIC_URL: PUBLIC,
      TOOLGATE_ALLOWED_HOSTS: 'gateway.test',
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: oidc.hostPort,
    });
    org = await onboard(gateway);
    manage = await tokenFor(gateway, org.clientId, org.clientSecret);
  }, 30_000);
  afterAll(async () => {
    await gateway?.close();
    await oidc?.stop();
  }, 10_000);

  const send = (path: string, init: RequestInit & { cookie?: string; csrf?: string } = {}) => {
    const headers = new Headers(init.headers);
    if (init.cookie) headers.set('cookie', init.cookie);
    if (init.csrf) headers.set('x-toolgate-csrf', init.csrf);
    return gateway.handle(new Request(`${PUBLIC}${path}`, { ...init, headers }));
  };
  const cookiePair = (response: Response, name: string) =>
    response.headers
      .getSetCookie()
      .find((c) => c.startsWith(`${name}=`))
      ?.split(';')[0] ?? null;

  async function signIn(clientId = org.clientId, clientSecret = org.clientSecret, cookie?: string) {
    const response = await send('/console/auth/client', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: clientId, client_secret: clientSecret }),
      cookie,
    });
    return { response, cookie: cookiePair(response, 'tg_console') };
  }
  async function csrfOf(cookie: string) {
    const response = await send('/console/session', { cookie });
    expect(response.status).toBe(200);
    return ((await response.json()) as { csrf_token: string }).csrf_token;
  }

  test('the page and its assets: our own bundle under a CSP with no inline script, not frameable', async () => {
    verifies('CONSOLE-HARDENING', 'CONSOLE-OFFLINE');
    const page = await send('/console');
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    expect([...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].every((m) => m[1] === '')).toBe(true);
    const js = await send('/console/assets/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toStartWith('text/javascript');
    const bundle = await js.text();
    expect(bundle.length).toBeGreaterThan(10_000);
    expect(bundle).not.toMatch(/https:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.(com|net|org|io)\//);
    for (const name of ['main.tsx', '../package.json', 'constructor']) expect((await send(`/console/assets/${name}`)).status).toBe(404);
    // The Host check applies here as on REST (DNS rebinding).
    expect((await gateway.handle(new Request('http://evil.example/console'))).status).toBe(403);
  });

  test('client sign-in: a fresh server-side session in an HttpOnly SameSite=Strict cookie; org:manage is required', async () => {
    verifies('CONSOLE-SIGNIN-CLIENT', 'CONSOLE-SESSION');
    const wrong = await signIn(org.clientId, 'tgs_wrong');
    expect(wrong.response.status).toBe(401);
    expect(wrong.cookie).toBeNull();
    const mcpOnly = await sdk.createOAuthClient({ client: sdkFor(gateway, manage).client, body: { name: 'agent', scopes: ['mcp:call'] } });
    const refused = await signIn(mcpOnly.data!.client_id, mcpOnly.data!.client_secret);
    expect(refused.response.status).toBe(403);
    expect(((await refused.response.json()) as { error: string }).error).toBe('insufficient_scope');

    const { response, cookie } = await signIn();
    expect(response.status).toBe(200);
    const set = response.headers.getSetCookie().find((c) => c.startsWith('tg_console='))!;
    expect(set).toContain('HttpOnly');
    expect(set).toContain('SameSite=Strict');
    // Path=/: the session is the credential of the page's /api/* calls too (decision 0317).
    expect(set).toContain('Path=/;');
    expect(set).toMatch(/Max-Age=\d+/);
    const session = await send('/console/session', { cookie: cookie! });
    const body = (await session.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ org_id: org.orgId, kind: 'oauth_client', actor: org.clientId, org_level: true });
    // The session never hands the bearer to the page.
    expect(JSON.stringify(body)).not.toMatch(/eyJ/);

    // Session fixation: signing in again issues a new id and ends the old session.
    const again = await signIn(org.clientId, org.clientSecret, cookie!);
    expect(again.cookie).not.toBe(cookie);
    expect((await send('/console/session', { cookie: cookie! })).status).toBe(401);
    expect((await send('/console/session', { cookie: again.cookie! })).status).toBe(200);
    // A cookie the gateway never issued is no session.
    expect((await send('/console/session', { cookie: 'tg_console=made-up' })).status).toBe(401);
  });

  test('the pass-through: CSRF token required, same-site only, /api/* only, and logout ends the session on the server', async () => {
    verifies('CONSOLE-SESSION');
    const { cookie } = await signIn();
    const csrf = await csrfOf(cookie!);
    expect((await send('/api/org')).status).toBe(401);
    expect((await send('/api/org', { cookie: cookie! })).status).toBe(403);
    expect((await send('/api/org', { cookie: cookie!, csrf: 'x'.repeat(csrf.length) })).status).toBe(403);
    const ok = await send('/api/org', { cookie: cookie!, csrf });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { slug: string }).slug).toBe(org.slug);
    // A page of another site cannot make the call, even if it got the token.
    expect((await send('/api/org', { cookie: cookie!, csrf, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    // The session is a credential of the management interface only: never of the operator API.
    expect((await send('/operator/orgs', { cookie: cookie!, csrf })).status).toBe(401);
    // CSRF on a write with the session as credential: cookie-only, a wrong token, another site's fetch, a foreign
    // Origin are each refused before the handler runs (nothing is created).
    const write = (extra: { csrf?: string; headers?: Record<string, string> }) =>
      send('/api/org/api-keys', {
        method: 'POST',
        cookie: cookie!,
        ...extra,
        headers: { 'content-type': 'application/json', ...extra.headers },
        body: JSON.stringify({ name: 'forged' }),
      });
    for (const [extra, code] of [
      [{}, 'csrf'],
      [{ csrf: 'x'.repeat(csrf.length) }, 'csrf'],
      [{ csrf, headers: { 'sec-fetch-site': 'cross-site' } }, 'csrf'],
      [{ csrf, headers: { 'sec-fetch-site': 'same-site' } }, 'csrf'],
      [{ csrf, headers: { origin: 'https://evil.example' } }, 'forbidden_origin'],
    ] as const) {
      const refused = await write(extra);
      expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([403, code]);
    }
    const names = ((await (await send('/api/org/api-keys', { cookie: cookie!, csrf })).json()) as { api_keys: { name: string }[] }).api_keys;
    expect(names.map((k) => k.name)).not.toContain('forged');
    // A bearer wins over the cookie: an API client is judged by its Authorization header alone.
    expect((await send('/api/org', { cookie: cookie!, headers: { authorization: 'Bearer not-a-token' } })).status).toBe(401);
    // The MCP endpoint takes the session too (the playground's calls, decision 0335): the next test.
    // Writes go through with their body; REST's own errors come back as they are.
    const created = await send('/api/org/api-keys', {
      method: 'POST',
      cookie: cookie!,
      csrf,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'via-console' }),
    });
    expect(created.status).toBe(201);
    // The router's body cap applies to what passes through.
    const huge = await send('/api/org/api-keys', {
      method: 'POST',
      cookie: cookie!,
      csrf,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(gateway.config.maxBodyBytes + 10) }),
    });
    expect(huge.status).toBe(413);
    const invalid = await send('/api/org/api-keys', {
      method: 'POST',
      cookie: cookie!,
      csrf,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: string }).error).toBe('validation_error');

    expect((await send('/console/auth/logout', { method: 'POST', cookie: cookie! })).status).toBe(403);
    const out = await send('/console/auth/logout', { method: 'POST', cookie: cookie!, csrf });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie().join(';')).toContain('Max-Age=0');
    // The old cookie, replayed, is nothing any more.
    expect((await send('/api/org', { cookie: cookie!, csrf })).status).toBe(401);
  });

  test('the session on /mcp/*: CSRF token, same-site and our own Origin required; a bearer or an API key wins over it', async () => {
    verifies('CONSOLE-SESSION');
    const { cookie } = await signIn();
    const csrf = await csrfOf(cookie!);
    const mcp = (extra: { cookie?: string; csrf?: string; headers?: Record<string, string> }) =>
      send(`/mcp/${org.slug}`, {
        method: 'POST',
        ...extra,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra.headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
    const ok = await mcp({ cookie: cookie!, csrf });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0);
    // Cookie-only, a wrong token, another site's fetch, a foreign or opaque Origin: refused before anything runs.
    for (const [extra, code] of [
      [{}, 'csrf'],
      [{ csrf: 'x'.repeat(csrf.length) }, 'csrf'],
      [{ csrf, headers: { 'sec-fetch-site': 'cross-site' } }, 'csrf'],
      [{ csrf, headers: { 'sec-fetch-site': 'same-site' } }, 'csrf'],
      [{ csrf, headers: { origin: 'https://evil.example' } }, 'forbidden_origin'],
      [{ csrf, headers: { origin: 'null' } }, 'forbidden_origin'],
    ] as const) {
      const refused = await mcp({ cookie: cookie!, ...extra });
      expect([JSON.stringify(extra), refused.status, ((await refused.json()) as { error: string }).error]).toEqual([JSON.stringify(extra), 403, code]);
    }
    // No session, or a session that ended: 401, as any missing credential.
    expect((await mcp({ cookie: 'tg_console=made-up', csrf })).status).toBe(401);
    // A bearer or an API key wins over the cookie: an MCP client is judged by its own credential alone.
    expect((await mcp({ cookie: cookie!, csrf, headers: { authorization: 'Bearer not-a-token' } })).status).toBe(401);
    expect((await mcp({ cookie: cookie!, csrf, headers: { 'x-api-key': 'tg_not-a-key' } })).status).toBe(401);
    expect((await mcp({ cookie: cookie!, headers: { 'x-api-key': org.apiKey } })).status).toBe(200);
    // The session of one org is no credential at another org's endpoint.
    const other = await onboard(gateway);
    const foreign = await send(`/mcp/${other.slug}`, {
      method: 'POST',
      cookie: cookie!,
      csrf,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(foreign.status).toBe(401);
  });

  test('a foreign Origin or Origin: null is refused on every console call before anything runs, as on the MCP endpoint', async () => {
    verifies('CONSOLE-ORIGIN');
    const { cookie } = await signIn();
    const csrf = await csrfOf(cookie!);
    const keyNames = async () => {
      const listed = await send('/api/org/api-keys', { cookie: cookie!, csrf });
      expect(listed.status).toBe(200);
      return ((await listed.json()) as { api_keys: { name: string }[] }).api_keys.map((k) => k.name);
    };
    const json = { 'content-type': 'application/json' };
    // Another site, another port or scheme of this host, an opaque origin, and a malformed one. No Sec-Fetch-Site is
    // sent: the Origin alone must refuse, with the session cookie and the right CSRF token attached.
    for (const origin of ['https://evil.example', 'http://127.0.0.1:4200', 'https://127.0.0.1:4199', 'null', 'not an origin']) {
      const headers = { ...json, origin };
      const refusals = [
        await send('/api/org/api-keys', { method: 'POST', cookie: cookie!, csrf, headers, body: JSON.stringify({ name: 'from-elsewhere' }) }),
        await send('/api/org', { cookie: cookie!, csrf, headers }),
        await send('/console/session', { cookie: cookie!, headers }),
        await send('/console/auth/client', { method: 'POST', headers, body: JSON.stringify({ client_id: org.clientId, client_secret: org.clientSecret }) }),
        await send('/console/auth/logout', { method: 'POST', cookie: cookie!, csrf, headers }),
      ];
      for (const refused of refusals) {
        expect([origin, refused.status]).toEqual([origin, 403]);
        expect(((await refused.json()) as { error: string }).error).toBe('forbidden_origin');
        // No sign-in and no sign-out happened: no cookie was set or cleared.
        expect(refused.headers.getSetCookie()).toEqual([]);
      }
    }
    // Nothing ran: no key was created, and the session is still signed in.
    expect(await keyNames()).not.toContain('from-elsewhere');
    expect((await send('/console/session', { cookie: cookie! })).status).toBe(200);
    // The gateway's own origin (and its loopback spellings, the public URL being loopback) passes, and so does no Origin.
    for (const [i, origin] of [PUBLIC, 'http://localhost:4199', 'http://[::1]:4199'].entries()) {
      const created = await send('/api/org/api-keys', {
        method: 'POST',
        cookie: cookie!,
        csrf,
        headers: { ...json, origin },
        body: JSON.stringify({ name: `own-origin-${i}` }),
      });
      expect([origin, created.status]).toEqual([origin, 201]);
    }
    const signedIn = await send('/console/auth/client', {
      method: 'POST',
      headers: { ...json, origin: PUBLIC },
      body: JSON.stringify({ client_id: org.clientId, client_secret: org.clientSecret }),
    });
    expect(signedIn.status).toBe(200);
    expect(await keyNames()).toEqual(expect.arrayContaining(['own-origin-0', 'own-origin-1', 'own-origin-2']));
  });

  test('a session ends when its credential does: a revoked OAuth client signs the console out', async () => {
    verifies('CONSOLE-SESSION');
    const created = await sdk.createOAuthClient({ client: sdkFor(gateway, manage).client, body: { name: 'console-admin', scopes: ['org:manage'] } });
    const { cookie } = await signIn(created.data!.client_id, created.data!.client_secret);
    expect((await send('/console/session', { cookie: cookie! })).status).toBe(200);
    await sdk.revokeOAuthClient({ client: sdkFor(gateway, manage).client, path: { clientId: created.data!.client_id } });
    expect((await send('/console/session', { cookie: cookie! })).status).toBe(401);
  });

  test('over https the cookies carry the __Host- prefix and Secure', async () => {
    verifies('CONSOLE-SESSION');
    const secure = await startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: 'https://console.example.test', TOOLGATE_ALLOWED_HOSTS: 'gateway.test' });
    try {
      const other = await onboard(secure);
      const response = await secure.handle(
        new Request('https://console.example.test/console/auth/client', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: other.clientId, client_secret: other.clientSecret }),
        }),
      );
      expect(response.status).toBe(200);
      const set = response.headers.getSetCookie()[0]!;
      expect(set).toStartWith('__Host-tg_console=');
      expect(set).toContain('Secure');
      expect(set).toContain('Path=/;');
      expect(set).not.toContain('Domain');
    } finally {
      await secure.close();
    }
  }, 30_000);

  test('IdP settings: the console client secret is sealed, never returned, kept on re-save for the same client', async () => {
    verifies('CONSOLE-SIGNIN-IDP');
    const client = sdkFor(gateway, manage).client;
    const base = { issuer: oidc.issuer, jwks_uri: oidc.jwksUri, audience: oidc.audience };
    const saved = await sdk.setIdpConfig({ client, body: { ...base, console_client_id: oidc.clientId, console_client_secret: oidc.clientSecret } });
    expect(saved.data).toMatchObject({ console_client_id: oidc.clientId, console_client_secret_set: true });
    expect(JSON.stringify(saved.data)).not.toContain(oidc.clientSecret);
    const [row] = await gateway.deps.store.db.select().from(idpConfigs).where(eq(idpConfigs.orgId, org.orgId));
    expect(row!.consoleClientSecretSealed).toStartWith('v1.');
    expect(row!.consoleClientSecretSealed).not.toContain(oidc.clientSecret);
    expect((await sdk.setIdpConfig({ client, body: { ...base, console_client_id: oidc.clientId } })).data!.console_client_secret_set).toBe(true);
    expect((await sdk.setIdpConfig({ client, body: { ...base, console_client_id: 'another-client' } })).data!.console_client_secret_set).toBe(false);
    expect(
      (await sdk.setIdpConfig({ client, body: { ...base, console_client_id: oidc.clientId, console_client_secret: oidc.clientSecret } })).data!
        .console_client_secret_set,
    ).toBe(true);
  });

  test('IdP sign-in starts with PKCE S256, state and nonce; the return target is a page name; a foreign or stale state is refused', async () => {
    verifies('CONSOLE-SIGNIN-IDP', 'CONSOLE-HARDENING');
    await sdk.setIdpConfig({
      client: sdkFor(gateway, manage).client,
      body: {
        issuer: oidc.issuer,
        jwks_uri: oidc.jwksUri,
        audience: oidc.audience,
        console_client_id: oidc.clientId,
        console_client_secret: oidc.clientSecret,
      },
    });
    // An unknown org and an org without a console client get the same answer.
    const bare = await onboard(gateway);
    const unknown = await send('/console/auth/idp?org=no-such-org');
    const without = await send(`/console/auth/idp?org=${bare.slug}`);
    expect(unknown.status).toBe(404);
    expect(without.status).toBe(404);
    expect((await unknown.text()).replace('no-such-org', 'X')).toBe((await without.text()).replace(bare.slug, 'X'));

    const start = await send(`/console/auth/idp?org=${org.slug}&return=${encodeURIComponent('//evil.example/x')}`);
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(location.origin).toBe(oidc.issuer);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('client_id')).toBe(oidc.clientId);
    expect(location.searchParams.get('redirect_uri')).toBe(`${PUBLIC}/console/auth/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('nonce')!.length).toBeGreaterThan(20);
    const state = location.searchParams.get('state')!;
    const set = start.headers.getSetCookie().find((c) => c.startsWith('tg_console_login='))!;
    expect(set).toContain('HttpOnly');
    expect(set).toContain('SameSite=Lax');
    const loginCookie = set.split(';')[0]!;
    const login = openLogin(gateway.deps.box, decodeURIComponent(loginCookie.slice('tg_console_login='.length)))!;
    expect(login.state).toBe(state);
    // The return target is a page name or nothing: a URL falls back to the overview.
    expect(login.returnTo).toBe('overview');

    // No transaction cookie (another browser, or a replay after it was used): refused, no session.
    const noCookie = await send(`/console/auth/callback?code=abc&state=${state}`);
    expect(noCookie.status).toBe(400);
    expect(noCookie.headers.getSetCookie().some((c) => c.startsWith('tg_console='))).toBe(false);
    // A state that is not this browser's: refused, and the transaction is gone.
    const foreign = await send('/console/auth/callback?code=abc&state=someone-elses', { cookie: loginCookie });
    expect(foreign.status).toBe(400);
    expect(foreign.headers.getSetCookie().find((c) => c.startsWith('tg_console_login='))).toContain('Max-Age=0');
    // An expired transaction, even with the right state.
    const stale = sealLogin(gateway.deps.box, { ...login, expiresAt: Date.now() - 1 });
    expect((await send(`/console/auth/callback?code=abc&state=${state}`, { cookie: `tg_console_login=${encodeURIComponent(stale)}` })).status).toBe(400);
    // The IdP's error is shown, escaped.
    const denied = await send(`/console/auth/callback?error=%3Cscript%3Ealert(1)%3C/script%3E&state=${state}`, { cookie: loginCookie });
    const html = await denied.text();
    expect(html).not.toContain('<script>');
    expect(html).toContain('&#60;script&#62;');
    // A valid state with a code the IdP never issued: the exchange fails, and no session starts.
    const bogus = await send(`/console/auth/callback?code=never-issued&state=${state}`, { cookie: loginCookie });
    expect(bogus.status).toBe(401);
    expect(bogus.headers.getSetCookie().some((c) => c.startsWith('tg_console='))).toBe(false);
  });
});

// The code exchange and the ID token check of src/auth/idp/oidc-client.ts against a local token endpoint that answers what the
// test decides (a real provider never sends a wrong nonce, so this is where the checks can be seen to refuse).
describe('console OIDC: the ID token must answer this sign-in', () => {
  let idp: FakeIdp;
  let key: TestKey;
  let tokenServer: ReturnType<typeof Bun.serve>;
  let answer: Record<string, unknown> = {};
  let lastForm: URLSearchParams | null = null;
  let lastAuth: string | null = null;
  const box = new SecretBox(new Uint8Array(32).fill(7));
  const orgId = '00000000-0000-4000-8000-000000000001';

  beforeAll(async () => {
    key = await makeKey('console-oidc');
    idp = startFakeIdp([key]);
    tokenServer = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: async (request) => {
        lastForm = new URLSearchParams(await request.text());
        lastAuth = request.headers.get('authorization');
        return Response.json(answer);
      },
    });
  });
  afterAll(() => {
    idp?.stop();
    tokenServer?.stop(true);
  });

  async function attempt(idClaims: Record<string, unknown>, withSecret = true) {
    const outbound = parseOutboundPolicy({ allowHosts: [idp.hostPort, `127.0.0.1:${tokenServer.port}`] });
    const login = beginLogin(orgId, 'overview');
    const config = {
      orgId,
      issuer: idp.issuer,
      jwksUri: idp.jwksUri,
      audience: 'https://api.example.test',
      roleClaim: 'role',
      emailClaim: 'email',
      defaultRole: null,
      updatedAt: new Date(),
      consoleClientId: 'console-client',
      consoleClientSecretSealed: withSecret ? box.encrypt('s3cret', consoleSecretContext(orgId)) : null,
    };
    answer = {
      id_token: await signToken(key, { iss: idp.issuer, aud: 'console-client', nonce: login.nonce, role: 'admin', email: 'a@example.com', ...idClaims }),
      access_token: await signToken(key, { iss: idp.issuer, aud: 'https://api.example.test', exp: nowSec() + 60 }),
    };
    return finishLogin({
      config,
      discovery: { issuer: idp.issuer, authorization_endpoint: `${idp.issuer}/auth`, token_endpoint: `http://127.0.0.1:${tokenServer.port}/token` },
      code: 'the-code',
      redirectUri: `${PUBLIC}/console/auth/callback`,
      login,
      box,
      outbound,
      verifier: createIdpVerifier({ outbound }),
    }).then(
      (signedIn) => ({ signedIn, login }),
      (err: Error) => ({ error: err, login }),
    );
  }

  test('a matching ID token signs in: roles by the org claim rules, PKCE verifier and client secret sent, lifetime the earlier exp', async () => {
    verifies('CONSOLE-SIGNIN-IDP', 'CONSOLE-ROLES');
    const result = await attempt({ exp: nowSec() + 300 });
    expect('signedIn' in result).toBe(true);
    const { signedIn, login } = result as { signedIn: Awaited<ReturnType<typeof finishLogin>>; login: ReturnType<typeof beginLogin> };
    expect(signedIn.identity).toMatchObject({ subject: 'user-1', email: 'a@example.com', roles: ['admin'] });
    // The access token expires first (60 s), so the session does.
    expect(Math.abs(signedIn.expiresAt.getTime() - (nowSec() + 60) * 1000)).toBeLessThan(5_000);
    expect(lastForm!.get('code_verifier')).toBe(login.verifier);
    expect(lastForm!.get('grant_type')).toBe('authorization_code');
    expect(lastAuth).toBe(`Basic ${Buffer.from('console-client:s3cret').toString('base64')}`);
    // A public client sends no secret.
    await attempt({}, false);
    expect(lastAuth).toBeNull();
  });

  test('a wrong nonce, an ID token for another audience, a foreign key or an expired token are refused', async () => {
    verifies('CONSOLE-SIGNIN-IDP', 'CONSOLE-HARDENING');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ nonce: 'replayed-from-another-sign-in' }, /nonce/],
      [{ nonce: undefined }, /nonce/],
      [{ aud: 'https://api.example.test' }, /audience/],
      [{ exp: nowSec() - 600 }, /expired/],
      [{ iss: 'https://other-issuer.example' }, /issued/],
    ];
    for (const [claims, message] of cases) {
      const result = await attempt(claims);
      expect('error' in result).toBe(true);
      expect((result as { error: Error }).error).toBeInstanceOf(SignInError);
      expect((result as { error: Error }).error.message).toMatch(message);
    }
    const stranger = await makeKey('console-oidc');
    const forged = await signToken(stranger, { iss: idp.issuer, aud: 'console-client' });
    answer = { id_token: forged, access_token: forged };
    const login = beginLogin(orgId, 'overview');
    const outbound = parseOutboundPolicy({ allowHosts: [idp.hostPort, `127.0.0.1:${tokenServer.port}`] });
    const refused = await finishLogin({
      config: {
        orgId,
        issuer: idp.issuer,
        jwksUri: idp.jwksUri,
        audience: 'x',
        roleClaim: 'role',
        emailClaim: 'email',
        defaultRole: null,
        updatedAt: new Date(),
        consoleClientId: 'console-client',
        consoleClientSecretSealed: null,
      },
      discovery: { issuer: idp.issuer, authorization_endpoint: `${idp.issuer}/auth`, token_endpoint: `http://127.0.0.1:${tokenServer.port}/token` },
      code: 'c',
      redirectUri: `${PUBLIC}/console/auth/callback`,
      login,
      box,
      outbound,
      verifier: createIdpVerifier({ outbound }),
    }).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(SignInError);
    expect((refused as Error).message).toMatch(/signature/);
  });
});
