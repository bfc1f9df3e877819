// Out of the box (issue 40 item 5): a fresh start gives the demo org an admin member whose e-mail and generated
// password are in data/demo.json, and the official MCP client, given only the demo URL, signs in through headless
// Chromium with that password and calls a tool; a second run signs in with a passkey the member registered through the
// console (Chromium's virtual authenticator over CDP: a platform authenticator with resident keys and user
// verification, the kind a laptop's fingerprint reader is).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { TestAuthProvider } from './support/mcp-sign-in.ts';
import { withVirtualAuthenticator } from './support/browser.ts';

setDefaultTimeout(300_000);
const ROOT = join(import.meta.dir, '..');
const CHROMIUM = '/usr/bin/chromium';
const REDIRECT = 'http://127.0.0.1:47811/callback';

let dataDir: string;
let proc: ReturnType<typeof Bun.spawn> | null = null;
let browser: Browser;
let base: string;
const output: string[] = [];

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'toolgate-demo-member-'));
  const port = freePort();
  // The default public URL's host (a fresh `npm start`): passkeys need a host name, not an IP address (decision 0380).
  base = `http://localhost:${port}`;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('TOOLGATE_') && k !== 'DATABASE_URL' && k !== 'REDIS_URL') env[k] = v;
  proc = Bun.spawn([join(ROOT, 'node_modules', '.bin', 'bun'), 'src/main.ts'], {
    cwd: ROOT,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', TOOLGATE_PUBLIC_URL: base, TOOLGATE_DATA_DIR: dataDir },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  for (const stream of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        output.push(new TextDecoder().decode(value));
      }
    })();
  }
  const deadline = Date.now() + 240_000;
  while (
    !(
      existsSync(join(dataDir, 'demo.json')) &&
      (await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      ))
    )
  ) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`the gateway did not start:\n${output.join('')}`);
    await Bun.sleep(500);
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  proc?.kill('SIGTERM');
  await proc?.exited;
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/**
 * The official client's sign-in through `signIn` on the page its browser opens (`signedIn` runs after the redirect,
 * before the browser closes), then a tool call; returns the tool's result.
 */
async function clientRun(page: Page, signIn: (page: Page) => Promise<void>, signedIn: () => Promise<void> = async () => {}) {
  const mcpUrl = new URL(`${base}/mcp/demo`);
  const provider = new TestAuthProvider(REDIRECT);
  await expect(
    new Client({ name: 'demo-test', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
  ).rejects.toThrow();
  expect(provider.authorizationUrl).not.toBeNull();
  let callback: URL | null = null;
  await page.context().route(`${REDIRECT}**`, (route) => {
    callback = new URL(route.request().url());
    return route.fulfill({ status: 200, body: 'signed in' });
  });
  await page.goto(provider.authorizationUrl!.href);
  await signIn(page);
  await page.getByRole('heading', { name: 'Allow this client to use your tools?' }).waitFor({ timeout: 30_000 });
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(REDIRECT), { timeout: 30_000 });
  await signedIn();
  await page.context().close();

  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await transport.finishAuth(callback!.searchParams);
  const client = new Client({ name: 'demo-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain('query_postgresql_customers');
  const result = await client.callTool({ name: 'query_postgresql_customers', arguments: { sql: 'SELECT name FROM customers ORDER BY id', limit: 1 } });
  await client.close();
  return result;
}

const demoMember = () => JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8')) as { member_email: string; member_password: string; api_key: string };

describe('the demo org, out of the box', () => {
  test('the banner names the member; the official client signs in with its password in Chromium and calls a tool', async () => {
    const demo = demoMember();
    expect(demo.member_email).toBe('admin@demo.example');
    expect(demo.member_password.length).toBeGreaterThanOrEqual(20);
    expect(output.join('')).toContain('as admin@demo.example with its member_password');
    expect(output.join('')).not.toContain(demo.member_password);

    const context = await browser.newContext();
    const result = await clientRun(await context.newPage(), async (page) => {
      await page.getByLabel('E-mail').fill(demo.member_email);
      await page.getByLabel('Password').fill(demo.member_password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    });
    expect(result.isError ?? false, JSON.stringify(result.content).slice(0, 300)).toBe(false);
  });

  test('a second run signs in with a passkey registered through the console (virtual authenticator), and so does the console', async () => {
    const demo = demoMember();
    const context = await browser.newContext();
    const { page, cdp, authenticatorId } = await withVirtualAuthenticator(context);
    await page.goto(`${base}/console`);
    await page.getByLabel('Org', { exact: true }).fill('demo');
    await page.getByLabel('E-mail').fill(demo.member_email);
    await page.getByLabel('Password', { exact: true }).fill(demo.member_password);
    await page.getByRole('button', { name: 'Sign in with password' }).click();
    await page.getByRole('link', { name: 'Your passkeys' }).click();
    await page.getByRole('heading', { level: 1, name: 'Your passkeys' }).waitFor();
    await page.getByLabel('Name (to tell your passkeys apart)').fill('Test laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByTestId('passkey-Test laptop').waitFor({ timeout: 30_000 });
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials.map((c) => [c.isResidentCredential, c.rpId])).toEqual([[true, 'localhost']]);

    // The console signs in with it: no org, no e-mail.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByTestId('actor').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('actor').innerText()).toContain(demo.member_email);

    // The second run of the official client: the sign-in page's passkey button, the same authenticator.
    const result = await clientRun(
      page,
      (p) => p.getByRole('button', { name: 'Sign in with a passkey' }).click(),
      async () => {
        // The authenticator signed the registration and two sign-ins: its counter moved (and the gateway checked it).
        const used = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
        expect(used.credentials[0]!.signCount).toBeGreaterThanOrEqual(2);
      },
    );
    expect(result.isError ?? false, JSON.stringify(result.content).slice(0, 300)).toBe(false);
  });
});
