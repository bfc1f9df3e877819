// Issue 40 item 7(a), decision 0363: every source of a client's redirect URIs (a client ID metadata document, dynamic
// registration, an admin's pre-registration, a row saved under an older rule) passes one rule, and a refused
// redirect_uri is answered with a page, never a redirect. Driven over app.handle against a real gateway (PGlite) and a
// real https server of metadata documents (a test CA the gateway trusts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { insertRegisteredClient } from '../src/auth/oauth-server/repository.ts';
import { verifies } from './requirements.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { makeTestCa, opensslPresent, startMetadataServer, type MetadataServer } from './support/mcp-sign-in.ts';

const HOOK_TIMEOUT_MS = 60_000;
const CIMD_HOST = 'agent-metadata.test';
const GOOD = 'http://127.0.0.1:47823/callback';

/** One per class the rule refuses (each class once, spelled as an attacker would). */
const REFUSED: Record<string, string> = {
  javascript: 'javascript:alert(1)//',
  'javascript, mixed case': 'JavaScript:alert(1)//',
  'javascript, tab inside': 'java\tscript:alert(1)//',
  data: 'data:text/html,<script>alert(1)</script>',
  vbscript: 'vbscript:msgbox(1)',
  file: 'file:///etc/passwd',
  blob: 'blob:https://evil.example/1',
  'http, not loopback': 'http://agent.example/callback',
  'http, loopback look-alike': 'http://127.0.0.1.evil.example/callback',
  'http, localhost look-alike': 'http://localhost.evil.example/callback',
  fragment: 'https://agent.example/callback#frag',
  'empty fragment': 'https://agent.example/callback#',
  'user info': 'https://user:pass@agent.example/callback',
  'empty user info': 'https://@agent.example/callback',
  'backslash host confusion': 'https://evil.example\\@agent.example/callback',
  'leading space': ' https://agent.example/callback',
  'custom scheme without a dot': 'myapp://callback',
  'not a URL': 'callback',
};

/** Accepted by the rule: https, loopback http (RFC 8252 7.3), a private-use scheme with a dot (RFC 8252 7.1). */
const ACCEPTED = ['https://agent.example/callback', GOOD, 'http://localhost:9/cb', 'http://[::1]:9/cb', 'com.example.agent:/callback'];

let g: TestGateway;
let a: Onboarded;
let manage: string;
let metadata: MetadataServer | null = null;

const docPath = (name: string) => `/refused-${name.replace(/[^a-z]+/g, '-')}.json`;

beforeAll(async () => {
  const ca = opensslPresent ? makeTestCa(CIMD_HOST) : null;
  const documents: Record<string, string[]> = { '/mixed.json': [GOOD, REFUSED['http, not loopback']!] };
  for (const [name, uri] of Object.entries(REFUSED)) documents[docPath(name)] = [uri];
  if (ca) metadata = startMetadataServer(ca, CIMD_HOST, GOOD, documents);
  g = await startTestGateway(
    'pglite',
    metadata ? { TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${CIMD_HOST}:${metadata.port}`, TOOLGATE_OUTBOUND_CA_FILE: ca!.caFile } : {},
    undefined,
    { resolve: async (host: string) => (host === CIMD_HOST ? ['127.0.0.1'] : ['203.0.113.1']) },
  );
  a = await onboard(g);
  manage = await tokenFor(g, a.clientId, a.clientSecret);
  // Registration is open only on an org someone can sign in to (issue 40 item 5): a member.
  await addMember(g, manage, 'redirects@a.example', 'redirect password 0001');
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  metadata?.stop();
  await g?.close();
}, HOOK_TIMEOUT_MS);

const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');

/**
 * An authorization request that is wrong after the redirect_uri (response_type=token): a client and redirect_uri that
 * pass get the error redirected to them (302), so a 302 here means the redirect_uri was trusted.
 */
function authorize(clientId: string, redirectUri: string, responseType = 'token') {
  const url = new URL(`${BASE}/oauth/${a.slug}/authorize`);
  const params = { response_type: responseType, client_id: clientId, redirect_uri: redirectUri, state: 's', code_challenge: challenge };
  for (const [k, v] of Object.entries({ ...params, code_challenge_method: 'S256', resource: `${BASE}/mcp/${a.slug}` })) url.searchParams.set(k, v);
  return g.handle(new Request(url));
}

async function expectPageNotRedirect(res: Response, label: string): Promise<string> {
  const text = await res.text();
  expect({ label, status: res.status, location: res.headers.get('location') }).toEqual({ label, status: 400, location: null });
  expect(res.headers.get('content-type')).toContain('text/html');
  return text;
}

async function register(body: unknown): Promise<Response> {
  for (;;) {
    const res = await g.handle(
      new Request(`${BASE}/oauth/${a.slug}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    );
    // Registrations are limited to 2 a second per address: wait out the window rather than count on timing.
    if (res.status !== 429) return res;
    await Bun.sleep(Number(res.headers.get('retry-after') ?? '1') * 1000);
  }
}

describe.skipIf(!opensslPresent)('redirect URIs of a client ID metadata document', () => {
  test('each refused class: the document is refused with a page, nothing redirected, sign-in not begun', async () => {
    verifies('MCPAUTH-REDIRECT-URI-RULE');
    for (const [name, uri] of Object.entries(REFUSED)) {
      const text = await expectPageNotRedirect(await authorize(metadata!.url(docPath(name)), uri), name);
      expect(text).toContain('client metadata document is refused');
      // The good-shaped request does not go on to sign-in either (it would answer 403: this org has no IdP).
      await expectPageNotRedirect(await authorize(metadata!.url(docPath(name)), uri, 'code'), `${name} (code)`);
    }
  });

  test('one refused URI refuses the whole document, as one refuses a whole registration', async () => {
    await expectPageNotRedirect(await authorize(metadata!.url('/mixed.json'), GOOD), 'mixed');
  });

  test('a good document still signs in (on to the sign-in page) and its refusals are still redirected', async () => {
    const res = await authorize(metadata!.url('/agent.json'), GOOD);
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('unsupported_response_type');
    // The org signs its members in (issue 40), so a good request reaches the sign-in page.
    expect((await authorize(metadata!.url('/agent.json'), GOOD, 'code')).status).toBe(200);
  });
});

describe('redirect URIs of a dynamic registration', () => {
  test('each refused class: 400 invalid_redirect_uri naming the rule, not the URI', async () => {
    verifies('MCPAUTH-REDIRECT-URI-RULE');
    for (const [name, uri] of Object.entries(REFUSED)) {
      const res = await register({ client_name: 'x', redirect_uris: [uri] });
      const body = (await res.json()) as { error: string; error_description: string };
      expect({ name, status: res.status, error: body.error }).toEqual({ name, status: 400, error: 'invalid_redirect_uri' });
      expect(body.error_description).toContain('A redirect URI must be https');
    }
  }, 30_000);

  test('the accepted classes register', async () => {
    const res = await register({ client_name: 'ok', redirect_uris: ACCEPTED });
    expect(res.status).toBe(201);
  });
});

describe('redirect URIs of a pre-registration', () => {
  test('each refused class: 422 invalid_redirect_uri; nothing is created', async () => {
    verifies('MCPAUTH-REDIRECT-URI-RULE');
    for (const [name, uri] of Object.entries(REFUSED)) {
      const res = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: name, redirect_uris: [uri] });
      expect({ name, status: res.status, error: ((await res.json()) as { error: string }).error }).toEqual({
        name,
        status: 422,
        error: 'invalid_redirect_uri',
      });
    }
    const list = (await (await api(g, 'GET', '/api/org/mcp-clients', manage)).json()) as { clients: Array<{ kind: string }> };
    expect(list.clients.filter((c) => c.kind === 'preregistered')).toEqual([]);
  });

  test('the accepted classes are created', async () => {
    expect((await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: 'ok', redirect_uris: ACCEPTED })).status).toBe(201);
  });
});

describe('a stored client whose redirect URIs predate the rule', () => {
  test('is checked at use: a page, never a redirect, for each refused class', async () => {
    verifies('MCPAUTH-REDIRECT-URI-RULE');
    const clientId = `mcp_legacy_${randomBytes(6).toString('hex')}`;
    await insertRegisteredClient(g.deps.store.db, {
      orgId: a.orgId,
      clientId,
      kind: 'registered',
      clientName: 'legacy',
      redirectUris: [...Object.values(REFUSED), GOOD],
    });
    for (const [name, uri] of Object.entries(REFUSED)) {
      const text = await expectPageNotRedirect(await authorize(clientId, uri), name);
      expect(text).toContain('redirect_uri is refused');
    }
    // Its good URI still works.
    expect((await authorize(clientId, GOOD)).status).toBe(302);
  });
});
