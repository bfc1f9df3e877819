// Issue 41 item 2 in the console, in headless Chromium against a real gateway and PostgreSQL target: every count on
// the Overview links to the audit rows it counts (and the page lists exactly that many), each audit filter of the
// page lists what REST lists for it, a row's detail view says why a statement was refused and links to its like, and
// an admin sets what refused statements keep. See test/console-pages.test.ts for the browser set-up.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Browser, Page } from 'playwright-core';
import * as sdk from '../sdk/index.ts';
import { onboard, startServedTestGateway, type ServedTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { pgHostPort } from './support/idp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { until } from './support/webhooks.ts';
import { chromiumOr, launchChromium, signInWithClient } from './support/browser.ts';

const chromiumPresent = chromiumOr('the console audit suite is skipped');
const pgUp = await serviceAvailable('postgres');
if (!pgUp) console.warn('[skip] PostgreSQL is not reachable: the console audit suite is skipped');

const TOOL = 'query_postgresql_items';

describe.skipIf(!chromiumPresent || !pgUp)('the console audit page and the Overview links', () => {
  let gateway: TestGateway;
  let served: ServedTestGateway;
  let browser: Browser;
  let targets: Targets;
  let org: Onboarded;
  let base: string;
  let page: Page;
  let client: ReturnType<typeof sdkFor>['client'];
  let connectorId: string;

  beforeAll(async () => {
    targets = await createTargets('tg_caudit', 'pg');
    served = await startServedTestGateway({ TOOLGATE_OUTBOUND_ALLOW_HOSTS: pgHostPort() });
    ({ gateway, base } = served);
    org = await onboard(gateway);
    const token = await tokenFor(gateway, org.clientId, org.clientSecret);
    client = sdkFor(gateway, token).client;
    connectorId = (await createConnector(gateway, token, { name: 'shop', type: 'postgresql', config: targets.pgConfig })).id;
    const agent = { apiKey: org.apiKey };
    // Two calls that ran, one database error, three refused statements (two alike), one unknown tool.
    await callTool(gateway, org.slug, agent, TOOL, { sql: 'SELECT name FROM items' });
    await callTool(gateway, org.slug, agent, TOOL, { sql: 'SELECT id FROM items' });
    await callTool(gateway, org.slug, agent, TOOL, { sql: 'SELECT 1 / (id - id) FROM items' });
    await callTool(gateway, org.slug, agent, TOOL, { sql: "DELETE FROM items WHERE name = 'a'" });
    await callTool(gateway, org.slug, agent, TOOL, { sql: "DELETE FROM items WHERE name = 'b'" });
    await callTool(gateway, org.slug, agent, TOOL, { sql: 'SELECT name FROM items; DROP TABLE items' });
    await callTool(gateway, org.slug, agent, 'query_postgresql_missing', { sql: 'SELECT 1' });
    await gateway.deps.audit.drain();
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    page = await context.newPage();
    await signInWithClient(page, base, org);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await targets?.drop();
  }, 30_000);

  const rows = () => page.locator('[data-testid^="audit-row-"]');

  /** The audit page's rows once its list has loaded (an empty list shows its empty state). */
  async function listed(): Promise<number> {
    await page.getByRole('heading', { level: 1, name: 'Audit' }).waitFor();
    await page.locator('[data-testid^="audit-row-"], [data-testid="empty"]').first().waitFor({ timeout: 10_000 });
    await page
      .locator('.loading')
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => {});
    return rows().count();
  }

  /** Waits for the audit page to list `n` rows (a list loading after a filter change still shows the previous rows). */
  async function expectListed(n: number, what: string): Promise<void> {
    let seen = -1;
    await until(async () => (seen = await listed()) === n, 10_000, `${what}: ${n} rows`).catch(() => {});
    expect(seen, what).toBe(n);
  }

  /** What REST lists for a filter (one page; every filter here has fewer than 200 rows). */
  const viaRest = async (query: NonNullable<sdk.ListAuditEventsData['query']>) =>
    (await sdk.listAuditEvents({ client, throwOnError: true, query: { ...query, limit: 200 } })).data.events;

  test('every count on the Overview links to exactly the audit rows it counts', async () => {
    const links: [string, string][] = [];
    await page.goto(`${base}/console#/overview`);
    const totals = page.getByTestId('insight-totals');
    await totals.locator('a[data-count="calls"]').waitFor();
    for (const what of ['calls', 'refusals', 'errors', 'held']) {
      const link = totals.locator(`a[data-count="${what}"]`);
      links.push([`totals ${what}`, await link.getAttribute('href').then(String)]);
    }
    // The connector's row and the tool's row: each of their counts is a link too.
    for (const table of ['Calls by connector', 'Calls by tool']) {
      const row = page
        .getByRole('table', { name: table })
        .locator('tbody tr')
        .filter({ hasText: table === 'Calls by tool' ? TOOL : 'shop' });
      for (const what of ['calls', 'refusals', 'errors'])
        links.push([`${table} ${what}`, String(await row.locator(`a[data-count="${what}"]`).getAttribute('href'))]);
    }
    const figures = (await sdk.getInsights({ client, throwOnError: true, query: { days: 1 } })).data;
    expect(figures.totals).toMatchObject({ calls: 3, refusals: 4, errors: 1, held: 0 });
    for (const [name, href] of links) {
      await page.goto(`${base}/console${href}`);
      const what = name.split(' ').pop() as 'calls' | 'refusals' | 'errors' | 'held';
      const expected = name.startsWith('totals')
        ? figures.totals[what]
        : name.startsWith('Calls by connector')
          ? figures.by_connector.find((c) => c.connector_id === connectorId)![what as 'calls']
          : figures.by_tool.find((t) => t.tool_name === TOOL)![what as 'calls'];
      await expectListed(expected, `${name} (${href})`);
    }
    // And clicking one follows it: the Overview's Refusals lists the four refusals.
    await page.goto(`${base}/console#/overview`);
    await page.getByTestId('insight-totals').locator('a[data-count="refusals"]').click();
    await expectListed(4, 'Refusals clicked');
    expect(await page.getByLabel('Outcome').inputValue()).toBe('refused,denied');
  }, 90_000);

  test('each filter of the audit page lists what REST lists for it', async () => {
    const refused = await viaRest({ outcome: 'refused' });
    const fingerprint = String(
      (refused.find((e) => (e.details as Record<string, unknown>).reason_class === 'write')!.details as Record<string, unknown>).fingerprint_id,
    );
    const keyId = refused[0]!.actor.id!;
    const cases: [string, string, NonNullable<sdk.ListAuditEventsData['query']>][] = [
      ['Outcome', 'refused', { outcome: 'refused' }],
      ['Actor', `api_key:${keyId}`, { actor: `api_key:${keyId}` }],
      ['Tool', TOOL, { tool: TOOL }],
      ['Reason class', 'multiple_statements', { reason_class: 'multiple_statements' }],
      ['Fingerprint', fingerprint, { fingerprint_id: fingerprint }],
      ['Until', '2000-01-01T00:00:00Z', { until: '2000-01-01T00:00:00Z' }],
    ];
    for (const [label, value, query] of cases) {
      await page.goto(`${base}/console#/audit`);
      await listed();
      await page.getByLabel('Days').fill('');
      await page.getByLabel(label, { exact: true }).fill(value);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForFunction((v) => decodeURIComponent(location.hash).includes(v), value);
      await expectListed((await viaRest(query)).length, label);
    }
    // The connector is chosen by name; From leaves out everything before it.
    await page.goto(`${base}/console#/audit`);
    await listed();
    await page.getByLabel('Days').fill('');
    await page.locator('#a-connector_id').selectOption({ label: 'shop' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForFunction((id) => location.hash.includes(id), connectorId);
    await expectListed((await viaRest({ connector_id: connectorId })).length, 'Connector');
    expect((await viaRest({ connector_id: connectorId })).length).toBeGreaterThanOrEqual(6);
    await page.goto(`${base}/console#/audit?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    await expectListed(0, 'From');
    // A malformed value is refused where it is typed.
    await page.getByLabel('Fingerprint').fill('xyz');
    expect(await page.getByRole('button', { name: 'Filter' }).isDisabled()).toBe(true);
  }, 90_000);

  test("a row's detail view: why it was refused, its fingerprint, and links to its like", async () => {
    await page.goto(`${base}/console#/audit?reason_class=write`);
    await expectListed(2, 'reason class write');
    const first = rows().first();
    await first.getByRole('button', { name: /every field of event/ }).click();
    const detail = page.locator('.event-detail');
    expect(await detail.innerText()).toContain('write');
    expect(await detail.getByTestId('event-fingerprint').innerText()).toBe('delete from items where name = ?');
    expect(await detail.getByTestId('event-reason').innerText()).not.toBe('');
    expect(await detail.getByTestId('event-statement').count()).toBe(0);
    await detail.getByRole('link', { name: 'Every attempt of this statement' }).click();
    await page.waitForFunction(() => location.hash.includes('fingerprint_id='));
    await expectListed(2, 'the same fingerprint');
  });

  test('an admin sets what refused statements keep; a full row shows the statement', async () => {
    await page.goto(`${base}/console#/audit`);
    await listed();
    await page.getByLabel('Refused statements keep').selectOption('full');
    await page.getByTestId('toasts').getByText('Refused statements now keep: full').waitFor();
    expect((await sdk.getOrg({ client, throwOnError: true })).data.audit_statements).toBe('full');
    await callTool(gateway, org.slug, { apiKey: org.apiKey }, TOOL, { sql: "UPDATE items SET name = 'kept'" });
    await gateway.deps.audit.drain();
    await page.goto(`${base}/console#/audit?outcome=refused`);
    await expectListed(4, 'the new refused row');
    await rows()
      .first()
      .getByRole('button', { name: /every field of event/ })
      .click();
    expect(await page.getByTestId('event-statement').innerText()).toBe("UPDATE items SET name = 'kept'");
  });
});
