// Issue 41 item 3, acceptance "The Overview's counts match the audit rows they link to, in a browser test": headless
// Chromium opens the Overview, reads every count of the tables by agent, by reason class, of the most refused
// statements and of errors by connector, follows each link and counts the rows the audit page lists; then the same
// for a tool page's refused statements. Calls go through tools/call on a real PostgreSQL target, from an API key and
// an OAuth client. See test/console-pages.test.ts for the browser set-up.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Browser, Page } from 'playwright-core';
import * as sdk from '../sdk/index.ts';
import { onboard, startServedTestGateway, type ServedTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { pgHostPort } from './support/idp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { until } from './support/webhooks.ts';
import { chromiumOr, launchChromium, signInWithClient } from './support/browser.ts';

const chromiumPresent = chromiumOr('the console insights suite is skipped');
const pgUp = await serviceAvailable('postgres');
if (!pgUp) console.warn('[skip] PostgreSQL is not reachable: the console insights suite is skipped');

const TOOL = 'query_postgresql_items';

describe.skipIf(!chromiumPresent || !pgUp)("the Overview's insight counts and the audit rows they link to", () => {
  let gateway: TestGateway;
  let served: ServedTestGateway;
  let browser: Browser;
  let targets: Targets;
  let base: string;
  let page: Page;
  let toolId: string;

  beforeAll(async () => {
    targets = await createTargets('tg_cinsight', 'pg');
    served = await startServedTestGateway({ TOOLGATE_OUTBOUND_ALLOW_HOSTS: pgHostPort() });
    ({ gateway, base } = served);
    const org = await onboard(gateway, undefined, 'growth', 100_000);
    const token = await tokenFor(gateway, org.clientId, org.clientSecret);
    await createConnector(gateway, token, { name: 'shop', type: 'postgresql', config: targets.pgConfig });
    const key = { apiKey: org.apiKey };
    for (const sql of ['SELECT name FROM items', 'SELECT 1 / (id - id) FROM items', 'DELETE FROM items WHERE id = 1', 'DELETE FROM items WHERE id = 2'])
      await callTool(gateway, org.slug, key, TOOL, { sql });
    await callTool(gateway, org.slug, key, 'query_postgresql_missing', { sql: 'SELECT 1' });
    for (const sql of ['SELECT id FROM items', 'SELECT name FROM items; DROP TABLE items', 'SELECT pg_sleep(0) FROM items'])
      await callTool(gateway, org.slug, { token }, TOOL, { sql });
    await gateway.deps.audit.drain();
    const tools = await sdk.listTools({ client: sdkFor(gateway, token).client, throwOnError: true, path: { orgId: org.orgId } });
    toolId = tools.data.tools.find((t) => t.name === TOOL)!.id;
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1366, height: 900 } })).newPage();
    await signInWithClient(page, base, org);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await targets?.drop();
  }, 30_000);

  /** Every count link of a table: its name, the number it shows, where it goes. */
  async function countsOf(caption: string): Promise<{ name: string; n: number; href: string }[]> {
    const table = page.getByRole('table', { name: caption });
    await table.waitFor();
    const links = await table.locator('a[data-count]').all();
    return Promise.all(
      links.map(async (link) => ({
        name: `${caption} ${await link.getAttribute('data-count')}`,
        n: Number(await link.innerText()),
        href: String(await link.getAttribute('href')),
      })),
    );
  }

  /** The rows the audit page lists at `href` once it has loaded (fewer than a page here). */
  async function listedAt(href: string, expected: number, name: string): Promise<void> {
    await page.goto(`${base}/console${href}`);
    await page.getByRole('heading', { level: 1, name: 'Audit' }).waitFor();
    const rows = page.locator('[data-testid^="audit-row-"]');
    let seen = -1;
    await until(async () => (seen = await rows.count()) === expected && !(await page.locator('.loading').count()), 10_000, name).catch(() => {});
    expect(seen, `${name} (${href})`).toBe(expected);
  }

  test('every count by agent, by reason, by fingerprint and of errors by connector lists exactly that many audit rows', async () => {
    await page.goto(`${base}/console#/overview`);
    const counts = [
      ...(await countsOf('Calls by agent')),
      ...(await countsOf('Refusals by reason')),
      ...(await countsOf('Most refused statements')),
      ...(await countsOf('Calls by connector')).filter((c) => c.name.endsWith('errors')),
    ];
    // Two agents (3 figures each), write / multiple_statements / function_not_allowed / before a statement, 3 statements, 1 connector.
    expect(counts.map((c) => c.name.split(' ')[0]).join(',')).toBe(
      'Calls,Calls,Calls,Calls,Calls,Calls,Refusals,Refusals,Refusals,Refusals,Most,Most,Most,Calls',
    );
    expect(counts.filter((c) => c.name === 'Refusals by reason reason').map((c) => c.n)).toEqual([2, 1, 1, 1]);
    expect(counts.reduce((n, c) => n + c.n, 0)).toBeGreaterThan(15);
    for (const c of counts) await listedAt(c.href, c.n, c.name);
    // A tool's page: its refused statements, each linking to its rows; and a click follows the link.
    await page.goto(`${base}/console#/tools/${toolId}`);
    const ofTool = await countsOf('Refused statements');
    expect(ofTool.map((c) => c.n).sort()).toEqual([1, 1, 2]);
    for (const c of ofTool) await listedAt(c.href, c.n, c.name);
    await page.goto(`${base}/console#/tools/${toolId}`);
    await page.getByRole('table', { name: 'Refused statements' }).locator('a[data-count]').first().click();
    await page.getByRole('heading', { level: 1, name: 'Audit' }).waitFor();
    expect(await page.getByLabel('Fingerprint').inputValue()).toMatch(/^[0-9a-f]{16}$/);
  }, 90_000);
});
