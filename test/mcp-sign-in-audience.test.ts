// Issue 40 item 7(b), decision 0364: a signed-in access token is accepted only at the MCP endpoint its audience names
// (RFC 8707; MCP authorization, "Token Audience Binding and Validation"). The endpoint decides what it expects, not
// the token: another org's resource, another audience or none is a 401 whose challenge names this endpoint's resource
// metadata. Tokens are minted by the gateway's own flow (consent's function, then the token endpoint) and, for the
// shapes the flow never issues, by the gateway's own signer, so only the claim under test differs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { grantConsent } from '../src/auth/oauth-server/consent.ts';
import { verifies } from './requirements.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';

const REDIRECT = 'http://127.0.0.1:47823/callback';

let g: TestGateway;
let a: Onboarded;
let b: Onboarded;
const clients = new Map<string, string>();

beforeAll(async () => {
  g = await startTestGateway('pglite');
  a = await onboard(g);
  b = await onboard(g);
  for (const org of [a, b]) {
    const manage = await tokenFor(g, org.clientId, org.clientSecret);
    const res = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: 'agent', redirect_uris: [REDIRECT] });
    clients.set(org.orgId, ((await res.json()) as { client_id: string }).client_id);
  }
}, 60_000);
afterAll(async () => {
  await g?.close();
}, 60_000);

const resource = (org: Onboarded) => `${BASE}/mcp/${org.slug}`;
const issuer = (org: Onboarded) => `${BASE}/oauth/${org.slug}`;
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

/** A person's tokens for `org` through its own authorization server (code from the consent step, then /token). */
async function signIn(org: Onboarded, extra: Record<string, string> = {}): Promise<Response> {
  const verifier = randomBytes(32).toString('base64url');
  const clientId = clients.get(org.orgId)!;
  const code = await grantConsent(
    g.deps.store.db,
    {
      org: { id: org.orgId, slug: org.slug, name: org.slug },
      request: {
        client: { clientId, kind: 'preregistered', name: null, redirectUris: [REDIRECT] },
        redirectUri: REDIRECT,
        state: 's',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        scopes: ['mcp:call'],
      },
      person: { subject: 'user-1', email: 'user-1@example.com', roles: ['contributor'], attributes: {} },
      csrf: 'unused',
      expiresAt: Date.now() + 60_000,
    },
    ['mcp:call'],
  );
  const form = { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier, ...extra };
  return g.handle(
    new Request(`${issuer(org)}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) }),
  );
}

async function accessToken(org: Onboarded): Promise<string> {
  const res = await signIn(org);
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** A token of org `holder`'s grant, signed by the gateway, with the issuer and audience given (what the flow never mints). */
async function crafted(holder: Onboarded, iss: string, aud: string | readonly string[]): Promise<string> {
  const grant = claimsOf(await accessToken(holder)).tg_grant as string;
  return g.deps.signer.issueSignedIn({
    issuer: iss,
    // A list is what a token naming several audiences carries (jose writes it as given).
    audience: aud as string,
    orgId: holder.orgId,
    grantId: grant,
    subject: 'user-1',
    clientId: clients.get(holder.orgId)!,
    scopes: ['mcp:call'],
    ttlSeconds: 300,
  });
}

const mcp = (org: Onboarded, token: string) =>
  g.handle(
    new Request(resource(org), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );

/** 401, and the challenge sends the client to the metadata of the endpoint it called (RFC 9728 section 5.1). */
async function expectRefusedAt(org: Onboarded, token: string, label: string): Promise<void> {
  const res = await mcp(org, token);
  expect({ label, status: res.status }).toEqual({ label, status: 401 });
  expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp/${org.slug}"`);
}

describe('the resource server checks the audience against its own MCP URL', () => {
  test('a token for org A is accepted at A and refused at B', async () => {
    verifies('MCPAUTH-TOKEN-AUDIENCE');
    const token = await accessToken(a);
    expect((await mcp(a, token)).status).toBe(200);
    await expectRefusedAt(b, token, "A's token at B");
  });

  test("a token whose audience is A's resource is refused at B, even when its org claim says B", async () => {
    verifies('MCPAUTH-TOKEN-AUDIENCE');
    // Issuer and audience A (self-consistent), org and grant B: the org claim alone must not decide.
    await expectRefusedAt(b, await crafted(b, issuer(a), resource(a)), 'aud A, org B, at B');
    // And the same with B's issuer: the audience is still another endpoint's.
    await expectRefusedAt(b, await crafted(b, issuer(b), resource(a)), 'iss B, aud A, org B, at B');
  });

  test('another audience, or an empty list, is refused; an audience list that names this endpoint is accepted', async () => {
    verifies('MCPAUTH-TOKEN-AUDIENCE');
    for (const [label, aud] of [
      ['the gateway audience', 'toolgate'],
      ['the resource with a trailing slash', `${resource(b)}/`],
      ['another host', `https://elsewhere.example/mcp/${b.slug}`],
      ['an empty audience list', []],
    ] as const) {
      await expectRefusedAt(b, await crafted(b, issuer(b), aud), label);
    }
    expect((await mcp(b, await crafted(b, issuer(b), ['https://other.example', resource(b)]))).status).toBe(200);
    await expectRefusedAt(b, await crafted(b, issuer(b), ['https://other.example', resource(a)]), 'a list without this endpoint');
  });
});

describe('the token endpoint binds the audience to the resource', () => {
  test("aud is the org's MCP URL with or without the resource parameter; another resource is invalid_target", async () => {
    for (const extra of [{}, { resource: resource(a) }] as Record<string, string>[]) {
      const res = await signIn(a, extra);
      expect(res.status).toBe(200);
      const claims = claimsOf(((await res.json()) as { access_token: string }).access_token);
      expect({ iss: claims.iss, aud: claims.aud, tg_org: claims.tg_org }).toEqual({ iss: issuer(a), aud: resource(a), tg_org: a.orgId });
    }
    const res = await signIn(a, { resource: resource(b) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_target');
  });
});
