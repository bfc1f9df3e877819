// The gateway on Deno: `deno run -A src/deno.ts` serves the same handler as the Bun entry, on embedded PGlite and on
// PostgreSQL; a real HTTP client onboards an org, gets a token, reads its status and lists its MCP tools.
import { afterAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { contractFetch } from './support/contract.ts';
import { freshDatabase } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

const ROOT = resolve(import.meta.dir, '..');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const OPERATOR = 'deno-operator-token-0123456789abcdef';
const STARTUP_MS = 60_000;

const denoPresent = existsSync(DENO);
if (!denoPresent) {
  if (process.env.CI) throw new Error(`deno is required in CI but ${DENO} is missing (npm install)`);
  console.warn(`[skip] ${DENO} is missing: the Deno suite is skipped`);
}
const pgUp = denoPresent ? await serviceAvailable('postgres') : false;

/** A port nothing listens on right now. */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

interface DenoGateway {
  base: string;
  output: () => string;
  /** The exit code once stopped (null while running). */
  exitCode: () => number | null;
  stop: () => Promise<void>;
}

const running: DenoGateway[] = [];
afterAll(async () => {
  for (const g of running.splice(0)) await g.stop();
}, 15_000);

async function startDeno(env: Record<string, string>, cleanup: () => Promise<void>): Promise<DenoGateway> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([DENO, 'run', '-A', 'src/deno.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? tmpdir(),
      ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      NO_COLOR: '1',
      PORT: String(port),
      HOST: '127.0.0.1',
      TOOLGATE_PUBLIC_URL: base,
      TOOLGATE_OPERATOR_TOKEN: OPERATOR,
      TOOLGATE_DEMO: '0',
      TOOLGATE_LOG_LEVEL: 'error',
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let text = '';
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  };
  void drain(proc.stdout);
  void drain(proc.stderr);
  let stopped = false;
  const gateway: DenoGateway = {
    base,
    output: () => text,
    exitCode: () => proc.exitCode,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
        if (!exited) proc.kill('SIGKILL');
        await proc.exited;
      }
      await cleanup();
    },
  };
  running.push(gateway);

  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`deno exited with ${proc.exitCode} before serving:\n${text}`);
    try {
      const response = await contractFetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`deno did not answer /healthz within ${STARTUP_MS} ms:\n${text}`);
    await Bun.sleep(250);
  }
  return gateway;
}

/** Onboarding, a token, the provisioning status and the MCP tool list, over real HTTP. */
async function exercise(g: DenoGateway) {
  const health = await contractFetch(`${g.base}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });

  const slug = `deno-${Date.now().toString(36)}`;
  const created = await contractFetch(`${g.base}/operator/orgs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR}` },
    body: JSON.stringify({ slug, name: 'Deno Org' }),
  });
  expect(created.status).toBe(201);
  const org = (await created.json()) as any;
  expect(org.org.slug).toBe(slug);
  const orgId: string = org.org.id;
  const apiKey: string = org.api_key.key;

  const tokenResponse = await contractFetch(`${g.base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: org.oauth_client.client_id, client_secret: org.oauth_client.client_secret }),
  });
  expect(tokenResponse.status).toBe(200);
  const token = (await tokenResponse.json()) as any;
  expect(token.token_type).toMatch(/^bearer$/i);
  expect(typeof token.access_token).toBe('string');

  const status = await contractFetch(`${g.base}/api/mcp/${orgId}/status`, { headers: { authorization: `Bearer ${token.access_token}` } });
  expect(status.status).toBe(200);
  const statusBody = (await status.json()) as any;
  expect(['provisioned', 'not_provisioned']).toContain(statusBody.status);
  expect(statusBody.endpoint).toBe(`${g.base}/mcp/${slug}`);
  expect(statusBody.toolCount).toBeGreaterThanOrEqual(0);

  const unauthenticated = await contractFetch(`${g.base}/api/mcp/${orgId}/status`);
  expect(unauthenticated.status).toBe(401);

  const mcp = await contractFetch(`${g.base}/mcp/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': apiKey },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  expect(mcp.status).toBe(200);
  const rpc = (await mcp.json()) as any;
  expect(rpc.jsonrpc).toBe('2.0');
  expect(rpc.id).toBe(1);
  expect(rpc.error).toBeUndefined();
  expect(Array.isArray(rpc.result.tools)).toBe(true);

  const badKey = await contractFetch(`${g.base}/mcp/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'tgk_not-a-key' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  expect(badKey.status).toBe(401);
}

describe.skipIf(!denoPresent)('Deno entry, embedded PGlite', () => {
  test(
    'serves the gateway from a data folder',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'toolgate-deno-'));
      const g = await startDeno({ TOOLGATE_DATA_DIR: dataDir }, async () => rmSync(dataDir, { recursive: true, force: true }));
      expect(g.output()).toContain('on Deno (store: embedded PGlite');
      // The folder is taken like the Bun entry takes it: the lock names this server's port.
      const lock = JSON.parse(await Bun.file(join(dataDir, 'server.lock')).text());
      expect(lock.url).toBe(g.base);
      await exercise(g);
      // SIGTERM: the graceful shutdown of the Bun entry (issue 15) on Deno too: exit 0, the data folder released.
      await g.stop();
      expect(g.exitCode()).toBe(0);
      expect(g.output()).toContain('SIGTERM, shutting down');
      expect(g.output()).toMatch(/stopped after \d+ ms/);
      expect(existsSync(join(dataDir, 'server.lock'))).toBe(false);
    },
    STARTUP_MS + 30_000,
  );
});

describe.skipIf(!denoPresent || !pgUp)('Deno entry, PostgreSQL', () => {
  test(
    'serves the gateway from a PostgreSQL database',
    async () => {
      const db = await freshDatabase('tg_deno');
      const g = await startDeno({ DATABASE_URL: db.url, TOOLGATE_SECRET_KEY: 'b'.repeat(64) }, db.drop);
      expect(g.output()).toContain('on Deno (store: PostgreSQL)');
      await exercise(g);
    },
    STARTUP_MS + 30_000,
  );
});
