// Issue 38 item 6: the console shows and sets the attributes of API keys and OAuth clients (what row filters bind as
// `:caller.<name>`), in headless Chromium against a real gateway; what the page saved is read back over REST.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import axeCore from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';

const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent) console.warn(`[skip] ${CHROMIUM} is missing: the console attributes suite is skipped`);

describe.skipIf(!chromiumPresent)('console: credential attributes', () => {
  let gateway: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let org: Onboarded;
  let base: string;
  let page: Page;
  let rest: ReturnType<typeof sdkFor>['client'];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    gateway = await startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: 'gateway.test' });
    handle = (request) => gateway.handle(request);
    org = await onboard(gateway);
    rest = sdkFor(gateway, await tokenFor(gateway, org.clientId, org.clientSecret)).client;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
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

  const open = async (id: string, heading: string) => {
    // A page between, so the credential page loads the lists afresh.
    await page.goto(`${base}/console#/overview`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.goto(`${base}/console#/credentials/${id}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor({ timeout: 10_000 });
  };
  const shown = () => page.getByTestId('credential-attributes').innerText();

  test('an API key: none shown, two set from the page, read back over REST and shown; one removed', async () => {
    const key = (await sdk.createApiKey({ client: rest, throwOnError: true, body: { name: 'attr-key' } })).data;
    await open(key.id, 'API key attr-key');
    expect(await shown()).toBe('none');
    const editor = page.getByTestId('attributes-editor');
    await editor.getByRole('button', { name: 'Add attribute' }).click();
    await page.locator('#attr-name-0').fill('region');
    await page.locator('#attr-value-0').fill('eu');
    await editor.getByRole('button', { name: 'Add attribute' }).click();
    await page.locator('#attr-name-1').fill('team');
    await page.locator('#attr-value-1').fill('ops');
    await editor.getByRole('button', { name: 'Save attributes' }).click();
    await page.getByText('Saved the attributes of attr-key').waitFor();
    const stored = async () => (await sdk.listApiKeys({ client: rest, throwOnError: true })).data.api_keys.find((k) => k.id === key.id)!.attributes;
    expect(await stored()).toEqual({ region: 'eu', team: 'ops' });
    await page.getByText('region = eu').waitFor();
    expect(await shown()).toBe('region = eu\nteam = ops');
    // Remove one: saving replaces the whole set.
    await editor.getByRole('button', { name: 'Remove attribute team' }).click();
    await editor.getByRole('button', { name: 'Save attributes' }).click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="credential-attributes"]')?.textContent?.includes('team'));
    expect(await stored()).toEqual({ region: 'eu' });
    expect(await shown()).toBe('region = eu');
    const axe = (await page.evaluate(`${axeCore.source}; axe.run(document, { resultTypes: ['violations'] })`)) as { violations: { id: string }[] };
    expect(axe.violations.map((v) => v.id)).toEqual([]);
  }, 30_000);

  test('a name outside the contract is flagged as typed and cannot be saved; nothing changes', async () => {
    const key = (await sdk.createApiKey({ client: rest, throwOnError: true, body: { name: 'bad-key', attributes: { region: 'us' } } })).data;
    await open(key.id, 'API key bad-key');
    expect(await shown()).toBe('region = us');
    await page.locator('#attr-name-0').fill('no-dash');
    expect(await page.getByTestId('attributes-error').innerText()).toContain('no-dash: Not in the expected form');
    expect(await page.getByRole('button', { name: 'Save attributes' }).isDisabled()).toBe(true);
    await page.locator('#attr-name-0').fill('region');
    await page.getByTestId('attributes-editor').getByRole('button', { name: 'Add attribute' }).click();
    await page.locator('#attr-name-1').fill('region');
    expect(await page.getByTestId('attributes-error').innerText()).toBe('region is given twice.');
    expect(await page.getByRole('button', { name: 'Save attributes' }).isDisabled()).toBe(true);
    const keys = (await sdk.listApiKeys({ client: rest, throwOnError: true })).data.api_keys;
    expect(keys.find((k) => k.id === key.id)!.attributes).toEqual({ region: 'us' });
  }, 30_000);

  test('an OAuth client: its attributes shown and set from its page', async () => {
    const made = (
      await sdk.createOAuthClient({ client: rest, throwOnError: true, body: { name: 'attr-bot', scopes: ['mcp:call'], attributes: { tenant: 't-1' } } })
    ).data;
    await open(made.client_id, 'OAuth client attr-bot');
    expect(await shown()).toBe('tenant = t-1');
    await page.locator('#attr-value-0').fill('t-2');
    await page.getByRole('button', { name: 'Save attributes' }).click();
    await page.getByText('Saved the attributes of attr-bot').waitFor();
    const clients = (await sdk.listOAuthClients({ client: rest, throwOnError: true })).data.oauth_clients;
    expect(clients.find((c) => c.client_id === made.client_id)!.attributes).toEqual({ tenant: 't-2' });
    await page.getByText('tenant = t-2').waitFor();
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
