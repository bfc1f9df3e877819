// Issue 30 item 1, the console part: a database connector's saved tools defined from the connector page (with the
// parameter editor), read back over REST (generated client) and called over MCP; a table tool's column and row policy
// set from the tool page and read back over REST; the free-SQL switch; axe-core on both views. Headless Chromium
// against a real gateway and a real PostgreSQL target database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import axeCore from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import * as sdk from '../sdk/index.ts';
import { onboard, startServedTestGateway, type ServedTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, restTools, rowsOf } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { pgHostPort } from './support/idp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { chromiumOr, launchChromium, signInWithClient } from './support/browser.ts';

const chromiumPresent = chromiumOr('the console policies suite is skipped');
const pgUp = await serviceAvailable('postgres');
if (!pgUp) console.warn('[skip] PostgreSQL is not reachable: the console policies suite is skipped');
const AXE = axeCore.source;

describe.skipIf(!chromiumPresent || !pgUp)('saved tools and policies in the console (headless Chromium)', () => {
  let gateway: TestGateway;
  let served: ServedTestGateway;
  let browser: Browser;
  let targets: Targets;
  let org: Onboarded;
  let manage: string;
  let connectorId: string;
  let base: string;
  let page: Page;
  const pageErrors: string[] = [];
  const rest = () => sdkFor(gateway, manage).client;

  beforeAll(async () => {
    targets = await createTargets('tg_cpolicy', 'pg');
    served = await startServedTestGateway({ TOOLGATE_OUTBOUND_ALLOW_HOSTS: pgHostPort() });
    ({ gateway, base } = served);
    org = await onboard(gateway);
    manage = await tokenFor(gateway, org.clientId, org.clientSecret);
    connectorId = (await createConnector(gateway, manage, { name: 'shop', type: 'postgresql', config: targets.pgConfig })).id;
    browser = await launchChromium();
    // bypassCSP: axe-core is injected as an inline script, which the console's CSP (rightly) forbids.
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
    page = await context.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
    await signInWithClient(page, base, org);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await targets?.drop();
  }, 30_000);

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

  test('a saved tool with one integer parameter, created on the connector page, is read back over REST and called over MCP', async () => {
    await open(`connectors/${connectorId}`, 'Connector shop');
    await page.getByText('No saved tools.').waitFor();
    await page.getByRole('button', { name: 'New saved tool' }).click();
    await page.getByLabel('Tool name').fill('items_from');
    await page.getByLabel('Description', { exact: true }).fill('Items at or above a price.');
    await page.getByLabel('Statement (with :name placeholders)').fill('SELECT id, name FROM items WHERE price >= :min_price ORDER BY id');
    // A statement with an unknown placeholder is refused (422 saved_tool_invalid), shown inline in the form.
    await page.getByRole('button', { name: 'Create saved tool' }).click();
    const refusal = page.getByRole('form', { name: 'New saved tool' }).getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.innerText()).toContain('saved_tool_invalid');
    await page.getByRole('button', { name: 'Add parameter' }).click();
    await page.getByLabel('Parameter name').fill('min_price');
    await page.getByLabel('Type', { exact: true }).selectOption('integer');
    await page.getByLabel('Parameter description').fill('Lowest price');
    await page.getByLabel('Minimum').fill('0');
    await page.getByRole('button', { name: 'Create saved tool' }).click();
    await page.getByTestId('saved-items_from').waitFor();
    expect(await axe()).toEqual([]);

    const listed = await sdk.listSavedTools({ client: rest(), path: { connectorId } });
    const saved = listed.data!.saved_tools.find((s) => s.name === 'items_from')!;
    expect(saved).toMatchObject({ version: 1, writes: false, table: { name: 'items' } });
    expect(saved.parameters).toEqual([{ name: 'min_price', type: 'integer', description: 'Lowest price', minimum: 0 }]);
    const answer = await callTool(gateway, org.slug, { apiKey: org.apiKey }, 'items_from', { min_price: 4 });
    expect(rowsOf(answer)).toEqual([
      { id: 2, name: 'pear' },
      { id: 3, name: 'plum' },
    ]);
    // Edit: a new version, listed among the versions.
    await page.getByRole('button', { name: 'Edit items_from' }).click();
    await page.getByLabel('Description', { exact: true }).fill('Items priced at least this.');
    await page.getByRole('button', { name: 'Save as new version' }).click();
    await page.getByRole('button', { name: 'Versions of items_from' }).click();
    await page.getByRole('table', { name: 'Versions of items_from' }).getByRole('row').nth(2).waitFor();
    const again = await sdk.getSavedTool({ client: rest(), path: { connectorId, toolId: saved.id } });
    expect([again.data!.version, again.data!.description]).toEqual([2, 'Items priced at least this.']);
    // The free-SQL switch PATCHes the connector.
    await page.getByRole('switch', { name: 'Serve a free-SQL tool per table of shop' }).click();
    await page.waitForFunction(() => document.querySelector('[role=switch][aria-label^="Serve a free-SQL"]')?.getAttribute('aria-checked') === 'false');
    const connector = await sdk.getConnector({ client: rest(), path: { connectorId } });
    expect(connector.data!.free_sql).toBe(false);
    await sdk.updateConnector({ client: rest(), path: { connectorId }, body: { free_sql: true } });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("a table tool's masked column and row filter, set on the tool page, are read back over REST", async () => {
    const tool = (await restTools(gateway, manage, org.orgId, connectorId)).find((t) => t.tool_name.includes('items') && t.tool_name !== 'items_from')!;
    expect(tool).toBeDefined();
    await open(`tools/${tool.id}`, `Tool ${tool.name}`);
    await page.getByRole('heading', { level: 2, name: 'Policy' }).waitFor();
    // A masked column with no name is not sent; a mask the contract refuses (n out of range) says so inline.
    await page.getByRole('button', { name: 'Add masked column' }).click();
    await page.getByLabel('Column', { exact: true }).fill('name');
    await page.getByLabel('Mask', { exact: true }).selectOption('last_n');
    await page.getByLabel('Characters kept (default 4)').fill('99');
    expect(await page.getByTestId('mask-0').locator('.field-error').innerText()).toContain('At most 32');
    await page.getByLabel('Characters kept (default 4)').fill('2');
    await page.getByLabel(/^Row filter/).fill('price >=');
    await page.getByRole('button', { name: 'Save policy' }).click();
    const refusal = page.getByRole('form', { name: `Policy of ${tool.name}` }).getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.innerText()).toContain('policy_invalid');
    await page.getByLabel(/^Row filter/).fill('price >= 4');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('button', { name: 'Remove policy' }).waitFor();
    expect(await axe()).toEqual([]);
    const read = async () =>
      (await sdk.listTools({ client: rest(), path: { orgId: org.orgId }, query: { connector_id: connectorId } })).data!.tools.find((t) => t.id === tool.id)!;
    expect((await read()).policy).toEqual({ hidden_columns: [], masked_columns: [{ column: 'name', mask: 'last_n', n: 2 }], row_filter: 'price >= 4' });
    await page.getByRole('button', { name: 'Remove policy' }).click();
    await page.getByRole('button', { name: 'Remove policy' }).waitFor({ state: 'detached' });
    expect((await read()).policy ?? null).toBeNull();
    // Policies belong to the table (decision 0292): the table tool's page says where its policy applies; a saved
    // tool's page has no policy form, and says the policies of the tables it reads govern it.
    await open(`tools/${tool.id}`, `Tool ${tool.name}`);
    expect(await page.getByTestId('policy-scope').innerText()).toContain('applies to this table in every tool and join');
    const saved = (await restTools(gateway, manage, org.orgId, connectorId)).find((t) => t.tool_name === 'items_from')!;
    expect(saved.saved).toBe(true);
    await open(`tools/${saved.id}`, `Tool ${saved.name}`);
    expect(await page.getByTestId('policy-scope').innerText()).toContain('no policy of its own');
    expect(await page.getByRole('form', { name: `Policy of ${saved.name}` }).count()).toBe(0);
    // The table's mask reaches the saved tool.
    await sdk.updateToolMetadata({
      client: rest(),
      path: { orgId: org.orgId, toolId: tool.id },
      body: { policy: { masked_columns: [{ column: 'name', mask: 'fixed', text: 'x' }] } },
    });
    const masked = await callTool(gateway, org.slug, { apiKey: org.apiKey }, 'items_from', { min_price: 5 });
    expect(rowsOf(masked)).toEqual([{ id: 3, name: 'x' }]);
    expect(await axe()).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
