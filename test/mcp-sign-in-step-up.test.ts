// Issue 29, step-up (decision 0248): a signed-in token narrowed to one connector that calls another connector's tool
// gets HTTP 403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp:call:<connector>",
// resource_metadata=…` (the MCP authorization spec's runtime insufficient-scope answer), the JSON-RPC -32003 kept as
// the body; in a batch it stays a -32003 in a 200. API keys limited to connectors and client-credentials tokens keep
// the JSON-RPC error in a 200. Real gateway (PGlite) with a real PostgreSQL connector; the codes are minted by the
// consent step's own function, as the consent page does once the person allows.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { grantConsent } from '../src/auth/oauth-server/consent.ts';
import * as sdk from '../sdk/index.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, rpcRaw } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, deadPort, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
if (!available) console.warn('[skip] PostgreSQL is not reachable: the step-up suite is skipped');
const ITEMS = 'query_postgresql_items';
const REDIRECT = 'http://127.0.0.1:47823/callback';

let g: TestGateway;
let t: Targets;
let org: Onboarded;
let manage: string;
let main: { id: string };
let other: { id: string };
let clientId: string;

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1' }), createTargets('tg_stepup', 'pg')]);
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  main = await createConnector(g, manage, { name: 'pg main', type: 'postgresql', config: t.pgConfig });
  other = await createConnector(g, manage, { name: 'pg other', type: 'postgresql', config: { ...t.pgConfig, port: await deadPort() } });
  const res = await api(g, 'POST', '/api/org/mcp-clients', manage, { client_name: 'agent', redirect_uris: [REDIRECT] });
  expect(res.status).toBe(201);
  clientId = ((await res.json()) as { client_id: string }).client_id;
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
}, 60_000);

/** An access token of a person's sign-in with `scopes`, through the real code exchange. */
async function signedInToken(scopes: string[]): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const code = await grantConsent(
    g.deps.store.db,
    {
      org: { id: org.orgId, slug: org.slug, name: org.slug },
      request: {
        client: { clientId, kind: 'preregistered', name: 'agent', redirectUris: [REDIRECT] },
        redirectUri: REDIRECT,
        state: 's',
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        scopes,
      },
      person: { subject: 'user-1', email: 'user-1@example.com', roles: ['contributor'], attributes: {} },
      csrf: 'unused',
      expiresAt: Date.now() + 60_000,
    },
    scopes,
  );
  const res = await g.handle(
    new Request(`${BASE}/oauth/${org.slug}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
    }),
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const challengeOf = (headers: Headers) => headers.get('www-authenticate');

describe.skipIf(!available)('step-up for a connector scope', () => {
  test('a signed-in token narrowed to another connector: 403 insufficient_scope naming the connector, -32003 in the body', async () => {
    const narrowed = { token: await signedInToken([`mcp:call:${other.id}`]) };
    const answer = await callTool(g, org.slug, narrowed, ITEMS, { sql: 'SELECT * FROM items' });
    expectRpcError(answer, -32003, ITEMS, 403);
    expect(answer.body.id).not.toBeNull();
    const challenge = challengeOf(answer.headers)!;
    expect(challenge.startsWith('Bearer ')).toBe(true);
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain(`scope="mcp:call:${main.id}"`);
    expect(challenge).toContain(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp/${org.slug}"`);
    // The named scope is one the resource metadata offers, so the client can ask for it.
    const metadata = await g.handle(new Request(`${BASE}/.well-known/oauth-protected-resource/mcp/${org.slug}`));
    expect(((await metadata.json()) as { scopes_supported: string[] }).scopes_supported).toContain(`mcp:call:${main.id}`);
    // Recorded once, as the tool call's refusal (not again as an authentication refusal).
    await g.deps.audit.drain();
    const audit = await sdk.listAuditEvents({ client: sdkFor(g, manage).client, throwOnError: true, query: { days: 1 } });
    const mine = audit.data.events.filter((e) => e.actor.id === 'user-1@example.com' && e.action !== 'mcp_grant.created');
    expect(mine.map((e) => e.action)).toEqual(['tool.call_refused']);
  });

  test('the token stepped up to that connector calls the tool; other answers of the narrowed token stay 200', async () => {
    const narrowed = { token: await signedInToken([`mcp:call:${other.id}`]) };
    // An unknown tool is no scope question: -32602 in a 200, no challenge.
    const unknown = await callTool(g, org.slug, narrowed, 'no_such_tool', {});
    expectRpcError(unknown, -32602, 'no_such_tool');
    expect(challengeOf(unknown.headers)).toBeNull();
    // In a batch the refusal stays a -32003 beside the other answers (one status cannot speak for each).
    const batch = await rpcRaw(
      g,
      org.slug,
      narrowed,
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: ITEMS, arguments: { sql: 'SELECT * FROM items' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ]),
    );
    expect(batch.status).toBe(200);
    expect(challengeOf(batch.headers)).toBeNull();
    expect(batch.body.find((a: { id: number }) => a.id === 1).error.code).toBe(-32003);
    const stepped = { token: await signedInToken([`mcp:call:${other.id}`, `mcp:call:${main.id}`]) };
    const ok = await callTool(g, org.slug, stepped, ITEMS, { sql: 'SELECT name FROM items' });
    expect(ok.status).toBe(200);
    expect(ok.body.result.isError).toBeFalsy();
  });

  test('an API key limited to connectors and a client-credentials token keep -32003 in a 200, with no challenge', async () => {
    const key = await sdk.createApiKey({ client: sdkFor(g, manage).client, throwOnError: true, body: { name: 'only-other', connector_ids: [other.id] } });
    const byKey = await callTool(g, org.slug, { apiKey: key.data.key }, ITEMS, { sql: 'SELECT * FROM items' });
    expectRpcError(byKey, -32003, ITEMS);
    expect(challengeOf(byKey.headers)).toBeNull();
    const made = await sdk.createOAuthClient({
      client: sdkFor(g, manage).client,
      throwOnError: true,
      body: { name: 'machine', scopes: [`mcp:call:${other.id}`] },
    });
    const machine = await tokenFor(g, made.data.client_id, made.data.client_secret);
    const byClient = await callTool(g, org.slug, { token: machine }, ITEMS, { sql: 'SELECT * FROM items' });
    expectRpcError(byClient, -32003, ITEMS);
    expect(challengeOf(byClient.headers)).toBeNull();
  });
});
