// Connector health (issue 41 item 4, docs/decisions/0325): an upstream MCP server stopped mid-test turns its
// connector unhealthy through the periodic probe and back once it answers again, audited both ways; a PostgreSQL
// connector on a port where nothing listens is unhealthy, and one reached through a TCP relay that is stopped and
// started again follows it. A short probe interval via the environment. Schema h11_health (db test) is this suite's.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import postgres from 'postgres';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, getConnector } from './support/mcp.ts';
import { PG_URL } from './support/services.ts';
import { startUpstream, type Upstream } from './support/upstream-mcp.ts';

setDefaultTimeout(45_000);
const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent) console.warn(`[skip] ${CHROMIUM} is missing: the console badge is not checked`);

let g: TestGateway;
let org: Onboarded;
let manage: string;
let upstream: Upstream;
let server: ReturnType<typeof Bun.serve>;
let browser: Browser | null = null;
let page: Page | null = null;

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** Polls the connector until `health` is `want`; the connector as then, and how long it took. */
async function waitForHealth(id: string, want: string, ms: number): Promise<{ connector: any; tookMs: number }> {
  const started = Date.now();
  let connector = await getConnector(g, manage, id);
  while (connector.health !== want && Date.now() - started < ms) {
    await Bun.sleep(100);
    connector = await getConnector(g, manage, id);
  }
  return { connector, tookMs: Date.now() - started };
}

async function auditActions(id: string): Promise<string[]> {
  const res = await api(g, 'GET', `/api/audit?days=1&action=connector.&target_id=${id}`, manage);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { events: { action: string; actor: { type: string } }[] };
  expect(body.events.every((e) => e.actor.type === 'system' || e.action !== 'connector.unhealthy')).toBe(true);
  return body.events.map((e) => e.action);
}

/** A TCP relay to the PostgreSQL server on `port` (0: any); `stop` closes it and every connection through it. */
async function startRelay(port: number): Promise<{ port: number; stop: () => Promise<void> }> {
  const target = new URL(PG_URL);
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const up = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(up);
    up.pipe(client);
    client.on('error', () => up.destroy());
    up.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as { port: number }).port;
  return {
    port: bound,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const TEST_DB_URL = (() => {
  const url = new URL(PG_URL);
  url.pathname = '/test';
  return url.toString();
})();

beforeAll(async () => {
  const admin = postgres(TEST_DB_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe('DROP SCHEMA IF EXISTS h11_health CASCADE; CREATE SCHEMA h11_health; CREATE TABLE h11_health.items (id int PRIMARY KEY)');
  await admin.end();
  upstream = startUpstream(0);
  let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
  const base = `http://127.0.0.1:${server.port}`;
  g = await startTestGateway('pglite', {
    TOOLGATE_PUBLIC_URL: base,
    TOOLGATE_ALLOWED_HOSTS: 'gateway.test',
    TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    TOOLGATE_CONNECTOR_PROBE_INTERVAL_MS: '500',
  });
  handle = (request) => g.handle(request);
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  if (chromiumPresent) {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    page = await browser.newPage();
    await page.goto(`${base}/console`);
    // The OAuth client sign-in is behind a link: people sign in with e-mail and password (issue 40).
    await page.getByText('Sign in with an OAuth client').click();
    await page.getByLabel('Client id').fill(org.clientId);
    await page.getByLabel('Client secret').fill(org.clientSecret);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }
}, 30_000);

/** The console's connectors page shows the connector's health badge with this text (when Chromium is present). */
async function expectBadge(name: string, text: string): Promise<void> {
  if (!page) return;
  await page.goto(`${new URL(page.url()).origin}/console#/connectors`);
  await page.getByRole('heading', { level: 1, name: 'Connectors' }).waitFor();
  const badge = page.getByTestId(`connector-${name}`).getByTestId('connector-health');
  await badge.filter({ hasText: new RegExp(`^${text}$`) }).waitFor({ timeout: 10_000 });
  expect(await badge.innerText()).toBe(text);
}

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  upstream?.stop();
  await g?.close();
  const admin = postgres(TEST_DB_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe('DROP SCHEMA IF EXISTS h11_health CASCADE');
  await admin.end();
});

test('an upstream MCP server that stops answering turns its connector unhealthy, and it recovers once restarted', async () => {
  const created = await createConnector(g, manage, { name: 'Flaky', type: 'mcp', config: { url: upstream.url } });
  expect(created.status).toBe('active');
  expect(created.health).toBe('healthy');
  expect(created.health_reason).toBeNull();
  const port = Number(new URL(upstream.url).port);

  upstream.stop();
  const failed = await callTool(g, org.slug, { apiKey: org.apiKey }, 'flaky__echo', { text: 'x' });
  expect(failed.body.result.isError).toBe(true);
  const down = await waitForHealth(created.id, 'unhealthy', 30_000);
  expect(down.connector.health).toBe('unhealthy');
  expect(down.tookMs).toBeLessThan(30_000);
  expect(down.connector.health_reason).toBeTruthy();
  expect(down.connector.health_changed_at).not.toBeNull();
  // Health is not validation: the connector keeps its status and its tools.
  expect(down.connector.status).toBe('active');
  console.log(`health: unhealthy after ${down.tookMs} ms`);
  await expectBadge('Flaky', 'unreachable');

  upstream = startUpstream(port);
  const up = await waitForHealth(created.id, 'healthy', 30_000);
  expect(up.connector.health).toBe('healthy');
  expect(up.connector.health_reason).toBeNull();
  console.log(`health: healthy again after ${up.tookMs} ms`);
  await expectBadge('Flaky', 'reachable');
  const answered = await callTool(g, org.slug, { apiKey: org.apiKey }, 'flaky__echo', { text: 'back' });
  expect(answered.body.result.isError).toBeFalsy();
  expect(answered.body.result.content[0].text).toBe('back');

  const actions = await auditActions(created.id);
  expect(actions.filter((a) => a === 'connector.unhealthy')).toHaveLength(1);
  expect(actions.filter((a) => a === 'connector.recovered')).toHaveLength(1);
});

test('a PostgreSQL connector on a port where nothing listens is unhealthy', async () => {
  const created = await createConnector(g, manage, {
    name: 'Nowhere',
    type: 'postgresql',
    config: { host: '127.0.0.1', port: freePort(), database: 'test', user: 'postgres', tls: 'disable' },
  });
  expect(created.status).toBe('failed');
  expect(created.health).toBe('unhealthy');
  expect(created.health_reason).toBeTruthy();
  expect(created.health_reason).not.toContain('postgres://');
});

test('a PostgreSQL connector whose server stops accepting connections turns unhealthy, and recovers', async () => {
  let relay = await startRelay(0);
  const port = relay.port;
  const created = await createConnector(g, manage, {
    name: 'Relayed',
    type: 'postgresql',
    config: { host: '127.0.0.1', port, database: 'test', user: 'postgres', tls: 'disable', schemas: ['h11_health'] },
  });
  expect(created.status).toBe('active');
  expect(created.health).toBe('healthy');
  await relay.stop();
  const down = await waitForHealth(created.id, 'unhealthy', 30_000);
  expect(down.connector.health).toBe('unhealthy');
  expect(down.connector.health_reason).toBeTruthy();
  console.log(`postgresql health: unhealthy after ${down.tookMs} ms`);
  relay = await startRelay(port);
  const up = await waitForHealth(created.id, 'healthy', 30_000);
  expect(up.connector.health).toBe('healthy');
  await relay.stop();
  const actions = await auditActions(created.id);
  expect(actions).toContain('connector.unhealthy');
  expect(actions).toContain('connector.recovered');
});
