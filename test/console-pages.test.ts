// The console as admins use it day to day (issue 31), in headless Chromium against a real gateway and PostgreSQL:
// names instead of ids, insight from the audit trail, the live approvals badge, switches and greyed rows, search and
// sort, toasts, inline validation from the contract, schema-driven connector forms with a connection test, scoped keys
// and clients, detail pages, "Connect an agent" (its Cursor/VS Code configuration fed to the real MCP SDK client),
// the tool playground, GET /, keyboard use, axe-core on every page, and every page at 390 px. Screenshots go to
// test-artifacts/console-pages/ (git-ignored).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import axeCore from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import { agentConfigs } from '../web/console/agent-configs.ts';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';
import { callTool, listToolNames } from './support/mcp.ts';
import { emitEvent, startReceiver, until, type Receiver } from './support/webhooks.ts';
import { pgHostPort } from './support/idp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { chromiumOr, launchChromium, signInWithClient } from './support/browser.ts';

const chromiumPresent = chromiumOr('the console pages suite is skipped');
const pgUp = await serviceAvailable('postgres');
if (!pgUp) console.warn('[skip] PostgreSQL is not reachable: the console pages suite is skipped');

const SHOTS = join(import.meta.dir, '..', 'test-artifacts', 'console-pages');
const AXE = axeCore.source;
const PAGES = [
  ['overview', 'Overview'],
  ['connectors', 'Connectors'],
  ['tools', 'Tools'],
  ['approvals', 'Approvals'],
  ['audit', 'Audit'],
  ['playground', 'Tool playground'],
  ['connect', 'Connect an agent'],
  ['credentials', 'API keys & OAuth clients'],
  ['idp', 'Identity provider'],
  ['webhooks', 'Webhooks'],
  ['billing', 'Billing'],
] as const;

describe.skipIf(!chromiumPresent || !pgUp)('console pages in headless Chromium', () => {
  let gateway: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let targets: Targets;
  let org: Onboarded;
  let base: string;
  let page: Page;
  let receiver: Receiver;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    targets = await createTargets('tg_cpages', 'pg');
    // A real webhook receiver: its answer (status, headers, body) is what the webhook page shows per attempt.
    receiver = startReceiver(() => new Response('{"received":true}', { status: 202, headers: { 'content-type': 'application/json', 'x-receiver': 'test' } }));
    gateway = await startTestGateway('pglite', {
      TOOLGATE_PUBLIC_URL: base,
      TOOLGATE_ALLOWED_HOSTS: 'gateway.test',
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${pgHostPort()},${receiver.hostPort}`,
      TOOLGATE_WEBHOOK_POLL_MS: '50',
    });
    handle = (request) => gateway.handle(request);
    org = await onboard(gateway);
    browser = await launchChromium();
    // bypassCSP: axe-core is injected as an inline script, which the console's CSP (rightly) forbids.
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
    mkdirSync(SHOTS, { recursive: true });
    await signInWithClient(page, base, org);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    receiver?.stop();
    await gateway?.close();
    await targets?.drop();
  }, 30_000);

  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const open = async (route: string, heading: string | RegExp) => {
    await page.goto(`${base}/console#/${route}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor({ timeout: 10_000 });
    await page
      .locator('.loading')
      .first()
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => {});
  };
  async function axe(): Promise<string[]> {
    if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE });
    const result = (await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }))) as {
      violations: { id: string; nodes: { target: string[] }[] }[];
    };
    return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  test('GET / leads to the console, the docs and the MCP URL', async () => {
    await page.goto(`${base}/`);
    expect(await page.getByRole('link', { name: 'Open the console' }).getAttribute('href')).toBe('/console');
    expect(await page.getByRole('link', { name: 'API reference' }).getAttribute('href')).toBe('/docs');
    expect(await page.locator('main').innerText()).toContain(`${base}/mcp/<org-slug>`);
    expect(await axe()).toEqual([]);
    await shot('00-landing');
  });

  test('the sidebar names the org and the signed-in client; the connector form is drawn from the schema and tests the connection', async () => {
    await open('connectors', 'Connectors');
    expect(await page.getByTestId('org-name').innerText()).toBe(`Org ${org.slug}`);
    expect(await page.getByTestId('actor-name').innerText()).toBe('default');
    // Empty state with the next step.
    await page.getByTestId('empty').getByRole('button', { name: 'Add the first connector' }).click();
    // Six types; each shows the fields its schema gives it (auth_source only for mongodb, schemas not for mongodb/mysql).
    for (const [type, has, lacks] of [
      ['mongodb', 'Auth source', 'Schemas'],
      ['mysql', 'Host', 'Schemas'],
      ['mssql', 'Schemas', 'Auth source'],
      ['mcp', 'Server URL (https)', 'Host'],
    ] as const) {
      await page.getByLabel('Type').selectOption(type);
      expect(await page.getByLabel(has).count(), `${type} has ${has}`).toBe(1);
      expect(await page.getByLabel(lacks).count(), `${type} lacks ${lacks}`).toBe(0);
    }
    await page.getByLabel('Type').selectOption('postgresql');
    // TLS preselects require, the API's default; a port outside the schema's range is refused where it is typed.
    expect(await page.getByLabel('TLS').inputValue()).toBe('require');
    await page.getByLabel('Name').fill('shop');
    await page.getByLabel('Host').fill(targets.pgConfig.host);
    await page.getByLabel('Port').fill('70000');
    expect(await page.locator('#c-port-problem').innerText()).toBe('At most 65535.');
    expect(await page.getByRole('button', { name: 'Test connection' }).isDisabled()).toBe(true);
    await page.getByLabel('Port').fill(String(targets.pgConfig.port));
    await page.getByLabel('Database', { exact: true }).fill(targets.pgConfig.database);
    await page.getByLabel('User', { exact: true }).fill(targets.pgConfig.user);
    // The test server has no TLS: the test says so, naming TLS.
    await page.getByRole('button', { name: 'Test connection' }).click();
    expect(await page.getByTestId('connection-test').innerText()).toContain('does not accept TLS');
    await page.getByLabel('TLS').selectOption('disable');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByTestId('connection-test').filter({ hasText: 'Connected:' }).waitFor();
    // Description and table patterns (decision 0303): a pattern without schema.table is refused where it is typed.
    await page.getByLabel('Description (optional)').fill('the shop, staging');
    await page.getByLabel('Exclude tables (comma-separated patterns, optional)').fill('secrets');
    await page.getByText('"secrets" must have the form schema.table').waitFor();
    await page.getByLabel('Exclude tables (comma-separated patterns, optional)').fill('public.secret*');
    expect(await axe()).toEqual([]);
    await shot('01-connector-form');
    await page.getByRole('button', { name: 'Create connector' }).click();
    await page.getByTestId('toasts').getByText('Created shop; validating').waitFor();
    await page.getByTestId('connector-shop').getByTestId('connector-status').filter({ hasText: 'active' }).waitFor({ timeout: 30_000 });
    const [created] = (await sdk.listConnectors({ client: sdkFor(gateway, await tokenFor(gateway, org.clientId, org.clientSecret)).client })).data!.connectors;
    expect(created).toMatchObject({ description: 'the shop, staging', include_tables: [], exclude_tables: ['public.secret*'] });
  }, 60_000);

  test('tools: switches, greyed rows, read-only connector, search and sort; a tool page with its calls', async () => {
    await open('tools', 'Tools');
    const items = page.getByTestId('tool-query_postgresql_items');
    // The connector does not allow writes: its tools are read-only, not "Writable".
    expect(await items.getByText('Read-only (connector)').count()).toBe(1);
    // Search narrows the rows; sorting by tool name descending puts notes before items.
    await page.getByLabel('Search tools').fill('notes');
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Search tools').fill('');
    await page.getByRole('button', { name: 'Tool', exact: true }).click();
    await page.getByRole('button', { name: 'Tool', exact: true }).click();
    const first = await page.locator('tbody tr').first().getAttribute('data-testid');
    expect(first).toBe('tool-query_postgresql_notes');
    // Keyboard: the switch toggles with Space, the row greys, a toast confirms.
    const notes = page.getByTestId('tool-query_postgresql_notes');
    await notes.getByRole('switch', { name: 'Enabled: query_postgresql_notes' }).focus();
    await page.keyboard.press('Space');
    await page.locator('[data-testid="tool-query_postgresql_notes"].row-disabled').waitFor();
    await page.getByTestId('toasts').getByText('query_postgresql_notes disabled').waitFor();
    await notes.getByRole('switch', { name: 'Enabled: query_postgresql_notes' }).click();
    await page.locator('[data-testid="tool-query_postgresql_notes"]:not(.row-disabled)').waitFor();
    // Many at once (decision 0304): select all (the two table tools and the connector's schema tool describe_shop,
    // decision 0313), disable in one request, every row greys; then enable them again.
    const bulk = page.getByTestId('tools-bulk');
    await bulk.getByRole('button', { name: 'Select all 3' }).click();
    expect(await bulk.getByText('3 selected').count()).toBe(1);
    await bulk.getByRole('button', { name: 'Disable selected' }).click();
    await page.getByTestId('toasts').getByText('3 tools disabled').waitFor();
    await page.locator('[data-testid="tool-query_postgresql_items"].row-disabled').waitFor();
    await page.locator('[data-testid="tool-query_postgresql_notes"].row-disabled').waitFor();
    await page.locator('[data-testid="tool-describe_shop"].row-disabled').waitFor();
    expect(await listToolNames(gateway, org.slug, { apiKey: org.apiKey })).toEqual(['check_approval_status']);
    await bulk.getByRole('button', { name: 'Enable selected' }).click();
    await page.getByTestId('toasts').getByText('3 tools enabled').waitFor();
    await page.locator('[data-testid="tool-query_postgresql_items"]:not(.row-disabled)').waitFor();
    await page.locator('[data-testid="tool-describe_shop"]:not(.row-disabled)').waitFor();
    await page.getByLabel('Select query_postgresql_items').uncheck();
    expect(await bulk.getByText('2 selected').count()).toBe(1);
    expect(await axe()).toEqual([]);
    await shot('02-tools');
    // The tool's page lists its calls with who made them, by name.
    expect((await callTool(gateway, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT name FROM items' })).status).toBe(200);
    await items.getByRole('link', { name: 'query_postgresql_items' }).click();
    await page.getByRole('heading', { level: 1, name: 'Tool query_postgresql_items' }).waitFor();
    await page
      .getByRole('cell', { name: /API key default/ })
      .first()
      .waitFor({ timeout: 10_000 });
    expect(await axe()).toEqual([]);
    await shot('03-tool-detail');
  }, 60_000);

  test('overview: insight from the audit trail, recent activity by name, and the live approvals badge', async () => {
    const agent = { apiKey: org.apiKey };
    await callTool(gateway, org.slug, agent, 'query_postgresql_items', { sql: 'SELECT nope FROM items' });
    await callTool(gateway, org.slug, agent, 'query_postgresql_missing', { sql: 'SELECT 1' });
    // Insights count sealed audit rows, sealed off the hot path (audit/recorder.ts) and the overview reloads them every
    // 15 s: wait for the seal so the first load already counts these calls instead of racing it.
    await gateway.deps.audit.drain();
    await open('overview', 'Overview');
    const totals = page.getByTestId('insight-totals');
    await totals.getByText('Refusals').waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="insight-totals"]')?.textContent?.includes('Calls2'));
    expect(await totals.innerText()).toMatch(/Refusals\s*1/);
    expect(await page.locator('.chart svg[role="img"]').getAttribute('aria-label')).toContain('2 calls and 1 refusals');
    await page.getByTestId('recent-activity').getByText('API key default').first().waitFor();
    // While loading, no "quota … (usage: finance role)" text; once loaded, the usage.
    expect(await page.getByText('usage: finance role').count()).toBe(0);
    expect(await page.getByTestId('usage').innerText()).toMatch(/of .* tool calls/);
    await page.getByRole('button', { name: 'Last 7 days' }).click();
    await page.locator('.chart svg[aria-label*="7 days"]').waitFor();
    expect(await page.getByTestId('pending-badge').count()).toBe(0);
    // The badge's poll: the same list answers 304 with no body the second time (ETag), a changed one 200.
    const polled = await page.evaluate(async () => {
      const { csrf_token } = await (await fetch('/console/session')).json();
      const url = '/api/org/approvals?status=pending&limit=500';
      const first = await fetch(url, { headers: { 'x-toolgate-csrf': csrf_token } });
      const etag = first.headers.get('etag') ?? '';
      const again = await fetch(url, { headers: { 'x-toolgate-csrf': csrf_token, 'if-none-match': etag }, cache: 'no-store' });
      return { first: first.status, etag, again: again.status, body: await again.text() };
    });
    expect(polled).toEqual({ first: 200, etag: expect.stringMatching(/^"[\w-]{27}"$/), again: 304, body: '' });
    expect(await axe()).toEqual([]);
    await shot('04-overview');
    // A held call: the badge appears without a reload (polling with ETag), and the approval's page names the requester.
    await open('tools', 'Tools');
    await page.getByRole('switch', { name: 'Requires approval: query_postgresql_items' }).click();
    await page.locator('[role="switch"][aria-label="Requires approval: query_postgresql_items"][aria-checked="true"]').waitFor();
    const held = await callTool(gateway, org.slug, agent, 'query_postgresql_items', { sql: 'SELECT name FROM items' });
    const approvalId = held.body.result.structuredContent.approvalId as string;
    await page.getByTestId('pending-badge').filter({ hasText: '1' }).waitFor({ timeout: 10_000 });
    await page.getByRole('link', { name: /Approvals/ }).click();
    await page.getByTestId(`approval-${approvalId}`).getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'Approval' }).waitFor();
    expect(await page.getByTestId(`approval-${approvalId}`).innerText()).toMatch(/Requested by\s+API key default/);
    await page.getByRole('button', { name: 'Approve and run' }).click();
    await page.getByTestId('approval-result').waitFor();
    await page.getByRole('cell', { name: 'approval.approved' }).first().waitFor({ timeout: 10_000 });
    await page
      .getByTestId('pending-badge')
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => {});
    expect(await axe()).toEqual([]);
    await shot('05-approval-detail');
  }, 60_000);

  test('audit: invalid days refused visibly, names for actors and targets, every field of an event', async () => {
    await open('audit', 'Audit');
    await page.getByLabel('Days').fill('abc');
    expect(await page.locator('#a-days-problem').innerText()).toBe('Enter a number.');
    expect(await page.getByRole('button', { name: 'Filter' }).isDisabled()).toBe(true);
    await page.getByLabel('Days').fill('7');
    await page.getByLabel('Action', { exact: true }).fill('connector.created');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator('tbody tr').first();
    await row.getByText('client default').waitFor();
    expect(await row.innerText()).toContain('connector shop');
    await row.getByRole('button', { name: /every field of event/ }).click();
    const fields = page.locator('.event-fields');
    for (const field of ['hash', 'prev_hash', 'details', 'created_at', 'outcome']) expect(await fields.innerText()).toContain(field);
    expect(await axe()).toEqual([]);
    await shot('06-audit');
  });

  test('credentials: a key scoped to a connector, a client with mcp:call:<connector>, the secret kept until acknowledged', async () => {
    await open('credentials', 'API keys & OAuth clients');
    await page.getByLabel('Name of the new key').fill('shop-agent');
    await page.locator('fieldset').filter({ hasText: 'Limit to connectors' }).getByLabel('shop').check();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = await page.getByTestId('secret-value').innerText();
    expect(secret).toStartWith('tgk_');
    expect(await page.getByTestId('key-shop-agent').innerText()).toContain('shop');
    // The next action waits until the secret is stored: the panel stays, the create buttons are off.
    expect(await page.getByRole('button', { name: 'Create OAuth client' }).isDisabled()).toBe(true);
    await page.getByLabel('Name of the new client').fill('shop-client');
    expect(await page.getByTestId('secret-value').innerText()).toBe(secret);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.locator('fieldset').filter({ hasText: 'Tools of these connectors only' }).getByLabel('shop').check();
    await page.getByRole('button', { name: 'Create OAuth client' }).click();
    expect(await page.getByTestId('secret-value').innerText()).toStartWith('tgs_');
    await page.getByTestId('client-shop-client').getByText('mcp:call on shop').waitFor();
    expect(await axe()).toEqual([]);
    await shot('07-credentials');
    await page.getByRole('button', { name: 'I have stored it' }).click();
  });

  test('a credential page: scopes, connector limits, created and last use, reached from the credentials table', async () => {
    const token = await tokenFor(gateway, org.clientId, org.clientSecret);
    const rest = sdkFor(gateway, token).client;
    const shop = (await sdk.listConnectors({ client: rest, throwOnError: true })).data.connectors.find((c) => c.name === 'shop')!;
    const created = (await sdk.createApiKey({ client: rest, throwOnError: true, body: { name: 'used-key', connector_ids: [shop.id] } })).data;
    await sdk.createApiKey({ client: rest, throwOnError: true, body: { name: 'idle-key' } });
    // A use on the MCP endpoint; its time is written in the background, at most once a minute (decision 0282).
    await listToolNames(gateway, org.slug, { apiKey: created.key });
    await until(async () => {
      const keys = (await sdk.listApiKeys({ client: rest, throwOnError: true })).data.api_keys;
      return keys.find((k) => k.id === created.id)!.last_used_at !== null;
    });
    // (The page is on #/credentials from the test before: a page between makes it load the list afresh.)
    await open('overview', 'Overview');
    await open('credentials', 'API keys & OAuth clients');
    expect(await page.getByTestId('key-idle-key').innerText()).toContain('never');
    await page.getByTestId('key-used-key').getByRole('link', { name: 'used-key' }).click();
    await page.getByRole('heading', { level: 1, name: 'API key used-key' }).waitFor();
    expect(await page.getByTestId('credential-last-used').innerText()).not.toBe('never');
    expect(await page.getByTestId('credential-connectors').innerText()).toBe('shop');
    expect(await page.getByTestId('credential-state').innerText()).toBe('active');
    expect(await page.locator('main').innerText()).toContain('Created');
    expect(await axe()).toEqual([]);
    await shot('07b-credential-key');
    // The console's own client: its scopes, and a last use (the token it signed in with).
    await open('credentials', 'API keys & OAuth clients');
    await page.getByTestId('client-default').getByRole('link', { name: 'default' }).click();
    await page.getByRole('heading', { level: 1, name: 'OAuth client default' }).waitFor();
    expect(await page.getByTestId('credential-scopes').innerText()).toContain('org:manage');
    expect(await page.getByTestId('credential-last-used').innerText()).not.toBe('never');
    expect(await axe()).toEqual([]);
    await shot('07c-credential-client');
  }, 30_000);

  test('Connect an agent: the configurations name the endpoint, and the Cursor/VS Code one works with the real MCP client', async () => {
    await open('connect', 'Connect an agent');
    const endpoint = `${base}/mcp/${org.slug}`;
    expect(await page.getByTestId('connect-endpoint').innerText()).toBe(endpoint);
    for (const id of ['claude-desktop', 'claude-code', 'vscode', 'cursor', 'mcp-remote', 'chatgpt'])
      expect(await page.getByTestId(`config-${id}`).innerText()).toContain(endpoint);
    await page.getByLabel('API key to put into the configurations').fill(org.apiKey);
    const cursorText = await page.getByTestId('config-cursor').locator('pre').innerText();
    const cursor = JSON.parse(cursorText).mcpServers.toolgate as { url: string; headers: Record<string, string> };
    expect(cursor.headers['X-API-Key']).toBe(org.apiKey);
    // Fed to the official SDK client, as Cursor would: it connects and lists the tools.
    const transport = new StreamableHTTPClientTransport(new URL(cursor.url), { requestInit: { headers: cursor.headers } });
    const mcp = new Client({ name: 'cursor-config-check', version: '1.0.0' });
    await mcp.connect(transport);
    expect((await mcp.listTools()).tools.map((t) => t.name)).toContain('query_postgresql_notes');
    await mcp.close();
    // VS Code's and Claude Desktop's are valid JSON of their shapes; the key is not in VS Code's file.
    const vscode = JSON.parse(await page.getByTestId('config-vscode').locator('pre').innerText());
    expect(vscode.servers.toolgate).toEqual({ type: 'http', url: endpoint, headers: { 'X-API-Key': '${input:toolgate-api-key}' } });
    const desktop = JSON.parse(await page.getByTestId('config-claude-desktop').locator('pre').innerText());
    expect(desktop.mcpServers.toolgate.args).toEqual(['-y', 'mcp-remote', endpoint, '--header', 'X-API-Key:${TOOLGATE_API_KEY}']);
    expect(agentConfigs(endpoint, 'k').map((c) => c.id)).toHaveLength(6);
    expect(await axe()).toEqual([]);
    await shot('08-connect');
  });

  test('playground: a call as the signed-in client, audited under its name; invalid JSON is refused where typed', async () => {
    await open('playground', 'Tool playground');
    await page.getByLabel('Tool', { exact: true }).selectOption({ label: 'query_postgresql_notes (shop)' });
    await page.getByLabel('Arguments (JSON)').fill('{"sql": ');
    expect(await page.locator('#pg-args-problem').innerText()).toContain('Not valid JSON');
    expect(await page.getByRole('button', { name: 'Call the tool' }).isDisabled()).toBe(true);
    await page.getByLabel('Arguments (JSON)').fill('{"sql": "SELECT body FROM notes ORDER BY id"}');
    await page.getByRole('button', { name: 'Call the tool' }).click();
    await page.getByTestId('playground-answer').waitFor();
    expect(await page.getByTestId('playground-answer').innerText()).toContain('second');
    expect(await axe()).toEqual([]);
    await shot('09-playground');
    await open('audit', 'Audit');
    await page.getByLabel('Action', { exact: true }).fill('tool.called');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('tbody tr').first().getByText('client default').waitFor();
  });

  test('playground: a client without mcp:call signs in to the console but its tool call is refused by its scope', async () => {
    const token = await tokenFor(gateway, org.clientId, org.clientSecret);
    const created = await sdk.createOAuthClient({
      client: sdkFor(gateway, token).client,
      throwOnError: true,
      body: { name: 'managers-only', scopes: ['org:manage'] },
    });
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const other = await context.newPage();
    await other.goto(`${base}/console`);
    // The OAuth client sign-in is behind a link: people sign in with e-mail and password (issue 40).
    await other.getByText('Sign in with an OAuth client').click();
    await other.getByLabel('Client id').fill(created.data.client_id);
    await other.getByLabel('Client secret').fill(created.data.client_secret);
    await other.getByRole('button', { name: 'Sign in', exact: true }).click();
    await other.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await other.getByTestId('actor-name').innerText()).toBe('managers-only');
    await other.goto(`${base}/console#/playground`);
    await other.getByLabel('Arguments (JSON)').fill('{"sql": "SELECT name FROM items"}');
    await other.getByRole('button', { name: 'Call the tool' }).click();
    await other
      .getByTestId('toasts')
      .getByText(/Refused|mcp:call/)
      .first()
      .waitFor();
    expect(await other.locator('main').innerText()).toContain('mcp:call');
    await context.close();
  }, 30_000);

  test('webhooks, billing and IdP: names, switches, empty states; axe-clean', async () => {
    await open('billing', 'Billing');
    await page.getByRole('cell', { name: /shop/ }).first().waitFor();
    expect(await page.getByTestId('upgrade').innerText()).toContain('set-plan');
    expect(await axe()).toEqual([]);
    await shot('10-billing');
    await open('webhooks', 'Webhooks');
    expect(await page.getByTestId('empty').innerText()).toContain('No webhooks');
    await page.getByLabel('Endpoint URL (https)').fill('not a url');
    expect(await page.locator('#wh-url-problem').innerText()).toContain('full URL');
    expect(await axe()).toEqual([]);
    await shot('11-webhooks');
    await open('idp', 'Identity provider');
    expect(await axe()).toEqual([]);
  });

  test('a webhook page shows each attempt with its request and the response that came back', async () => {
    const token = await tokenFor(gateway, org.clientId, org.clientSecret);
    const rest = sdkFor(gateway, token).client;
    const hook = (await sdk.createWebhook({ client: rest, throwOnError: true, body: { url: receiver.url('/console'), events: ['approval.requested'] } })).data;
    const eventId = await emitEvent(gateway, 'approval.requested', org.orgId, {
      approval_id: 'ap_console',
      tool_name: 't',
      requested_by: 'k',
      expires_at: '2030-01-01T00:00:00.000Z',
    });
    await until(async () => {
      const list = (await sdk.listWebhookDeliveries({ client: rest, throwOnError: true, path: { webhookId: hook.id } })).data.deliveries;
      return list.length === 1;
    }, 15_000);
    await open(`webhooks/${hook.id}`, 'Webhook');
    const row = page.getByTestId(`attempt-1-${eventId}`);
    await row.waitFor();
    expect(await row.innerText()).toContain('HTTP 202');
    await row.getByRole('button', { name: /^Show/ }).click();
    const exchange = page.getByTestId(`exchange-1-${eventId}`);
    expect(await exchange.getByTestId('request-headers').innerText()).toContain('x-service-signature');
    expect(await exchange.getByTestId('request-body').innerText()).toContain(eventId);
    expect(await exchange.getByTestId('response-headers').innerText()).toContain('x-receiver');
    expect(await exchange.getByTestId('response-body').innerText()).toBe('{"received":true}');
    expect(await page.locator('main').innerText()).not.toContain(hook.secret);
    expect(await axe()).toEqual([]);
    await shot('11b-webhook-attempt');
    await row.getByRole('button', { name: /^Hide/ }).click();
    expect(await exchange.count()).toBe(0);
  }, 30_000);

  test('every page at 390 px: no sideways scrolling of the page, axe-clean, screenshots', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [route, title] of PAGES) {
      await open(route, title);
      await page.waitForTimeout(200);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      // What sticks out, named, when something does.
      const wide = overflow
        ? await page.evaluate(() =>
            [...document.querySelectorAll('main *')]
              .filter((e) => !e.closest('.table-scroll') && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
              .slice(0, 5)
              .map((e) => `${e.tagName.toLowerCase()}.${e.className}`),
          )
        : [];
      expect({ route, overflow, wide }).toEqual({ route, overflow: 0, wide: [] });
      expect({ route, violations: await axe() }).toEqual({ route, violations: [] });
      await shot(`390-${route}`);
    }
    await page.setViewportSize({ width: 1366, height: 900 });
    // Keyboard: the skip link is the first stop and lands on the main content.
    await open('overview', 'Overview');
    // (A page focuses its heading when it opens; from the top of the document the skip link comes first.)
    await page.evaluate(() => {
      document.body.tabIndex = -1;
      document.body.focus();
    });
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => [document.activeElement?.id, location.hash])).toEqual(['main', '#/overview']);
    // The navigation is reachable and usable by keyboard: Tab from the content goes on to links, Enter follows one.
    await page.getByRole('navigation').getByRole('link', { name: 'Audit', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Audit' }).waitFor();
    // The page moves focus to its heading just after it renders: wait for that (fails after 5 s if it never comes).
    await page.waitForFunction(() => document.activeElement?.id === 'page-title', undefined, { timeout: 5000 });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('page-title');
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
