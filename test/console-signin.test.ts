// The console's "Signed-in agents" page (issue 29) in headless Chromium against a real gateway: grants listed by
// person and by the client's checkable name (the host of its client_id) with its claimed name beside it, connector
// names instead of scope ids, a revoke from the page that the REST list (the generated SDK) then shows, the
// registration switch, pre-registering a client, empty states, axe-core clean. Grants are minted by the consent
// step's own function, as the consent page does once a person allows. Screenshots: test-artifacts/console-pages/.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import axeCore from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { grantConsent } from '../src/auth/oauth-server/consent.ts';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';

setDefaultTimeout(30_000);
const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent) console.warn(`[skip] ${CHROMIUM} is missing: the signed-in agents page suite is skipped`);

const SHOTS = join(import.meta.dir, '..', 'test-artifacts', 'console-pages');
const REDIRECT = 'http://127.0.0.1:47823/callback';

describe.skipIf(!chromiumPresent)('console: signed-in agents', () => {
  let gateway: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let org: Onboarded;
  let base: string;
  let page: Page;
  let manage: string;
  let connectorId: string;
  const pageErrors: string[] = [];

  /** A grant as the consent page records it once the person allows (the code itself is not used here). */
  async function signIn(email: string, clientId: string, clientName: string | null, kind: 'metadata_document' | 'preregistered', scopes: string[]) {
    await grantConsent(
      gateway.deps.store.db,
      {
        org: { id: org.orgId, slug: org.slug, name: org.slug },
        request: {
          client: { clientId, kind, name: clientName, redirectUris: [REDIRECT] },
          redirectUri: REDIRECT,
          state: 's',
          codeChallenge: 'x'.repeat(43),
          scopes,
        },
        person: { subject: `sub-${email}`, email, roles: ['contributor'], attributes: {} },
        csrf: 'unused',
        expiresAt: Date.now() + 60_000,
      },
      scopes,
    );
  }

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    // The connector is only named here: its host is allowed and resolves to a local port where nothing listens.
    gateway = await startTestGateway(
      'pglite',
      { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: 'gateway.test', TOOLGATE_OUTBOUND_ALLOW_HOSTS: 'crm.test:9' },
      undefined,
      { resolve: async () => ['127.0.0.1'] },
    );
    handle = (request) => gateway.handle(request);
    org = await onboard(gateway);
    manage = await tokenFor(gateway, org.clientId, org.clientSecret);
    const created = await sdk.createConnector({
      client: sdkFor(gateway, manage).client,
      throwOnError: true,
      body: { name: 'crm', type: 'mcp', config: { url: 'http://crm.test:9/mcp' } },
    });
    connectorId = created.data.id;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
    mkdirSync(SHOTS, { recursive: true });
    await page.goto(`${base}/console`);
    // The OAuth client sign-in is behind a link: people sign in with e-mail and password (issue 40).
    await page.getByText('Sign in with an OAuth client').click();
    await page.getByLabel('Client id').fill(org.clientId);
    await page.getByLabel('Client secret').fill(org.clientSecret);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    await gateway?.close();
  }, 30_000);

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const open = async () => {
    await page.goto(`${base}/console#/overview`);
    await page.getByRole('link', { name: 'Signed-in agents' }).click();
    await page.getByRole('heading', { level: 1, name: 'Signed-in agents' }).waitFor({ timeout: 10_000 });
    await page
      .locator('.loading')
      .first()
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => {});
  };
  async function axe(): Promise<string[]> {
    if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: axeCore.source });
    const result = (await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }))) as {
      violations: { id: string; nodes: { target: string[] }[] }[];
    };
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  const grants = async () => (await sdk.listMcpGrants({ client: sdkFor(gateway, manage).client, throwOnError: true })).data.grants;

  test('empty states say what comes next; axe clean', async () => {
    await open();
    const empties = page.getByTestId('empty');
    expect(await empties.count()).toBe(2);
    expect(await empties.first().innerText()).toContain('No one has signed in');
    expect(await axe()).toEqual([]);
    await shot('20-agents-empty');
  });

  test('a grant is named by person and client host, scopes by connector name; revoking it shows in the REST list', async () => {
    await signIn('ada@example.com', 'https://agent.example.org/client.json', 'Totally Claude', 'metadata_document', [`mcp:call:${connectorId}`]);
    await signIn('bob@example.com', 'https://other.example.net/c.json', null, 'metadata_document', ['mcp:call']);
    await open();
    const ada = (await grants()).find((g) => g.email === 'ada@example.com')!;
    const row = page.getByTestId(`grant-${ada.id}`);
    const text = await row.innerText();
    expect(text).toContain('ada@example.com');
    expect(text).toContain('agent.example.org');
    expect(text).toContain('calls itself “Totally Claude”');
    expect(text).toContain('crm');
    expect(text).not.toContain(connectorId);
    expect(await page.getByTestId(`grant-${(await grants()).find((g) => g.email === 'bob@example.com')!.id}`).innerText()).toContain('all connectors');
    // Search narrows the table.
    await page.getByLabel('Search sign-ins').fill('agent.example');
    expect(await page.locator('tbody tr[data-testid^="grant-"]').count()).toBe(1);
    await page.getByLabel('Search sign-ins').fill('');
    expect(await axe()).toEqual([]);
    await shot('21-agents-grants');
    await row.getByRole('button', { name: /Revoke the sign-in of ada@example.com/ }).click();
    await page.getByTestId('toasts').getByText('Revoked the sign-in of ada@example.com').waitFor();
    await row.getByText('revoked (revoked_by_admin)').waitFor();
    const after = await grants();
    expect(after.find((g) => g.id === ada.id)!.revoked_reason).toBe('revoked_by_admin');
    expect(after.find((g) => g.id === ada.id)!.revoked_at).not.toBeNull();
    expect(after.find((g) => g.email === 'bob@example.com')!.revoked_at).toBeNull();
    await shot('22-agents-revoked');
  });

  test('pre-register a client, close registration with the switch, revoke the client; REST agrees', async () => {
    await open();
    await page.getByLabel('Client name').fill('Build agent');
    await page.getByLabel(/Redirect URIs/).fill(REDIRECT);
    await page.getByRole('button', { name: 'Pre-register' }).click();
    await page
      .getByTestId('toasts')
      .getByText(/Pre-registered Build agent/)
      .waitFor();
    const listed = await sdk.listMcpClients({ client: sdkFor(gateway, manage).client, throwOnError: true });
    const made = listed.data.clients.find((c) => c.client_name === 'Build agent')!;
    expect(made.redirect_uris).toEqual([REDIRECT]);
    const row = page.getByTestId(`mcp-client-${made.client_id}`);
    await row.waitFor();
    const dcr = page.getByRole('switch', { name: 'Dynamic client registration' });
    expect(await dcr.getAttribute('aria-checked')).toBe('true');
    await dcr.click();
    await page.getByTestId('toasts').getByText('Dynamic registration closed').waitFor();
    await page.waitForFunction(() => document.querySelector('[role=switch]')?.getAttribute('aria-checked') === 'false');
    expect((await sdk.listMcpClients({ client: sdkFor(gateway, manage).client, throwOnError: true })).data.registration_enabled).toBe(false);
    await row.getByRole('button', { name: 'Revoke the client Build agent' }).click();
    await row.getByText('revoked').waitFor();
    const again = await sdk.listMcpClients({ client: sdkFor(gateway, manage).client, throwOnError: true });
    expect(again.data.clients.find((c) => c.client_id === made.client_id)!.revoked_at).not.toBeNull();
    expect(await axe()).toEqual([]);
    await shot('23-agents-clients');
  });

  test('at 390 px: no sideways scrolling of the page, axe clean; the switch works by keyboard', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await open();
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
    expect(await axe()).toEqual([]);
    await shot('390-agents');
    await page.setViewportSize({ width: 1366, height: 900 });
    const dcr = page.getByRole('switch', { name: 'Dynamic client registration' });
    expect(await dcr.getAttribute('aria-checked')).toBe('false');
    await dcr.focus();
    await page.keyboard.press('Space');
    await page.getByTestId('toasts').getByText('Dynamic registration opened').waitFor();
    expect((await sdk.listMcpClients({ client: sdkFor(gateway, manage).client, throwOnError: true })).data.registration_enabled).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
