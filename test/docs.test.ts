// The /docs explorer in a real headless Chromium: it renders the operations from /openapi.json using only the
// gateway's own files. Every request to a host other than the local gateway is blocked and recorded; none may occur.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { verifies } from './requirements.ts';
import { startTestGateway, type TestGateway } from './support/gateway.ts';

const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent) {
  if (process.env.CI) throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing (apt-get install chromium)`);
  console.warn(`[skip] ${CHROMIUM} is missing: the /docs browser suite is skipped`);
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

describe.skipIf(!chromiumPresent)('/docs in headless Chromium', () => {
  let gateway: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let shots: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => gateway.handle(request) });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    });
    shots = mkdtempSync(join(tmpdir(), 'toolgate-docs-'));
  }, 20_000); // PGlite + migrations and the browser start take a few seconds on a busy machine

  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    await gateway?.close();
    if (shots) rmSync(shots, { recursive: true, force: true });
  }, 10_000);

  test('renders the operations with no request leaving the machine', async () => {
    verifies('DOCS-OFFLINE');
    const base = `http://127.0.0.1:${server.port}`;
    const context = await browser.newContext({ viewport: { width: 1280, height: 1600 } });
    const blocked: string[] = [];
    const failed: string[] = [];
    const pageErrors: string[] = [];
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if ((url.protocol === 'http:' || url.protocol === 'https:') && LOCAL_HOSTS.has(url.hostname)) return route.continue();
      if (url.protocol === 'data:' || url.protocol === 'blob:') return route.continue();
      blocked.push(url.href);
      return route.abort('blockedbyclient');
    });
    // The guard works: a request to another host is aborted and recorded (and never reaches the network).
    const probe = await context.newPage();
    await expect(probe.goto('http://example.com/', { timeout: 5_000 })).rejects.toThrow();
    await probe.close();
    expect(blocked).toEqual(['http://example.com/']);
    blocked.length = 0;

    const page = await context.newPage();
    const cspViolations: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    // The page's CSP stops external loads before they reach the router; those attempts count as well.
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    page.on('requestfailed', (request) => failed.push(`${request.url()}: ${request.failure()?.errorText}`));

    const response = await page.goto(`${base}/docs`, { waitUntil: 'load', timeout: 15_000 });
    expect(response?.status()).toBe(200);

    // Swagger UI fetched /openapi.json and rendered one block per operation.
    const tokenOperation = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: /^\/oauth\/token$/ }) });
    await tokenOperation.first().waitFor({ state: 'visible', timeout: 15_000 });
    await page.waitForLoadState('networkidle', { timeout: 10_000 });

    const operations = await page.locator('.opblock').count();
    expect(operations).toBeGreaterThan(10);
    await expect(tokenOperation.first().locator('.opblock-summary-method').innerText()).resolves.toBe('POST');
    await expect(tokenOperation.first().locator('.opblock-summary-description').innerText()).resolves.toContain('Issue an access token');
    const text = await page.locator('#explorer').innerText();
    expect(text).toContain('/oauth/token');
    expect(text).toContain('Issue an access token');
    expect(text).toContain('/api/mcp/{orgId}/status');
    expect(await page.title()).toBe('Toolgate API explorer');

    const shot = join(shots, 'explorer.png');
    await page.screenshot({ path: shot, fullPage: false });
    expect(statSync(shot).size).toBeGreaterThan(20_000);
    if (process.env.TOOLGATE_KEEP_SCREENSHOT) await Bun.write(process.env.TOOLGATE_KEEP_SCREENSHOT, Bun.file(shot));

    await context.close();
    expect(blocked).toEqual([]);
    expect(cspViolations).toEqual([]);
    expect(failed).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 20_000);
});
