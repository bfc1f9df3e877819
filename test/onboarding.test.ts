// The acceptance path with real processes: the CLI onboards an org into an embedded data folder, the real
// server takes the folder, the CLI then goes through the server's operator API, and the generated client SDK
// gets a token and reads the provisioning status from the running server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { getProvisioningStatus, issueToken, ToolgateError } from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { contractFetch } from './support/contract.ts';
import { sdkAt } from './support/sdk.ts';

/** Hooks default to 5 s in bun whatever bunfig says; starting PGlite under load can take longer. */
const HOOK_TIMEOUT_MS = 60_000;

const ROOT = join(import.meta.dir, '..');
const BUN = join(ROOT, 'node_modules', '.bin', 'bun');

interface CliOnboarding {
  org_id: string;
  slug: string;
  endpoint: string;
  api_key: string;
  client_id: string;
  client_secret: string;
}

let dataDir: string;
let port: number;
let baseUrl: string;
let server: Subprocess<'ignore', 'pipe', 'pipe'> | null = null;
let acme: CliOnboarding;
let beta: CliOnboarding;

/** The environment of the child processes: only the data folder decides where the store is. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  for (const k of ['DATABASE_URL', 'TOOLGATE_OPERATOR_TOKEN', 'TOOLGATE_SECRET_KEY', 'TOOLGATE_PUBLIC_URL', 'PORT', 'HOST', 'REDIS_URL']) delete env[k];
  return { ...env, TOOLGATE_DATA_DIR: dataDir, TOOLGATE_LOG_LEVEL: 'error', ...extra };
}

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([BUN, 'src/cli.ts', ...args], { cwd: ROOT, env: childEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

function parseOnboarding(stdout: string): CliOnboarding {
  const lines = stdout.trim().split('\n');
  expect(lines.length).toBe(1);
  const parsed = JSON.parse(lines[0]!) as CliOnboarding;
  for (const field of ['org_id', 'slug', 'api_key', 'client_id', 'client_secret'] as const) {
    expect(typeof parsed[field]).toBe('string');
    expect(parsed[field].length).toBeGreaterThan(0);
  }
  return parsed;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: p } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(p));
    });
  });
}

async function waitForHealth(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server?.exitCode !== null) throw new Error(`server exited early (${server?.exitCode}): ${await new Response(server!.stderr).text()}`);
    try {
      const res = await contractFetch(`${baseUrl}/healthz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(100);
  }
  throw new Error('server did not become healthy in time');
}

async function stopServer(): Promise<void> {
  if (!server || server.exitCode !== null) return;
  server.kill('SIGTERM');
  const exited = await Promise.race([server.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
  if (!exited) {
    server.kill('SIGKILL');
    await server.exited;
  }
}

function mcpToolsList(slug: string, apiKey: string) {
  return contractFetch(`${baseUrl}/mcp/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'toolgate-onboarding-'));
  port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
}, HOOK_TIMEOUT_MS);

afterAll(async () => {
  await stopServer();
  rmSync(dataDir, { recursive: true, force: true });
}, HOOK_TIMEOUT_MS);

describe('onboarding with real processes', () => {
  test('with no server running, the CLI onboards directly into the data folder', async () => {
    const { code, stdout, stderr } = await cli(['org', 'create', '--slug', 'acme', '--name', 'Acme', '--plan', 'starter', '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    acme = parseOnboarding(stdout);
    expect(acme.slug).toBe('acme');
    expect(acme.api_key.startsWith('tgk_')).toBe(true);
    expect(acme.client_id.startsWith('tgc_')).toBe(true);
    expect(existsSync(join(dataDir, 'pgdata'))).toBe(true);
    expect(existsSync(join(dataDir, 'server.lock'))).toBe(false); // released on exit
  }, 45_000);

  test('the real server takes the folder and serves the org the CLI made', async () => {
    server = Bun.spawn([BUN, 'src/main.ts'], {
      cwd: ROOT,
      env: childEnv({ PORT: String(port), HOST: '127.0.0.1', TOOLGATE_DEMO: '0' }),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    await waitForHealth(20_000);
    const lock = JSON.parse(readFileSync(join(dataDir, 'server.lock'), 'utf8')) as { pid: number; port: number };
    expect(lock).toMatchObject({ pid: server.pid, port });
    expect((await mcpToolsList('acme', acme.api_key)).status).toBe(200);
  }, 30_000);

  test('while the server holds the folder, the CLI goes through its operator API', async () => {
    verifies('AUTH-CROSS-ORG');
    const { code, stdout, stderr } = await cli(['org', 'create', '--slug', 'beta', '--name', 'Beta', '--plan', 'growth', '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    beta = parseOnboarding(stdout);
    // The endpoint comes from the server's configuration (its port), not the CLI's: the server made the org.
    expect(beta.endpoint).toBe(`http://localhost:${port}/mcp/beta`);
    expect(server!.exitCode).toBeNull();
    expect((await contractFetch(`${baseUrl}/healthz`)).status).toBe(200);
    expect((await mcpToolsList('beta', beta.api_key)).status).toBe(200);
    expect((await mcpToolsList('acme', acme.api_key)).status).toBe(200);
    expect((await mcpToolsList('acme', beta.api_key)).status).toBe(401);
  }, 30_000);

  test('the SDK gets a token and reads the provisioning status', async () => {
    verifies('TOKEN-ENDPOINT-ISSUE', 'TOKEN-ENDPOINT-ERRORS', 'PROVISION-STATUS');
    const client = sdkAt(baseUrl, contractFetch as typeof fetch, {}).client;
    for (const org of [acme, beta]) {
      const token = await issueToken({ client, body: { grant_type: 'client_credentials', client_id: org.client_id, client_secret: org.client_secret } });
      expect(token.response.status).toBe(200);
      expect(token.data).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      const status = await getProvisioningStatus({ client, path: { orgId: org.org_id }, auth: token.data!.access_token });
      expect(status.response.status).toBe(200);
      expect(status.data).toEqual({ status: 'provisioned', endpoint: `http://localhost:${port}/mcp/${org.slug}`, toolCount: 0 });
      // The same read with the SDK signing in by itself (client credentials, the token fetched by its auth callback).
      const signedIn = sdkAt(baseUrl, contractFetch as typeof fetch, { clientId: org.client_id, clientSecret: org.client_secret });
      expect((await getProvisioningStatus({ client: signedIn.client, throwOnError: true, path: { orgId: org.org_id } })).data).toEqual(status.data!);
    }
    const refused = await issueToken({ client, body: { grant_type: 'client_credentials', client_id: acme.client_id, client_secret: 'wrong' } });
    expect(refused.response.status).toBe(401);
    expect(refused.error).toBeInstanceOf(ToolgateError);
    expect(refused.error).toMatchObject({ error: 'invalid_client' });
  });

  test('a duplicate slug through the CLI exits non-zero with a clear message', async () => {
    for (const slug of ['acme', 'beta']) {
      const { code, stdout, stderr } = await cli(['org', 'create', '--slug', slug, '--name', 'Again', '--json']);
      expect(code).not.toBe(0);
      expect(stdout).toBe('');
      expect(stderr.trim()).toBe(`toolgate: The slug "${slug}" is already taken.`);
    }
    expect((await contractFetch(`${baseUrl}/healthz`)).status).toBe(200);
  }, 30_000);

  test('after the server stops, the CLI opens the folder itself again and still refuses the duplicate', async () => {
    await stopServer();
    expect(server!.exitCode).toBe(0);
    expect(existsSync(join(dataDir, 'server.lock'))).toBe(false);
    const { code, stderr } = await cli(['org', 'create', '--slug', 'beta', '--name', 'Again']);
    expect(code).not.toBe(0);
    expect(stderr.trim()).toBe('toolgate: The slug "beta" is already taken.');
  }, 30_000);
});

describe('a data folder held by another process', () => {
  let busyDir: string;
  beforeAll(() => {
    busyDir = mkdtempSync(join(tmpdir(), 'toolgate-busy-'));
  }, HOOK_TIMEOUT_MS);
  afterAll(() => {
    rmSync(busyDir, { recursive: true, force: true });
  }, HOOK_TIMEOUT_MS);

  // The holder is this test process: alive, and not the CLI's own pid.
  const holdAs = (info: { port: number; url: string }) => writeFileSync(join(busyDir, 'server.lock'), JSON.stringify({ pid: process.pid, ...info }));

  test('by another CLI command: a clear "try again", no stack trace, nothing touched', async () => {
    holdAs({ port: 0, url: 'cli' });
    const { code, stdout, stderr } = await cli(['org', 'create', '--slug', 'gamma', '--name', 'Gamma', '--json'], { TOOLGATE_DATA_DIR: busyDir });
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr.trim()).toBe(`toolgate: the data folder is in use by process ${process.pid} (another toolgate command); try again`);
    expect(existsSync(join(busyDir, 'pgdata'))).toBe(false);
  });

  test('by a server that does not answer: a clear message, no stack trace', async () => {
    holdAs({ port: await freePort(), url: 'http://localhost' });
    const { code, stdout, stderr } = await cli(['org', 'create', '--slug', 'gamma', '--name', 'Gamma', '--json'], { TOOLGATE_DATA_DIR: busyDir });
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toStartWith('toolgate: the server holding the data folder does not answer at http://127.0.0.1:');
    expect(stderr).not.toContain('    at ');
    expect(existsSync(join(busyDir, 'pgdata'))).toBe(false);
  });
});
