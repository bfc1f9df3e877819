// The console's assets are built files (generated/console, written by `npm run gen`), served the same on Bun and on
// Deno with no bundler in the gateway; `GET /` leads to the console, the API docs and the MCP endpoint (issue 31).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BASE, startTestGateway, type TestGateway } from './support/gateway.ts';

const ROOT = resolve(import.meta.dir, '..');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway('pglite');
}, 60_000);
afterAll(async () => {
  await g?.close();
});

test('GET / is a small page linking the console, the docs and the MCP URL', async () => {
  const res = await g.handle(new Request(`${BASE}/`));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toStartWith('text/html');
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
  const html = await res.text();
  expect(html).toContain('href="/console"');
  expect(html).toContain('href="/docs"');
  expect(html).toContain(`${g.deps.config.publicUrl}/mcp/&lt;org-slug&gt;`);
  expect(html).not.toContain('<script');
  // Only GET: another method on / serves nothing; as on every operation's path, it is answered 405 with Allow (0353).
  const post = await g.handle(new Request(`${BASE}/`, { method: 'POST' }));
  expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET']);
});

test('the console serves the built files of generated/console, byte for byte, with their ETag', async () => {
  for (const name of ['app.js', 'app.css']) {
    const res = await g.handle(new Request(`${BASE}/console/assets/${name}`));
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(readFileSync(join(ROOT, 'generated', 'console', name))));
  }
  // Nothing in the gateway's own source calls the bundler any more.
  expect(readFileSync(join(ROOT, 'src', 'console', 'assets.ts'), 'utf8')).not.toContain('Bun.build');
});

test.skipIf(!existsSync(DENO))(
  'under Deno the console assets load (they once answered 503 there)',
  async () => {
    const script = `
import { consoleAssets } from ${JSON.stringify(join(ROOT, 'src/console/assets.ts'))};
const assets = await consoleAssets();
console.log(JSON.stringify([...assets].map(([name, a]) => [name, a.body.length, a.etag])));`;
    const child = Bun.spawn([DENO, 'eval', '--ext=ts', script], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        NO_COLOR: '1',
        ...(process.env.DENO_DIR ? { DENO_DIR: process.env.DENO_DIR } : {}),
      },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err] = [await new Response(child.stdout).text(), await new Response(child.stderr).text()];
    expect(await child.exited, err).toBe(0);
    const res = await g.handle(new Request(`${BASE}/console/assets/app.js`));
    const listed = JSON.parse(out.trim().split('\n').pop()!) as [string, number, string][];
    expect(listed.map(([name]) => name)).toEqual(['app.js', 'app.css']);
    expect(listed[0]![1]).toBe(readFileSync(join(ROOT, 'generated', 'console', 'app.js')).length);
    expect(listed[0]![2]).toBe(res.headers.get('etag')!);
  },
  60_000,
);
