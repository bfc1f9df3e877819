// Issue 29, end to end with real parts: the official v2 SDK client (@modelcontextprotocol/client) signs in to a real
// gateway served on a port, knowing only the MCP URL: discovery from the 401, the metadata documents, a client ID
// metadata document on an https server of a test CA (and, separately, dynamic registration), the person's sign-in
// at oidc-provider (the org's IdP) and the consent page in headless Chromium; then tools/list and tools/call with
// the issued token, a refresh, and an admin's revoke that ends it on a second instance at once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { chromium, type Browser } from 'playwright-core';
import { auth, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { startOidcProvider, type TestOidc } from './support/oidc.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { connectors, mcpOauthGrants } from '../src/store/schema.ts';
import { eq } from 'drizzle-orm';
import { makeTestCa, opensslPresent, startMetadataServer, TestAuthProvider, type MetadataServer } from './support/mcp-sign-in.ts';
import { pgHostPort } from './support/idp.ts';
import { createConnector } from './support/mcp.ts';
import { createTargets } from './support/targets.ts';

const CHROMIUM = '/usr/bin/chromium';
const pgUp = await serviceAvailable('postgres');
const runnable = existsSync(CHROMIUM) && pgUp && opensslPresent;
if (!runnable) console.warn('[skip] MCP sign-in end to end needs Chromium, PostgreSQL and openssl');

const CIMD_HOST = 'agent-metadata.test';
/** Where the agent's browser is sent back to: nothing listens; the browser's request is caught and answered by the test. */
const REDIRECT = 'http://127.0.0.1:47823/callback';

describe.skipIf(!runnable)('an MCP client signs in with only the URL (SDK v2, Chromium, oidc-provider)', () => {
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  let g: TestGateway;
  let second: TestGateway;
  let oidc: TestOidc;
  let metadata: MetadataServer;
  let browser: Browser;
  let org: Onboarded;
  let manage: string;

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    const ca = makeTestCa(CIMD_HOST);
    metadata = startMetadataServer(ca, CIMD_HOST, REDIRECT);
    const slug = `signin-${Date.now().toString(36)}`;
    oidc = await startOidcProvider([`${base}/oauth/${slug}/callback`], { alice: { email: 'alice@example.com', role: 'admin' } });
    const env = {
      TOOLGATE_PUBLIC_URL: base,
      TOOLGATE_ALLOWED_HOSTS: 'gateway.test',
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: [oidc.hostPort, `${CIMD_HOST}:${metadata.port}`, pgHostPort()].join(','),
      TOOLGATE_OUTBOUND_CA_FILE: ca.caFile,
    };
    // The metadata host's name is answered here (no DNS server knows it); every other name as the system would.
    const resolve = async (host: string) => (host === CIMD_HOST ? ['127.0.0.1'] : (await lookup(host, { all: true })).map((a) => a.address));
    g = await startTestGateway('postgres', env, undefined, { resolve });
    second = await startTestGateway('postgres', env, g.databaseUrl!, { resolve });
    handle = (request) => g.handle(request);
    org = await onboard(g, slug);
    manage = await tokenFor(g, org.clientId, org.clientSecret);
    const saved = await sdk.setIdpConfig({
      client: sdkFor(g, manage).client,
      body: {
        issuer: oidc.issuer,
        jwks_uri: oidc.jwksUri,
        audience: oidc.audience,
        console_client_id: oidc.clientId,
        console_client_secret: oidc.clientSecret,
      },
    });
    expect(saved.response.status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    metadata?.stop();
    await second?.close();
    await g?.close();
    await oidc?.stop();
  }, 30_000);

  /** The person in the browser: signs in at the IdP, (optionally narrows the scopes), allows; returns the callback's parameters. */
  async function signInAndConsent(
    authorizationUrl: URL,
    check?: (consentHtml: string) => void,
    narrow?: (page: import('playwright-core').Page) => Promise<void>,
  ): Promise<URLSearchParams> {
    const context = await browser.newContext();
    const page = await context.newPage();
    let callback: URL | null = null;
    await context.route(`${REDIRECT}**`, (route) => {
      callback = new URL(route.request().url());
      return route.fulfill({ status: 200, body: 'signed in' });
    });
    await page.goto(authorizationUrl.href);
    await page.waitForURL((url) => url.href.startsWith(oidc.issuer));
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('any-password');
    await page.locator('button[type="submit"]').click();
    await page.getByRole('heading', { name: 'Allow this client to use your tools?' }).waitFor({ timeout: 15_000 });
    check?.(await page.content());
    await narrow?.(page);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(REDIRECT), { timeout: 10_000 });
    await context.close();
    return callback!.searchParams;
  }

  async function connect(provider: TestAuthProvider, narrow?: (page: import('playwright-core').Page) => Promise<void>): Promise<Client> {
    const mcpUrl = new URL(`${base}/mcp/${org.slug}`);
    const client = new Client({ name: 'sign-in-test', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
      return client;
    } catch {
      // The SDK found the sign-in from the 401 and sent the person to the authorization URL.
      expect(provider.authorizationUrl).not.toBeNull();
    }
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    const params = await signInAndConsent(
      provider.authorizationUrl!,
      (html) => {
        // The consent page names the client truthfully (its client_id host first) and escapes what it claims.
        if (provider.clientMetadataUrl) expect(html).toContain(`${CIMD_HOST}:${metadata.port}`);
        expect(html).not.toContain('<b>');
        expect(html).toContain(org.slug);
      },
      narrow,
    );
    expect(params.get('iss')).toBe(`${base}/oauth/${org.slug}`);
    await transport.finishAuth(params);
    const signedIn = new Client({ name: 'sign-in-test', version: '1.0.0' });
    await signedIn.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    return signedIn;
  }

  test('client ID metadata document: sign in, list and call tools, refresh, revoke on another instance', async () => {
    const provider = new TestAuthProvider(REDIRECT, metadata.url('/agent.json'));
    const client = await connect(provider);
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(metadata.url('/agent.json'));
    expect(provider.authorizationUrl!.searchParams.get('resource')).toBe(`${base}/mcp/${org.slug}`);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('check_approval_status');
    const called = await client.callTool({ name: 'check_approval_status', arguments: { approvalId: crypto.randomUUID() } });
    expect(called.isError).toBeFalsy();
    await client.close();

    // A refresh: the SDK trades its refresh token for new tokens; the old refresh token is spent.
    const before = provider.tokens()!;
    expect(await auth(provider, { serverUrl: new URL(`${base}/mcp/${org.slug}`) })).toBe('AUTHORIZED');
    const after = provider.tokens()!;
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);

    // The person and IdP role flow into the grant the admins see and into the audit actor of the call.
    const admin = sdkFor(g, manage).client;
    await g.deps.audit.drain();
    const { data: audit } = await sdk.listAuditEvents({ client: admin, throwOnError: true });
    const call = audit.events.find((e) => e.action === 'tool.called');
    expect(call?.actor).toEqual({ type: 'user', id: 'alice@example.com' });
    const { data: listed } = await sdk.listMcpGrants({ client: admin, throwOnError: true });
    const grant = listed.grants.find((x) => x.client_id === metadata.url('/agent.json'))!;
    expect(grant.email).toBe('alice@example.com');
    expect(grant.roles).toEqual(['admin']);
    // The person's IdP claims as of sign-in are kept with the grant: row filters bind them (`:caller.email`).
    const [kept] = await g.deps.store.db.select({ attributes: mcpOauthGrants.attributes }).from(mcpOauthGrants).where(eq(mcpOauthGrants.id, grant.id));
    expect(kept!.attributes.email).toBe('alice@example.com');
    expect(kept!.attributes.sub).toBe(grant.subject);
    const onSecond = (token: string) =>
      second.handle(
        new Request(`${base}/mcp/${org.slug}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        }),
      );
    expect((await onSecond(after.access_token)).status).toBe(200);
    expect((await sdk.revokeMcpGrant({ client: admin, path: { grantId: grant.id } })).response.status).toBe(200);
    const refused = await onSecond(after.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('resource_metadata=');
  }, 90_000);

  test('dynamic client registration: the SDK registers, the person signs in, tools work', async () => {
    const provider = new TestAuthProvider(REDIRECT);
    const client = await connect(provider);
    expect(provider.clientInformation()!.client_id).toMatch(/^mcp_/);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    const { data } = await sdk.listMcpClients({ client: sdkFor(g, manage).client, throwOnError: true });
    expect(data.clients.map((c) => c.client_id)).toContain(provider.clientInformation()!.client_id);
  }, 90_000);

  test('the person narrows the scopes on the consent page: the token may call one connector only', async () => {
    const [row] = await g.deps.store.db.insert(connectors).values({ orgId: org.orgId, name: 'crm', type: 'mcp', status: 'active', config: {} }).returning();
    const provider = new TestAuthProvider(REDIRECT, metadata.url('/agent.json'));
    const client = await connect(provider, async (page) => {
      await page.getByLabel(/Every connector/).uncheck();
      await page.getByLabel(/Only the tools of crm/).check();
    });
    expect(provider.tokens()!.scope).toBe(`mcp:call:${row!.id}`);
    // check_approval_status stays available; no other connector's tools are listed.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['check_approval_status']);
    await client.close();
  }, 90_000);

  test('step-up (decision 0248): a call outside the narrowed sign-in sends the person back for that connector; then it runs', async () => {
    const targets = await createTargets('tg_stepup_sdk', 'pg');
    try {
      const pg = await createConnector(g, manage, { name: 'shop', type: 'postgresql', config: targets.pgConfig });
      const [ledger] = await g.deps.store.db
        .insert(connectors)
        .values({ orgId: org.orgId, name: 'ledger', type: 'mcp', status: 'active', config: {} })
        .returning();
      const provider = new TestAuthProvider(REDIRECT, metadata.url('/agent.json'));
      const client = await connect(provider, async (page) => {
        await page.getByLabel(/Every connector/).uncheck();
        await page.getByLabel(/Only the tools of ledger/).check();
      });
      expect(provider.tokens()!.scope).toBe(`mcp:call:${ledger!.id}`);
      const first = provider.authorizationUrl!.href;
      // The 403 challenge makes the SDK ask again, for the union of what it holds and the challenged connector.
      const call = () => client.callTool({ name: 'query_postgresql_items', arguments: { sql: 'SELECT name FROM items' } });
      await expect(call()).rejects.toThrow();
      expect(provider.authorizationUrl!.href).not.toBe(first);
      const asked = provider.authorizationUrl!.searchParams.get('scope')!.split(' ');
      expect(asked).toContain(`mcp:call:${pg.id}`);
      expect(asked).toContain(`mcp:call:${ledger!.id}`);
      // The person ticks the connector on the consent page (the client's request preselects it), the client retries.
      const params = await signInAndConsent(provider.authorizationUrl!);
      const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/${org.slug}`), { authProvider: provider });
      await transport.finishAuth(params);
      expect(provider.tokens()!.scope!.split(' ').sort()).toEqual([`mcp:call:${pg.id}`, `mcp:call:${ledger!.id}`].sort());
      const again = new Client({ name: 'sign-in-test', version: '1.0.0' });
      await again.connect(transport);
      const ran = await again.callTool({ name: 'query_postgresql_items', arguments: { sql: 'SELECT name FROM items' } });
      expect(ran.isError).toBeFalsy();
      await again.close();
      await client.close();
    } finally {
      await targets.drop();
    }
  }, 120_000);
});
