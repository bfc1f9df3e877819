// @toolgate/client as adopters get it: `npm pack` on packages/client (its prepack builds dist/), the tarball checked
// (size, contents, manifest), installed offline into an empty scratch project with nothing else, typechecked there
// under NodeNext and Bundler resolution, bundled for the browser, checked as JSR would publish it, and the consumer
// example (examples/sdk-consumer.mjs) run unchanged on Node, Bun and Deno against a real gateway served over HTTP:
// each signs in with client credentials, creates a connector, lists its tools, pages through the audit log, calls
// with a token provider and reads an error.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { parse as parseYaml } from 'yaml';
import { BASE, onboard, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const ROOT = resolve(import.meta.dir, '..');
const PACKAGE = join(ROOT, 'packages', 'client');
const BIN = join(ROOT, 'node_modules', '.bin');
const CONSUMER = 'sdk-consumer.mjs';
const RUNTIMES = {
  node: ['node', CONSUMER],
  deno: [join(BIN, 'deno'), 'run', '--allow-net', '--allow-env', '--allow-read', CONSUMER],
  bun: [join(BIN, 'bun'), CONSUMER],
} as const;
/** The adopter's TypeScript file: every line needs the package's real types (an `any` would fail the @ts-expect-errors). */
const TYPED_CONSUMER = `import { getOrg, listAuditEvents, Toolgate, ToolgateError, type AuditEvent, type ToolgateOptions } from '@toolgate/client';

const options: ToolgateOptions = { baseUrl: 'http://localhost:8080', token: async () => 'token', retry: { attempts: 2 }, timeoutMs: 1000 };
const toolgate = new Toolgate(options);
const org = await getOrg({ client: toolgate.client, throwOnError: true });
const id: string = org.data.id;
const page = await listAuditEvents({ client: toolgate.client, throwOnError: true, query: { limit: 2 } });
const cursor: string | null = page.data.next_cursor;
for await (const event of toolgate.auditEvents({ limit: 2 })) {
  const seen: AuditEvent = event;
  void seen;
}
const error = new ToolgateError(404, { error: 'not_found', message: 'No such thing.' });
const status: number = error.status;
// @ts-expect-error the status is a number, not a string
const wrong: string = error.status;
// @ts-expect-error an unknown option is refused
new Toolgate({ baseUrl: 'http://localhost:8080', notAnOption: true });
export { id, cursor, status, wrong };
`;

/** The package README's TypeScript blocks, each a module of its own, with what its prose assumes declared first. */
const README_ASSUMES = [
  'declare const accessToken: string;\ndeclare const session: { getTokens(): Promise<{ access_token: string }> };',
  "import type { Org, Toolgate as Gateway } from '@toolgate/client';\ndeclare const toolgate: Gateway, agent: Gateway, org: Org;\ndeclare const process: { env: Record<string, string | undefined> };",
  "import type { Client } from '@toolgate/client';\ndeclare const client: Client, connectorId: string;",
  '// the gateway down: self-contained',
];
/** The README's TypeScript blocks as they are (run below: the Errors example and the gateway-down one are plain JavaScript too). */
const README_BLOCKS = [...readFileSync(join(PACKAGE, 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
const ERRORS_BLOCK = README_BLOCKS[2]!;
const DOWN_BLOCK = README_BLOCKS[3]!;

const pgUp = await serviceAvailable('postgres');
const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env.CI) throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing (apt-get install chromium)`);
if (!existsSync(join(BIN, 'deno')) && process.env.CI) throw new Error('deno is required in CI (npm install)');

async function run(argv: readonly string[], cwd: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn([...argv], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NO_COLOR: '1',
      ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      ...(process.env.npm_config_cache ? { npm_config_cache: process.env.npm_config_cache } : {}),
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

async function ok(argv: readonly string[], cwd: string, env: Record<string, string> = {}) {
  const result = await run(argv, cwd, env);
  if (result.code !== 0) throw new Error(`${argv.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  return result;
}

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

const scratch = mkdtempSync(join(tmpdir(), 'toolgate-client-'));
const project = join(scratch, 'consumer');
let packed: Packed;

beforeAll(async () => {
  // prepack builds dist/ with the repository's tsc (npm puts every ancestor node_modules/.bin on the script's PATH).
  const pack = await ok(['npm', 'pack', '--json', '--pack-destination', scratch], PACKAGE);
  packed = (JSON.parse(pack.stdout) as Packed[])[0]!;
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`);
  await ok(['npm', 'install', '--offline', '--no-audit', '--no-fund', join(scratch, packed.filename)], project);
  copyFileSync(join(ROOT, 'examples', CONSUMER), join(project, CONSUMER));
  writeFileSync(join(project, 'consumer.ts'), TYPED_CONSUMER);
  const readme = readFileSync(join(PACKAGE, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks).toHaveLength(README_ASSUMES.length);
  for (const [i, code] of blocks.entries()) writeFileSync(join(project, `readme-${i + 1}.ts`), `${README_ASSUMES[i]}\n${code}export {};\n`);
}, 180_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the packed package', () => {
  test('the tarball is under 100 kB and holds only the built ES modules, their types, the README, the licence and the manifest', () => {
    expect(packed.size).toBeLessThan(100_000);
    const paths = packed.files.map((f) => f.path).sort();
    for (const path of paths) expect(path).toMatch(/^(package\.json|README\.md|LICENSE|dist\/[\w./-]+\.(js|d\.ts))$/);
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/generated/sdk.gen.js']));
    // No tests, no TypeScript sources, nothing of the gateway.
    expect(paths.filter((p) => /test|spec|fixture|^src\/|\.ts$(?<!\.d\.ts)|\.map$/.test(p))).toEqual([]);
  });

  test('the manifest: no runtime dependencies, ESM with types, Node 20+, Apache-2.0, and the version of the contract (jsr.json too)', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', '@toolgate', 'client', 'package.json'), 'utf8'));
    const contract = parseYaml(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8')) as { info: { version: string; license: { identifier: string } } };
    // One licence for the gateway, its contract and the client (issue 43 item 3).
    expect(manifest.license).toBe('Apache-2.0');
    expect(contract.info.license.identifier).toBe('Apache-2.0');
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(JSON.parse(readFileSync(join(PACKAGE, 'jsr.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(readFileSync(join(project, 'node_modules', '@toolgate', 'client', 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies ?? {}).toEqual({});
    expect(manifest.optionalDependencies ?? {}).toEqual({});
    expect(manifest.type).toBe('module');
    expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(manifest.engines.node).toBe('>=20');
    expect(manifest.version).toBe(contract.info.version);
    expect(JSON.parse(readFileSync(join(PACKAGE, 'jsr.json'), 'utf8')).version).toBe(contract.info.version);
    expect(packed.filename).toBe(`toolgate-client-${contract.info.version}.tgz`);
  });

  test('it installs offline into an empty project and brings nothing else along', () => {
    expect(readdirSync(join(project, 'node_modules')).filter((n) => n !== '.package-lock.json')).toEqual(['@toolgate']);
    expect(readdirSync(join(project, 'node_modules', '@toolgate'))).toEqual(['client']);
  });

  for (const [resolution, module] of [
    ['NodeNext', 'NodeNext'],
    ['Bundler', 'ESNext'],
  ] as const) {
    test(`its types resolve under moduleResolution ${resolution} (a TypeScript consumer, the README's examples, the example with checkJs)`, async () => {
      const config = `tsconfig.${resolution.toLowerCase()}.json`;
      writeFileSync(
        join(project, config),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module,
            moduleResolution: resolution,
            lib: ['ES2023', 'DOM'],
            types: [],
            strict: true,
            allowJs: true,
            checkJs: true,
            noEmit: true,
            skipLibCheck: false,
          },
          files: ['consumer.ts', CONSUMER, ...README_ASSUMES.map((_, i) => `readme-${i + 1}.ts`)],
        }),
      );
      const check = await run([join(BIN, 'tsc'), '-p', config], project);
      expect(check.stdout + check.stderr).toBe('');
      expect(check.code).toBe(0);
    }, 120_000);
  }

  test('it uses nothing of Node or Bun: the installed package bundles for the browser', async () => {
    const dist = join(project, 'node_modules', '@toolgate', 'client', 'dist');
    const built = await Bun.build({ entrypoints: [join(dist, 'index.js')], target: 'browser', format: 'esm' });
    expect(built.success).toBe(true);
    const code = await built.outputs[0]!.text();
    expect(code).toContain('class Toolgate');
    expect(code).not.toMatch(/\bfrom\s*["']node:|require\(|process\.env|Buffer\.|Bun\.|Deno\./);
  });

  test('JSR would publish it from its sources (deno publish --dry-run, offline)', async () => {
    if (!existsSync(join(BIN, 'deno'))) return console.warn('skipped: node_modules/.bin/deno is missing');
    // --allow-slow-types: the generated operations have inferred return types (decision 0200).
    const dry = await run([join(BIN, 'deno'), 'publish', '--dry-run', '--allow-dirty', '--allow-slow-types'], PACKAGE);
    expect(dry.code).toBe(0);
    expect(dry.stdout + dry.stderr).toContain('Dry run complete');
    expect(dry.stdout + dry.stderr).toContain('src/toolgate.ts');
    expect(dry.stdout + dry.stderr).not.toContain('test/');
  }, 120_000);
});

describe("the client README's install paths and its gateway-down example", () => {
  test('installed by path (a file: dependency on packages/client, dist/ built), it imports on Node', async () => {
    const byPath = join(scratch, 'by-path');
    mkdirSync(byPath);
    writeFileSync(join(byPath, 'package.json'), `${JSON.stringify({ name: 'by-path', private: true, type: 'module' }, null, 2)}\n`);
    await ok(['npm', 'install', '--offline', '--no-audit', '--no-fund', PACKAGE], byPath);
    const imported = await ok(
      ['node', '--input-type=module', '-e', "const m = await import('@toolgate/client'); console.log(typeof m.Toolgate, typeof m.getOrg)"],
      byPath,
    );
    expect(imported.stdout.trim()).toBe('function function');
  }, 120_000);

  for (const [runtime, argv] of Object.entries(RUNTIMES)) {
    test(`${runtime}: the gateway-down example returns, then throws, a ToolgateError of status 0 \`network_error\``, async () => {
      const port = await new Promise<number>((resolvePort) => {
        const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() });
        const taken = probe.port!;
        probe.stop(true);
        resolvePort(taken);
      });
      writeFileSync(join(project, 'readme-down.mjs'), DOWN_BLOCK.replaceAll('http://127.0.0.1:59999', `http://127.0.0.1:${port}`));
      const result = await run([...argv.slice(0, -1), 'readme-down.mjs'], project);
      if (result.code !== 0) throw new Error(`${runtime} exited ${result.code}:\n${result.stderr}${result.stdout}`);
      const lines = result.stdout.trim().split('\n');
      expect(lines[0]).toBe('undefined 0 network_error');
      expect(lines[1]).toStartWith(`0 network_error No response from the gateway at http://127.0.0.1:${port}: `);
      expect(lines).toHaveLength(2);
    }, 60_000);
  }
});

describe.skipIf(!pgUp)('the consumer example on every runtime, from the installed package', () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let targets: Targets;
  let base: string;

  beforeAll(async () => {
    // The port is known only once listening, and the gateway needs it as its public URL: bind first, route after.
    // onboard() addresses the in-process gateway by the suite's own host name, which the Host check must allow too.
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    // The browser loads the installed package, bundled as a page would, from the gateway's own origin.
    const bundle = await Bun.build({ entrypoints: [join(project, 'node_modules', '@toolgate', 'client', 'dist', 'index.js')], target: 'browser' });
    const script = await bundle.outputs[0]!.text();
    server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request) => {
        const path = new URL(request.url).pathname;
        if (path === '/__client/index.js') return new Response(script, { headers: { 'content-type': 'text/javascript' } });
        if (path === '/__client/') return new Response('<!doctype html><title>client</title>', { headers: { 'content-type': 'text/html' } });
        return handle(request);
      },
    });
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
    test(`${runtime}: signs in, creates a connector, lists its tools, pages the audit log, uses a token provider, reads a 404`, async () => {
      const org: Onboarded = await onboard(g); // an org of its own, so tool names carry no collision suffix
      const result = await run(argv, project, {
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
        // The two table tools and the connector's schema tool, describe_<connector name> (decision 0313).
        tools: [`describe_shop_${runtime}`, 'query_postgresql_items', 'query_postgresql_notes'],
        tokenProvider: true,
        error: { isError: true, isToolgateError: true, status: 404, error: 'connector_not_found', message: 'No such connector.' },
      });
      // Onboarding, the sign-in and the connector are audited: more than one page of two.
      expect(seen.auditEvents).toBeGreaterThanOrEqual(3);
    }, 120_000);
  }

  test("the README's Errors example, run on Node against the gateway: a 404 caught by its code, then returned", async () => {
    const org: Onboarded = await onboard(g);
    const prelude = `import { Toolgate as Gateway } from '@toolgate/client';
const client = new Gateway({ baseUrl: ${JSON.stringify(base)}, clientId: ${JSON.stringify(org.clientId)}, clientSecret: ${JSON.stringify(org.clientSecret)} }).client;
const connectorId = '00000000-0000-4000-8000-000000000000';
`;
    writeFileSync(join(project, 'readme-errors.mjs'), prelude + ERRORS_BLOCK);
    const result = await ok(['node', 'readme-errors.mjs'], project);
    expect(result.stdout.trim()).toBe('404 connector_not_found No such connector.');
  }, 60_000);

  test.skipIf(!chromiumPresent)(
    'browser (headless Chromium): the bundled package signs in, pages the audit log and reads a 404',
    async () => {
      const org: Onboarded = await onboard(g);
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
      try {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(String(e)));
        await page.goto(`${base}/__client/`);
        const seen = await page.evaluate(
          async ({ clientId, clientSecret }) => {
            const tg = await import('/__client/index.js' as string);
            const toolgate = new tg.Toolgate({ baseUrl: location.origin, clientId, clientSecret, timeoutMs: 10_000 });
            const { data: me } = await tg.getOrg({ client: toolgate.client, throwOnError: true });
            let events = 0;
            for await (const _ of toolgate.auditEvents({ limit: 1 })) events++;
            const missing = await tg.getConnector({ client: toolgate.client, path: { connectorId: '00000000-0000-4000-8000-000000000000' } });
            return {
              slug: me.slug,
              events,
              error: { isToolgateError: missing.error instanceof tg.ToolgateError, status: missing.error.status, error: missing.error.error },
            };
          },
          { clientId: org.clientId, clientSecret: org.clientSecret },
        );
        expect(seen).toMatchObject({ slug: org.slug, error: { isToolgateError: true, status: 404, error: 'connector_not_found' } });
        expect(seen.events).toBeGreaterThanOrEqual(2); // onboarding and the sign-in, one a page
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
