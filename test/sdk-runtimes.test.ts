// `toolgate/client` as adopters get it: built for Node under NodeNext (the typecheck Node consumers rely on), the
// consumer example typechecked under NodeNext, then run unchanged on Node, Deno and Bun against a real gateway
// served over HTTP, each signing in with client credentials, creating a connector, listing tools and reading an error.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BASE, onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const ROOT = resolve(import.meta.dir, '..');
const BIN = join(ROOT, 'node_modules', '.bin');
const CONSUMER = 'examples/sdk-consumer.mjs';
const RUNTIMES = {
  node: ['node', CONSUMER],
  deno: [join(BIN, 'deno'), 'run', '--allow-net', '--allow-env', '--allow-read', CONSUMER],
  bun: [join(BIN, 'bun'), CONSUMER],
} as const;

const pgUp = await serviceAvailable('postgres');
if (!existsSync(join(BIN, 'deno')) && process.env.CI) throw new Error('deno is required in CI (npm install)');

async function run(argv: readonly string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...argv], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NO_COLOR: '1',
      ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

describe('the SDK under NodeNext', () => {
  test('sdk/ and generated/client build for Node with NodeNext resolution (no TS2307, strict)', async () => {
    const build = await run([join(BIN, 'tsc'), '-p', 'sdk/tsconfig.json']);
    expect(build.stdout + build.stderr).toBe('');
    expect(build.code).toBe(0);
    expect(existsSync(join(ROOT, 'dist/sdk/index.js'))).toBe(true);
    expect(existsSync(join(ROOT, 'dist/sdk/index.d.ts'))).toBe(true);
  }, 120_000);

  test('the consumer example typechecks as a Node project importing toolgate/client', async () => {
    const check = await run([join(BIN, 'tsc'), '-p', 'examples/tsconfig.json']);
    expect(check.stdout + check.stderr).toBe('');
    expect(check.code).toBe(0);
  }, 120_000);
});

describe.skipIf(!pgUp)('the consumer example on every runtime', () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let targets: Targets;
  let base: string;

  beforeAll(async () => {
    // The port is known only once listening, and the gateway needs it as its public URL: bind first, route after.
    // onboard() addresses the in-process gateway by the suite's own host name, which the Host check must allow too.
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    [g, targets] = await Promise.all([
      startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: new URL(BASE).hostname }),
      createTargets('tg_sdk', 'pg'),
    ]);
    handle = g.handle;
  }, 120_000);
  afterAll(async () => {
    server?.stop(true);
    await g?.close();
    await targets?.drop();
  }, 60_000);

  for (const [runtime, argv] of Object.entries(RUNTIMES)) {
    test(`${runtime}: signs in, creates a connector, lists its tools and reads a 404 as a ToolgateError`, async () => {
      // dist/ is what Node imports; the NodeNext suite above builds it, and `npm install` does (prepare).
      if (runtime === 'node') expect(existsSync(join(ROOT, 'dist/sdk/index.js'))).toBe(true);
      const org: Onboarded = await onboard(g); // an org of its own, so tool names carry no collision suffix
      const result = await run(argv, {
        TOOLGATE_URL: base,
        TOOLGATE_CLIENT_ID: org.clientId,
        TOOLGATE_CLIENT_SECRET: org.clientSecret,
        TOOLGATE_PG: JSON.stringify(targets.pgConfig),
      });
      if (result.code !== 0) throw new Error(`${runtime} consumer exited ${result.code}:\n${result.stderr}${result.stdout}`);
      const seen = JSON.parse(result.stdout.trim().split('\n').pop()!);
      expect(seen).toMatchObject({
        runtime,
        org: org.slug,
        connector: { status: 'active' },
        tools: ['query_postgresql_items', 'query_postgresql_notes'],
        error: { isError: true, isToolgateError: true, status: 404, error: 'connector_not_found', message: 'No such connector.' },
      });
    }, 120_000);
  }
});
