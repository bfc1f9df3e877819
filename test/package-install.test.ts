// Issue 43 item 1: the gateway as a user installs it. `npm pack` on the repository, the tarball installed into an
// empty folder with npm, then, with only Node on PATH (no Bun: the one the package brings is found by bin/toolgate.js),
// `npx toolgate start` serves the embedded store, the README's quickstart curl block runs against it, the CLI works
// through the same bin, and SIGTERM through npx stops the gateway gracefully. The install needs the npm registry; when
// it cannot be reached the suite is skipped with that reason printed (decision 0309).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '..');
const NODE = Bun.which('node');
/** Only Node's folder and the system's: `bun` must not be found on it (checked below). */
const PATH = [...new Set([NODE ? dirname(NODE) : '/usr/bin', '/usr/bin', '/bin'])].join(':');

async function run(argv: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = 300_000) {
  const proc = Bun.spawn(argv, {
    cwd,
    env: { PATH, HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    timeout: timeoutMs,
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

async function ok(argv: string[], cwd: string, env: Record<string, string> = {}, timeoutMs?: number) {
  const result = await run(argv, cwd, env, timeoutMs);
  if (result.code !== 0) throw new Error(`${argv.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  return result;
}

/** The registry answers `npm ping`; without it nothing can be installed, and the suite says so instead of failing. */
const registry = NODE ? await run(['npm', 'ping'], ROOT, {}, 30_000) : null;
const skipReason = !NODE
  ? 'node is not on PATH'
  : registry?.code !== 0
    ? `the npm registry is not reachable (npm ping exited ${registry?.code}): the packed gateway cannot be installed`
    : null;
if (skipReason) console.warn(`[skip] package-install: ${skipReason}`);

/** Appends what a child process writes on `stream` (until it closes) through `onText`. */
async function collect(stream: ReadableStream<Uint8Array>, onText: (text: string) => void): Promise<void> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onText(decoder.decode(value, { stream: true }));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

const scratch = mkdtempSync(join(tmpdir(), 'toolgate-package-'));
const project = join(scratch, 'install');
let packed: Packed;
let port: number;
let gateway: ReturnType<typeof Bun.spawn> | null = null;
let gatewayOutput = '';
const timings: Record<string, number> = {};

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings[name] = Math.round(performance.now() - started);
  }
}

async function waitReady(url: string, deadlineMs: number): Promise<Response> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const response = await fetch(url);
      if (response.status === 200) return response;
    } catch {
      // not listening yet
    }
    if (Date.now() > until || gateway?.exitCode !== null) throw new Error(`${url} did not answer 200 within ${deadlineMs} ms:\n${gatewayOutput}`);
    await Bun.sleep(200);
  }
}

describe.skipIf(Boolean(skipReason))('the packed gateway, installed with npm and started with npx', () => {
  beforeAll(async () => {
    // `prepare` builds the client package's dist/ (shipped for the ./client export) before npm packs.
    const pack = await timed('pack', () => ok(['npm', 'pack', '--json', '--pack-destination', scratch], ROOT));
    packed = (JSON.parse(pack.stdout) as Packed[])[0]!;
    mkdirSync(project);
    await timed('install', () => ok(['npm', 'install', '--no-audit', '--no-fund', '--prefer-offline', join(scratch, packed.filename)], project, {}, 600_000));
    port = await freePort();
    gateway = Bun.spawn(['npx', 'toolgate', 'start'], {
      cwd: project,
      env: { PATH, HOME: process.env.HOME ?? '/tmp', PORT: String(port), HOST: '127.0.0.1', NO_COLOR: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    for (const stream of [gateway.stdout, gateway.stderr] as ReadableStream<Uint8Array>[]) void collect(stream, (text) => (gatewayOutput += text));
    await timed('start', () => waitReady(`http://127.0.0.1:${port}/readyz`, 90_000));
  }, 900_000);

  afterAll(async () => {
    if (gateway && gateway.exitCode === null) {
      gateway.kill('SIGKILL');
      await gateway.exited;
    }
    console.log(`package-install: tarball ${packed?.size} bytes; pack ${timings.pack} ms, install ${timings.install} ms, start to /readyz ${timings.start} ms`);
    // The scratch folder holds a whole install (about 330 MB): removing it outlasts the default hook timeout on a busy machine.
    rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  test('the tarball holds the runtime sources, contract, generated code, console bundle, explorer, licence and unit, and no tests or data', () => {
    const paths = new Set(packed.files.map((f) => f.path));
    for (const needed of [
      'bin/toolgate.js',
      'src/main.ts',
      'src/cli.ts',
      'openapi.yaml',
      'jsonrpc-schema.json',
      'generated/openapi.json',
      'generated/console/app.js',
      'generated/console/app.css',
      'vendor/scalar-api-reference/standalone.js',
      'packages/client/dist/index.js',
      'LICENSE',
      'README.md',
      'deploy/systemd/toolgate.service',
      'deploy/systemd/toolgate.env.example',
    ]) {
      expect(paths.has(needed), needed).toBe(true);
    }
    const unwanted = [...paths].filter((p) => /^(test|bench|scripts|examples|docs|data|node_modules)\/|\.test\.ts$|^src\/console\/ui\/|(^|\/)\.env$/.test(p));
    expect(unwanted).toEqual([]);
    expect(packed.size).toBeLessThan(5_000_000);
  });

  test('the bin runs without Bun on PATH: the runtime is the one the package installed', async () => {
    expect(Bun.which('bun', { PATH })).toBeNull();
    const { stdout } = await ok(['npx', 'toolgate', '--help'], project);
    expect(stdout).toContain('usage: toolgate <command>');
    expect(stdout).toContain('start');
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', 'toolgate', 'package.json'), 'utf8')) as { license: string };
    expect(manifest.license).toBe('Apache-2.0');
  }, 60_000);

  test('`npx toolgate start` answers /readyz on the embedded store', async () => {
    const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { status: string; store: string };
    expect(ready).toMatchObject({ status: 'ready', store: 'ok' });
    expect(gatewayOutput).toContain('store: embedded PGlite in ./data');
  });

  test("the README's quickstart curl block lists the demo tools and calls one", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((code) => code.startsWith('KEY=$('));
    expect(block).toBeDefined();
    const script = block!.replaceAll('http://localhost:8080', `http://127.0.0.1:${port}`);
    const { stdout } = await ok(['bash', '-euo', 'pipefail', '-c', script], project);
    expect(stdout).toContain('"name":"query_postgresql_customers"');
    expect(stdout).toContain('Ada Lovelace');
  }, 60_000);

  test('`npx toolgate org list --json` lists the demo org; the other commands go through the same bin', async () => {
    const list = JSON.parse((await ok(['npx', 'toolgate', 'org', 'list', '--json'], project)).stdout) as { orgs: { slug: string }[] };
    expect(list.orgs.map((o) => o.slug)).toContain('demo');
    const created = JSON.parse((await ok(['npx', 'toolgate', 'org', 'create', '--slug', 'h6-packed', '--name', 'Packed', '--json'], project)).stdout) as {
      slug: string;
      api_key_id: string;
    };
    expect(created.slug).toBe('h6-packed');
    const keys = JSON.parse((await ok(['npx', 'toolgate', 'key', 'list', '--org', 'h6-packed', '--json'], project)).stdout) as { api_keys: { id: string }[] };
    expect(keys.api_keys.map((k) => k.id)).toContain(created.api_key_id);
    // A usage error keeps its exit code through npx and the launcher.
    expect((await run(['npx', 'toolgate', 'org', 'frobnicate'], project)).code).toBe(2);
  }, 120_000);

  test('SIGTERM to npx stops the gateway gracefully: npm does not pass it on, the launcher sees its parent go', async () => {
    gateway!.kill('SIGTERM');
    await gateway!.exited;
    const until = Date.now() + 20_000;
    while (!/stopped after \d+ ms/.test(gatewayOutput) && Date.now() < until) await Bun.sleep(100);
    expect(gatewayOutput).toContain('SIGTERM, shutting down');
    expect(gatewayOutput).toMatch(/stopped after \d+ ms/);
    // The port is closed and the data folder's lock released: the process is gone, not orphaned.
    expect(
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        () => 'answered',
        () => 'refused',
      ),
    ).toBe('refused');
    expect(existsSync(join(project, 'data', 'server.lock'))).toBe(false);
  }, 30_000);
});
