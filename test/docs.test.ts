// The /docs explorer (@elysiajs/swagger's Scalar page) in a real headless Chromium: it renders the operations from
// the hand-written /openapi.json using only the gateway's own files. Every request to a host other than the local
// gateway is blocked and recorded; none may occur.
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
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-quic',
        '--no-first-run',
        '--disable-component-update',
        '--disable-sync',
      ],
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
    const loaded: string[] = [];
    page.on('requestfinished', (request) => loaded.push(request.url()));

    const response = await page.goto(`${base}/docs`, { waitUntil: 'load', timeout: 15_000 });
    expect(response?.status()).toBe(200);

    // Scalar (the @elysiajs/swagger page) fetched the hand-written /openapi.json and listed every operation per tag.
    const tokenOperation = page.locator('a.endpoint', { has: page.locator('.endpoint-path', { hasText: /^\/oauth\/token$/ }) });
    await tokenOperation.first().waitFor({ state: 'visible', timeout: 15_000 });
    await page.waitForLoadState('networkidle', { timeout: 10_000 });

    expect(loaded).toContain(`${base}/openapi.json`);
    expect(loaded).toContain(`${base}/docs/assets/scalar-standalone.js`);
    const operations = await page.locator('a.endpoint').count();
    expect(operations).toBeGreaterThan(10);
    expect((await tokenOperation.first().locator('.endpoint-method').innerText()).trim().toUpperCase()).toBe('POST');
    await expect(page.locator('[id$="/POST/oauth/token"]').first().innerText()).resolves.toContain('Issue an access token');
    const text = await page.locator('body').innerText();
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
  }, 60_000); // its own waits add up to 45 s (load 15, the list 15, network idle 10, the probe 5) on a busy machine
});

// Without a browser: what the page and its asset route promise, checked on the responses themselves.
describe('/docs page and assets', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway();
  }, 20_000);
  afterAll(async () => {
    await gateway?.close();
  }, 10_000);
  const get = (path: string) => gateway.handle(new Request(`http://gateway.test${path}`));

  test('the page loads the hand-written contract and a bundle of our own, under a CSP that allows nothing else', async () => {
    verifies('DOCS-OFFLINE');
    const page = await get('/docs');
    expect(page.status).toBe(200);
    const html = await page.text();
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    const scriptSrc = csp.split(';').find((d) => d.trim().startsWith('script-src'))!;
    expect(scriptSrc).not.toContain('unsafe-inline');
    expect(scriptSrc).not.toContain('http');
    // Every script is either ours by URL or an inline one allowed by its exact hash.
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      const src = attrs!.match(/\bsrc="([^"]*)"/)?.[1];
      if (src) expect(src).toBe('/docs/assets/scalar-standalone.js');
      else expect(scriptSrc).toContain(`'sha256-${new Bun.CryptoHasher('sha256').update(body!).digest('base64')}'`);
    }
    expect(html).toContain('data-url="openapi.json"');
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  test('assets come from an allow-list: only the bundle is served, any other name is 404, a path is 400', async () => {
    verifies('DOCS-OFFLINE');
    const bundle = await get('/docs/assets/scalar-standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toStartWith('text/javascript');
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
    for (const name of ['swagger-ui-bundle.js', 'constructor', '__proto__', 'package.json']) expect((await get(`/docs/assets/${name}`)).status).toBe(404);
    // A name outside the contract's pattern never reaches the allow-list: 400 validation_error.
    expect((await get('/docs/assets/..%2F..%2Fpackage.json')).status).toBe(400);
  });
});
