// BYOIDP through the real app: a local OIDC issuer (JWKS on 127.0.0.1, RSA keys from jose) configured by the org,
// its tokens on the MCP endpoint and on /api/*, every way a token can be bad, JWKS rotation / flood / hang,
// isolation between orgs, configuration changes, default role, connector scopes, and the audit actor.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { and, eq } from 'drizzle-orm';
import { auditEvents } from '../src/store/schema.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import {
  algNoneToken,
  createConnector,
  hs256WithPublicKey,
  idpConfig,
  idpGatewayEnv,
  idpToken,
  makeKey,
  mcpRequest,
  nowSec,
  pgFixture,
  pgHostPort,
  rs512Token,
  saveIdpConfig,
  sleep,
  startFakeIdp,
  type FakeIdp,
  type IdpConfigBody,
  type PgFixture,
  type TestKey,
} from './support/idp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';

const AUD_A = 'toolgate-org-a';
const AUD_B = 'toolgate-org-b';
const COOLDOWN_MS = 200;

let g: TestGateway;
let idp: FakeIdp;
let key1: TestKey;
let key2: TestKey;
/** Same kid as key1, different key material: a key that is not in the JWKS. */
let impostor: TestKey;
let A: Onboarded;
let B: Onboarded;
let manageA: string;
let manageB: string;

beforeAll(async () => {
  [key1, key2, impostor] = await Promise.all([makeKey('k1'), makeKey('k2'), makeKey('k1')]);
  idp = startFakeIdp([key1]);
  g = await startTestGateway('pglite', idpGatewayEnv(idp, [pgHostPort()]));
  A = await onboard(g);
  B = await onboard(g);
  manageA = await tokenFor(g, A.clientId, A.clientSecret);
  manageB = await tokenFor(g, B.clientId, B.clientSecret);
}, 60_000);
afterAll(async () => {
  await g?.close();
  idp?.stop();
}, 60_000);

const configA = (extra: Partial<IdpConfigBody> = {}) => idpConfig(idp, AUD_A, extra);
const configB = (extra: Partial<IdpConfigBody> = {}) => idpConfig(idp, AUD_B, extra);

/** A token of org A's IdP: admin with an e-mail unless overridden. */
const tokenA = (claims: Record<string, unknown> = {}, key: TestKey = key1, kid?: string) =>
  idpToken(key, idp.issuer, AUD_A, { role: 'admin', email: 'ada@example.com', ...claims }, kid);
const tokenB = (claims: Record<string, unknown> = {}) => idpToken(key1, idp.issuer, AUD_B, { role: 'admin', email: 'bob@example.org', ...claims });

/** The SDK's client for a bearer on the suite's gateway; `null` sends no credential. */
const as = (token: string | null) => sdkFor(g, token ?? {}).client;
const getOrg = (token: string | null) => sdk.getOrg({ client: as(token) });
const getIdp = (token: string | null) => sdk.getIdpConfig({ client: as(token) });
const putIdp = (token: string | null, body: IdpConfigBody) => sdk.setIdpConfig({ client: as(token), body: body as sdk.IdpConfigInput });
const deleteIdp = (token: string | null) => sdk.deleteIdpConfig({ client: as(token) });

/** The HTTP status of an SDK answer. */
async function status(answer: Promise<{ response: Response }>): Promise<number> {
  return (await answer).response.status;
}
/** The REST error body an SDK answer carries (a ToolgateError's body). */
const errorBody = (answer: { error?: unknown }) => (answer.error as sdk.ToolgateError | undefined)?.body as { error: string; message: string };

/** Status of the token on A's MCP endpoint (tools/list) and on GET /api/org. */
async function onBoth(token: string, slug = A.slug): Promise<{ mcp: number; rest: number }> {
  const [mcp, rest] = await Promise.all([mcpRequest(g, slug, { bearer: token }), status(getOrg(token))]);
  return { mcp: mcp.status, rest };
}

async function expect401(token: string, what: string) {
  const mcp = await mcpRequest(g, A.slug, { bearer: token });
  expect({ what, status: mcp.status, error: mcp.body?.error }).toEqual({ what, status: 401, error: 'unauthenticated' });
  const rest = await getOrg(token);
  const body = errorBody(rest);
  expect({ what, status: rest.response.status, error: body.error }).toEqual({ what, status: 401, error: 'unauthenticated' });
  expect(rest.response.headers.get('www-authenticate')).toContain('invalid_token');
  // Nothing of the token's content is echoed back.
  expect(body.message).not.toContain(idp.issuer);
}

async function restOrgId(token: string): Promise<string> {
  const res = await getOrg(token);
  expect(res.response.status).toBe(200);
  return res.data!.id;
}

const toolNames = (reply: { body: any }): string[] => (reply.body.result.tools as { name: string }[]).map((t) => t.name).sort();

describe('configuration endpoints (admin only)', () => {
  test('no configuration: GET and DELETE are 404, and an IdP token is 401 everywhere', async () => {
    const get = await getIdp(manageA);
    expect(get.response.status).toBe(404);
    expect(errorBody(get).error).toBe('idp_not_configured');
    expect(await status(deleteIdp(manageA))).toBe(404);
    expect(await onBoth(await tokenA())).toEqual({ mcp: 401, rest: 401 });
  });

  test('the org:manage token sets, gets and deletes the configuration', async () => {
    const put = await putIdp(manageA, configA({ email_claim: 'email', default_role: null }));
    expect(put.response.status).toBe(200);
    const saved = put.data as unknown as Record<string, unknown>;
    expect(saved).toMatchObject({ issuer: idp.issuer, jwks_uri: idp.jwksUri, audience: AUD_A, role_claim: 'role', email_claim: 'email', default_role: null });
    expect(typeof saved.updated_at).toBe('string');

    const get = await getIdp(manageA);
    expect(get.response.status).toBe(200);
    expect(get.data).toEqual(saved as never);

    const del = await deleteIdp(manageA);
    expect(del.response.status).toBe(200);
    expect(del.data).toEqual({ deleted: true });
    expect(await status(getIdp(manageA))).toBe(404);
  });

  test('IdP contributor and finance users get 403 on GET, PUT and DELETE; an IdP admin may use all three', async () => {
    verifies('REST-ROLES-MATRIX');
    await saveIdpConfig(g, manageA, configA());
    for (const role of ['contributor', 'finance', 'viewer']) {
      const token = await tokenA({ role });
      expect({ role, get: await status(getIdp(token)) }).toEqual({ role, get: 403 });
      expect({ role, put: await status(putIdp(token, configA({ audience: 'hijacked' }))) }).toEqual({ role, put: 403 });
      expect({ role, del: await status(deleteIdp(token)) }).toEqual({ role, del: 403 });
    }
    // Nothing changed.
    expect((await getIdp(manageA)).data!.audience).toBe(AUD_A);

    const admin = await tokenA({ role: 'admin' });
    expect(await status(getIdp(admin))).toBe(200);
    expect(await status(putIdp(admin, configA()))).toBe(200);
    // Unauthenticated and MCP-only callers get nothing either.
    expect(await status(getIdp(null))).toBe(401);
    const mcpOnly = await tokenFor(g, A.clientId, A.clientSecret, 'mcp:call');
    expect(await status(putIdp(mcpOnly, configA({ audience: 'hijacked' })))).toBe(403);
  });

  test('a JWKS URI that is http to a host not allow-listed, or private / link-local / loopback: 422 jwks_uri_refused', async () => {
    verifies('OUTBOUND-SSRF');
    const port = Number(idp.hostPort.split(':')[1]);
    const before = (await getIdp(manageA)).data;
    const refused = [
      'http://idp.example.com/.well-known/jwks.json',
      `http://127.0.0.1:${port === 65535 ? 1 : port + 1}/jwks`,
      'https://10.0.0.1/jwks',
      'https://169.254.169.254/latest/meta-data/',
      'http://169.254.169.254/latest/meta-data/',
      'https://localhost/jwks',
      `http://localhost:${port}/jwks`,
      'https://127.0.0.1/jwks',
      'https://2130706433/jwks',
      'https://0x7f.1/jwks',
      'https://[::ffff:169.254.169.254]/jwks',
      'https://[::1]/jwks',
      'https://user:pass@10.0.0.1/jwks',
    ];
    for (const jwks_uri of refused) {
      const res = await putIdp(manageA, { ...configA(), jwks_uri });
      expect({ jwks_uri, status: res.response.status, error: errorBody(res).error }).toEqual({ jwks_uri, status: 422, error: 'jwks_uri_refused' });
    }
    // Nothing was saved.
    expect((await getIdp(manageA)).data).toEqual(before);
  });
});

describe('tokens on the MCP endpoint and on /api/*', () => {
  beforeAll(async () => {
    await saveIdpConfig(g, manageA, configA());
  }, 60_000);

  test('a valid token is accepted immediately after saving: MCP tools/list, and with role admin /api/org', async () => {
    verifies('AUTH-IDP-IMMEDIATE');
    await deleteIdp(manageA);
    await saveIdpConfig(g, manageA, configA());
    const token = await tokenA();
    const mcp = await mcpRequest(g, A.slug, { bearer: token });
    expect(mcp.status).toBe(200);
    expect(toolNames(mcp)).toContain('check_approval_status');
    expect(await restOrgId(token)).toBe(A.orgId);
    // An admin reaches admin-only routes too.
    expect(await status(sdk.listApiKeys({ client: as(token) }))).toBe(200);
  });

  test('an aud array that contains our audience is accepted', async () => {
    verifies('AUTH-JWT-AUD-ARRAY');
    const token = await idpToken(key1, idp.issuer, ['https://other.example', AUD_A], { role: 'admin' });
    expect(await onBoth(token)).toEqual({ mcp: 200, rest: 200 });
    expect(await restOrgId(token)).toBe(A.orgId);
  });

  test('an unsigned token listing ~2000 audiences costs one lookup, not one per audience', async () => {
    const many = Array.from({ length: 2000 }, (_, i) => i.toString(36));
    const junk = `${Buffer.from(JSON.stringify({ alg: 'RS256', kid: 'k1' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: idp.issuer, aud: many, sub: 'x', exp: nowSec() + 300 }),
    ).toString('base64url')}.sig`;
    expect(junk.length).toBeLessThan(16 * 1024);
    const started = Date.now();
    for (let i = 0; i < 3; i++) expect(await status(getOrg(junk))).toBe(401);
    // One query per audience took 1-3 s per request on PGlite; one query takes about 0.1 s.
    expect(Date.now() - started).toBeLessThan(1500);
    // Our audience at the end of a long list still resolves to this org.
    expect(await restOrgId(await idpToken(key1, idp.issuer, [...many.slice(0, 1500), AUD_A], { role: 'admin' }))).toBe(A.orgId);
  });

  test('expired, missing exp, nbf in the future: 401', async () => {
    verifies('AUTH-JWT-EXP', 'AUTH-JWT-NBF');
    // Beyond the 30 s clock tolerance.
    await expect401(await tokenA({ iat: nowSec() - 600, exp: nowSec() - 120 }), 'expired');
    await expect401(await tokenA({ exp: undefined }), 'missing exp');
    await expect401(await tokenA({ nbf: nowSec() + 120 }), 'nbf in the future');
  });

  test('wrong issuer, wrong audience, audience array without ours: 401', async () => {
    verifies('AUTH-JWT-ISS', 'AUTH-JWT-AUD');
    await expect401(await idpToken(key1, 'https://evil.example', AUD_A, { role: 'admin' }), 'wrong issuer');
    await expect401(await idpToken(key1, `${idp.issuer}/`, AUD_A, { role: 'admin' }), 'issuer with a trailing slash');
    await expect401(await idpToken(key1, idp.issuer, 'someone-else', { role: 'admin' }), 'wrong audience');
    await expect401(await idpToken(key1, idp.issuer, ['x', 'y'], { role: 'admin' }), 'aud array without ours');
    await expect401(await tokenA({ aud: undefined }), 'no aud');
  });

  test('alg none, HS256 signed with the public key, RS512: 401', async () => {
    verifies('AUTH-JWT-ALG-NONE', 'AUTH-JWT-HS256-PUBKEY', 'AUTH-JWT-ALG-OTHER');
    const claims = { iss: idp.issuer, aud: AUD_A, sub: 'user-1', role: 'admin', exp: nowSec() + 300 };
    await expect401(algNoneToken(claims), 'alg none, empty signature');
    await expect401(algNoneToken(claims, 'x'), 'alg none, junk signature');
    await expect401(await hs256WithPublicKey(key1, { iss: idp.issuer, aud: AUD_A, role: 'admin' }), 'HS256 with the public key');
    const rs512 = await rs512Token('k-rs512', { iss: idp.issuer, aud: AUD_A, role: 'admin' });
    idp.published = [key1, rs512.key];
    try {
      await sleep(COOLDOWN_MS + 50);
      await expect401(rs512.token, 'RS512 with a published key');
    } finally {
      idp.published = [key1];
    }
  });

  test('a key not in the JWKS (unknown kid, or a known kid with other key material), a tampered payload: 401', async () => {
    verifies('AUTH-JWT-SIGNATURE');
    await expect401(await tokenA({}, impostor), 'impostor key under kid k1');
    await expect401(await tokenA({}, key2), 'unpublished kid k2');
    const [h, , s] = (await tokenA({ role: 'contributor' })).split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ iss: idp.issuer, aud: AUD_A, sub: 'root', role: 'admin', exp: nowSec() + 300 })).toString('base64url')}.${s}`;
    await expect401(forged, 'tampered payload');
    // The genuine token keeps working.
    expect(await onBoth(await tokenA())).toEqual({ mcp: 200, rest: 200 });
  });
});

describe('JWKS handling', () => {
  beforeAll(async () => {
    idp.mode = 'ok';
    idp.published = [key1];
    await saveIdpConfig(g, manageA, configA());
    expect(await onBoth(await tokenA())).toEqual({ mcp: 200, rest: 200 });
  }, 60_000);

  test('a rotated key is picked up after the cooldown', async () => {
    verifies('AUTH-JWKS-ROTATE');
    // Start from a fresh fetch, so the new kid is unknown to the cached set.
    await sleep(COOLDOWN_MS + 50);
    expect(await onBoth(await tokenA({}, key2))).toEqual({ mcp: 401, rest: 401 });
    idp.published = [key1, key2];
    await sleep(COOLDOWN_MS + 50);
    const hits = idp.hits;
    const mcp = await mcpRequest(g, A.slug, { bearer: await tokenA({}, key2) });
    expect(mcp.status).toBe(200);
    expect(idp.hits).toBe(hits + 1);
    expect(await restOrgId(await tokenA({}, key2))).toBe(A.orgId);
    // The old key is still published and cached: its tokens keep working.
    expect(await onBoth(await tokenA({}, key1))).toEqual({ mcp: 200, rest: 200 });
  });

  test('a flood of 30 tokens with unknown kids: at most one JWKS fetch per cooldown', async () => {
    verifies('AUTH-JWKS-COOLDOWN');
    await sleep(COOLDOWN_MS + 50);
    const tokens = await Promise.all(Array.from({ length: 30 }, (_, i) => tokenA({}, key1, `unknown-${i}`)));
    const hits = idp.hits;
    const started = Date.now();
    const statuses = await Promise.all(tokens.map((t, i) => (i % 2 === 0 ? mcpRequest(g, A.slug, { bearer: t }).then((r) => r.status) : status(getOrg(t)))));
    const elapsed = Date.now() - started;
    expect(new Set(statuses)).toEqual(new Set([401]));
    const fetched = idp.hits - hits;
    expect(fetched).toBeGreaterThanOrEqual(1);
    expect(fetched).toBeLessThanOrEqual(1 + Math.floor(elapsed / COOLDOWN_MS));
    // Straight after, within the cooldown, another burst fetches nothing.
    const again = idp.hits;
    const t0 = Date.now();
    await Promise.all(tokens.slice(0, 10).map((t) => mcpRequest(g, A.slug, { bearer: t })));
    if (Date.now() - t0 < COOLDOWN_MS / 2) expect(idp.hits).toBe(again);
    expect(idp.hits - again).toBeLessThanOrEqual(1 + Math.floor((Date.now() - t0) / COOLDOWN_MS));
  });

  test('a hanging JWKS endpoint: new kids fail fast (< 2 s), the cached kid keeps working', async () => {
    verifies('AUTH-JWKS-HANG');
    idp.mode = 'hang';
    try {
      await sleep(COOLDOWN_MS + 50);
      const hits = idp.hits;
      const started = Date.now();
      const pendingMcp = mcpRequest(g, A.slug, { bearer: await tokenA({}, key1, 'brand-new-kid') });
      // While that refetch hangs, a token under the cached kid is answered at once.
      const cachedStart = Date.now();
      expect(await onBoth(await tokenA())).toEqual({ mcp: 200, rest: 200 });
      expect(Date.now() - cachedStart).toBeLessThan(1000);
      const reply = await pendingMcp;
      expect(reply.status).toBe(401);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(idp.hits).toBeGreaterThan(hits);
      // REST too, once the cooldown allows another fetch.
      await sleep(COOLDOWN_MS + 50);
      const restStart = Date.now();
      expect(await status(getOrg(await tokenA({}, key1, 'another-new-kid')))).toBe(401);
      expect(Date.now() - restStart).toBeLessThan(2000);
      expect(await onBoth(await tokenA())).toEqual({ mcp: 200, rest: 200 });
    } finally {
      idp.mode = 'ok';
    }
  });

  test('a JWKS endpoint that fails (503, redirect to metadata) does not break cached keys', async () => {
    verifies('AUTH-JWKS-HANG', 'OUTBOUND-REDIRECT');
    for (const mode of ['error', 'redirect'] as const) {
      idp.mode = mode;
      try {
        await sleep(COOLDOWN_MS + 50);
        expect({ mode, ...(await onBoth(await tokenA({}, key1, `kid-${mode}`))) }).toEqual({ mode, mcp: 401, rest: 401 });
        expect({ mode, ...(await onBoth(await tokenA())) }).toEqual({ mode, mcp: 200, rest: 200 });
      } finally {
        idp.mode = 'ok';
      }
    }
  });
});

describe('isolation between orgs', () => {
  beforeAll(async () => {
    idp.mode = 'ok';
    await saveIdpConfig(g, manageA, configA());
    await saveIdpConfig(g, manageB, configB());
  }, 60_000);

  test("org B's IdP token at org A's MCP endpoint is 401; at B's own endpoint it works", async () => {
    verifies('AUTH-CROSS-ORG');
    const b = await tokenB();
    expect((await mcpRequest(g, A.slug, { bearer: b })).status).toBe(401);
    expect((await mcpRequest(g, B.slug, { bearer: b })).status).toBe(200);
    const a = await tokenA();
    expect((await mcpRequest(g, B.slug, { bearer: a })).status).toBe(401);
    // Unknown slug: the same 401, revealing nothing.
    expect((await mcpRequest(g, 'no-such-org-slug', { bearer: a })).status).toBe(401);
  });

  test("org B's IdP token on /api/* acts in B only: A's org-addressed routes are 404, never A's data", async () => {
    verifies('REST-BOLA');
    const b = await tokenB();
    expect(await restOrgId(b)).toBe(B.orgId);
    for (const path of [`/api/mcp/${A.orgId}/status`, `/api/mcp/${A.orgId}/tools`]) {
      const res = await (path.endsWith('/status') ? sdk.getProvisioningStatus : sdk.listTools)({ client: as(b), path: { orgId: A.orgId } });
      expect({ path, status: res.response.status }).toEqual({ path, status: 404 });
      expect(JSON.stringify(errorBody(res))).not.toContain(A.slug);
    }
    expect(await status(sdk.provisionOrg({ client: as(b), path: { orgId: A.orgId } }))).toBe(404);
    // B's view of the IdP config is B's own.
    expect((await getIdp(b)).data!.audience).toBe(AUD_B);
    // A token of the same issuer naming an audience no org configured is 401 on REST.
    expect(await status(getOrg(await idpToken(key1, idp.issuer, 'toolgate-org-c', { role: 'admin' })))).toBe(401);
  });

  test("org B cannot claim org A's (issuer, audience): 409, and A's tokens still resolve to A", async () => {
    const res = await putIdp(manageB, configA());
    expect(res.response.status).toBe(409);
    expect(errorBody(res).error).toBe('idp_in_use');
    expect(await restOrgId(await tokenA())).toBe(A.orgId);
    expect(await restOrgId(await tokenB())).toBe(B.orgId);
  });
});

describe('configuration changes apply on the next request', () => {
  beforeAll(async () => {
    idp.mode = 'ok';
    await saveIdpConfig(g, manageA, configA());
  }, 60_000);

  test('a new audience: old-audience tokens 401, new-audience tokens accepted', async () => {
    verifies('AUTH-IDP-IMMEDIATE');
    const old = await tokenA();
    expect(await onBoth(old)).toEqual({ mcp: 200, rest: 200 });
    await saveIdpConfig(g, manageA, idpConfig(idp, 'toolgate-org-a-v2'));
    expect(await onBoth(old)).toEqual({ mcp: 401, rest: 401 });
    const fresh = await idpToken(key1, idp.issuer, 'toolgate-org-a-v2', { role: 'admin' });
    expect(await onBoth(fresh)).toEqual({ mcp: 200, rest: 200 });
    await saveIdpConfig(g, manageA, configA());
    expect(await onBoth(fresh)).toEqual({ mcp: 401, rest: 401 });
    expect(await onBoth(old)).toEqual({ mcp: 200, rest: 200 });
  });

  test('deleting the configuration: the IdP tokens are 401 at once', async () => {
    verifies('AUTH-IDP-IMMEDIATE');
    const token = await tokenA();
    expect(await onBoth(token)).toEqual({ mcp: 200, rest: 200 });
    expect(await status(deleteIdp(token))).toBe(200);
    expect(await onBoth(token)).toEqual({ mcp: 401, rest: 401 });
    await saveIdpConfig(g, manageA, configA());
    expect(await onBoth(token)).toEqual({ mcp: 200, rest: 200 });
  });

  test('default role: none by default (403 on REST, MCP still allowed); contributor once configured', async () => {
    verifies('AUTH-IDP-MCP-ANY-TOKEN', 'REST-ROLES-MATRIX');
    const noRole = await tokenA({ role: undefined });
    const unknownRole = await tokenA({ role: 'viewer' });
    expect(await onBoth(noRole)).toEqual({ mcp: 200, rest: 403 });
    const denied = await sdk.listConnectors({ client: as(noRole) });
    expect(denied.response.status).toBe(403);
    expect(errorBody(denied).error).toBe('insufficient_role');

    await saveIdpConfig(g, manageA, configA({ default_role: 'contributor' }));
    expect(await onBoth(noRole)).toEqual({ mcp: 200, rest: 200 });
    expect(await status(sdk.listConnectors({ client: as(noRole) }))).toBe(200);
    // The default is contributor, not admin.
    expect(await status(getIdp(noRole))).toBe(403);
    expect(await status(sdk.listApiKeys({ client: as(noRole) }))).toBe(403);
    // A role claim that is present but unrecognised does not fall back to the default.
    expect(await status(getOrg(unknownRole))).toBe(403);

    await saveIdpConfig(g, manageA, configA({ default_role: null }));
    expect(await onBoth(noRole)).toEqual({ mcp: 200, rest: 403 });
  });

  test('a custom role claim and e-mail claim', async () => {
    await saveIdpConfig(g, manageA, configA({ role_claim: 'realm_access.roles', email_claim: 'upn' }));
    try {
      const nested = await tokenA({ role: undefined, realm_access: { roles: ['contributor'] }, upn: 'upn-user@example.com' });
      expect(await status(getOrg(nested))).toBe(200);
      expect(await status(getIdp(nested))).toBe(403);
      // The old claim name means nothing any more.
      expect(await status(getOrg(await tokenA({ role: 'admin' })))).toBe(403);
    } finally {
      await saveIdpConfig(g, manageA, configA());
    }
  });
});

describe('connector scopes in an IdP token', () => {
  let fixtures: PgFixture[] = [];
  let available = false;
  let c1: string;
  let c2: string;

  beforeAll(async () => {
    available = await serviceAvailable('postgres');
    if (!available) return;
    idp.mode = 'ok';
    await saveIdpConfig(g, manageA, configA());
    fixtures = await Promise.all([pgFixture(['alpha_items']), pgFixture(['beta_items'])]);
    const [one, two] = await Promise.all([createConnector(g, manageA, 'alpha', fixtures[0]!), createConnector(g, manageA, 'beta', fixtures[1]!)]);
    expect(one.status).toBe('active');
    expect(two.status).toBe('active');
    c1 = one.id;
    c2 = two.id;
  }, 60_000);
  afterAll(async () => {
    for (const id of [c1, c2]) if (id) await sdk.archiveConnector({ client: as(manageA), path: { connectorId: id } });
    await g.deps.jobs.idle();
    await Promise.all(fixtures.map((f) => f.drop().catch(() => undefined)));
  }, 60_000);

  async function connectorToolNames(connectorId: string): Promise<string[]> {
    const res = await sdk.listTools({ client: as(manageA), path: { orgId: A.orgId }, query: { connector_id: connectorId } });
    expect(res.response.status).toBe(200);
    return res.data!.tools.map((t) => t.name);
  }

  test('mcp:call:<connector-id> in `scope` limits tools/list and tools/call to that connector', async () => {
    verifies('TOOLS-SCOPE-FILTER', 'RPC-32003');
    if (!available) return;
    const own = await connectorToolNames(c1);
    const other = await connectorToolNames(c2);
    expect(own.length).toBeGreaterThan(0);
    expect(other.length).toBeGreaterThan(0);

    const scoped = await tokenA({ scope: `openid email mcp:call:${c1}` });
    const list = await mcpRequest(g, A.slug, { bearer: scoped });
    expect(list.status).toBe(200);
    expect(toolNames(list)).toEqual([...own, 'check_approval_status'].sort());

    // Each connector lists its table tool and its schema tool describe_<connector name> (decision 0313); the calls
    // below use the table tools, whose argument is `sql`.
    expect(own.sort()).toEqual(['describe_alpha', 'query_postgresql_alpha_items']);
    expect(other.sort()).toEqual(['describe_beta', 'query_postgresql_beta_items']);
    const call = await mcpRequest(g, A.slug, { bearer: scoped }, 'tools/call', {
      name: 'query_postgresql_beta_items',
      arguments: { sql: `select * from beta_items` },
    });
    expect(call.status).toBe(200);
    expect(call.body.error?.code).toBe(-32003);
    const otherSchema = await mcpRequest(g, A.slug, { bearer: scoped }, 'tools/call', { name: 'describe_beta', arguments: {} });
    expect(otherSchema.body.error?.code).toBe(-32003);

    const allowed = await mcpRequest(g, A.slug, { bearer: scoped }, 'tools/call', {
      name: 'query_postgresql_alpha_items',
      arguments: { sql: 'select * from alpha_items' },
    });
    expect(allowed.body.error).toBeUndefined();
    expect(allowed.body.result.isError).not.toBe(true);
  });

  test('`scp` as an array works the same; without connector scopes every tool is listed', async () => {
    verifies('TOOLS-SCOPE-FILTER');
    if (!available) return;
    const own = await connectorToolNames(c2);
    const scp = await mcpRequest(g, A.slug, { bearer: await tokenA({ scp: [`mcp:call:${c2}`] }) });
    expect(toolNames(scp)).toEqual([...own, 'check_approval_status'].sort());

    const everything = [...(await connectorToolNames(c1)), ...own, 'check_approval_status'].sort();
    expect(toolNames(await mcpRequest(g, A.slug, { bearer: await tokenA() }))).toEqual(everything);
    expect(toolNames(await mcpRequest(g, A.slug, { bearer: await tokenA({ scope: 'openid profile' }) }))).toEqual(everything);
    expect(toolNames(await mcpRequest(g, A.slug, { bearer: await tokenA({ scope: 'mcp:call' }) }))).toEqual(everything);
    // A connector scope naming another org's (or no) connector grants nothing but the built-in tool.
    const foreign = await tokenA({ scope: `mcp:call:00000000-0000-4000-8000-000000000000` });
    expect(toolNames(await mcpRequest(g, A.slug, { bearer: foreign }))).toEqual(['check_approval_status']);
  });
});

describe('audit', () => {
  beforeAll(async () => {
    idp.mode = 'ok';
    await saveIdpConfig(g, manageA, configA());
  }, 60_000);

  async function actorsOf(action: string): Promise<{ actorType: string; actorId: string | null }[]> {
    return g.deps.store.db
      .select({ actorType: auditEvents.actorType, actorId: auditEvents.actorId })
      .from(auditEvents)
      .where(and(eq(auditEvents.orgId, A.orgId), eq(auditEvents.action, action)));
  }

  test("the IdP user's e-mail is the audit actor", async () => {
    verifies('AUDIT-MANAGEMENT-ROW');
    const token = await tokenA({ email: 'ada.lovelace@example.com', sub: 'subject-123' });
    expect(await status(putIdp(token, configA()))).toBe(200);
    const rows = await actorsOf('idp.updated');
    expect(rows).toContainEqual({ actorType: 'user', actorId: 'ada.lovelace@example.com' });
    expect(rows.some((r) => r.actorId === 'subject-123')).toBe(false);

    const created = await sdk.createApiKey({ client: as(token), body: { name: 'audited' } });
    expect(created.response.status).toBe(201);
    expect(await actorsOf('api_key.created')).toContainEqual({ actorType: 'user', actorId: 'ada.lovelace@example.com' });
  });

  test('without a usable e-mail (none, or email_verified false) the subject is the actor', async () => {
    const noEmail = await tokenA({ email: undefined, sub: 'subject-no-email' });
    expect(await status(putIdp(noEmail, configA()))).toBe(200);
    const unverified = await tokenA({ email: 'victim@example.com', email_verified: false, sub: 'subject-unverified' });
    expect(await status(putIdp(unverified, configA()))).toBe(200);
    const rows = await actorsOf('idp.updated');
    expect(rows).toContainEqual({ actorType: 'user', actorId: 'subject-no-email' });
    expect(rows).toContainEqual({ actorType: 'user', actorId: 'subject-unverified' });
    expect(rows.some((r) => r.actorId === 'victim@example.com')).toBe(false);
  });

  test('the machine credential is recorded as such, and deletion is audited', async () => {
    verifies('AUDIT-MANAGEMENT-ROW');
    await saveIdpConfig(g, manageA, configA());
    expect((await actorsOf('idp.updated')).some((r) => r.actorType === 'oauth_client' && r.actorId === A.clientId)).toBe(true);
    const token = await tokenA({ email: 'deleter@example.com' });
    expect(await status(deleteIdp(token))).toBe(200);
    expect(await actorsOf('idp.deleted')).toContainEqual({ actorType: 'user', actorId: 'deleter@example.com' });
    await saveIdpConfig(g, manageA, configA());
  });
});
