/**
 * The console's page and its two assets (app.js, app.css). The bundle is built from src/console/ui with Bun's bundler
 * in memory, once per process, when first asked for (boot warms it up): a fresh clone needs no build step and no
 * built file can go stale or be committed. Nothing is loaded from another host.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Resolved from the module URL (import.meta.dir is Bun's own; the Deno entry loads this module too). */
const uiFile = (name: string) => fileURLToPath(new URL(`./ui/${name}`, import.meta.url));

export interface ConsoleAsset {
  body: Uint8Array<ArrayBuffer>;
  type: string;
  etag: string;
}

let built: Promise<Map<string, ConsoleAsset>> | null = null;

const asset = (body: Uint8Array<ArrayBuffer>, type: string): ConsoleAsset => ({
  body,
  type,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
});

async function build(): Promise<Map<string, ConsoleAsset>> {
  if (typeof Bun === 'undefined') throw new Error('the console bundle is built with Bun; run the gateway on Bun to serve /console');
  const result = await Bun.build({ entrypoints: [uiFile('main.tsx')], target: 'browser', minify: true, format: 'esm', sourcemap: 'none' });
  if (!result.success) throw new Error(`the console bundle failed to build: ${result.logs.map((l) => l.message).join('; ')}`);
  const js = result.outputs.find((o) => o.kind === 'entry-point')!;
  const css = await readFile(uiFile('console.css'));
  return new Map([
    ['app.js', asset(new Uint8Array(await js.arrayBuffer()), 'text/javascript; charset=utf-8')],
    ['app.css', asset(new Uint8Array(css), 'text/css; charset=utf-8')],
  ]);
}

/** Builds the bundle (once); a failed build is retried on the next request. */
export function consoleAssets(): Promise<Map<string, ConsoleAsset>> {
  if (!built) {
    built = build();
    built.catch(() => {
      built = null;
    });
  }
  return built;
}

export const CONSOLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Toolgate console</title>
<link rel="stylesheet" href="/console/assets/app.css">
<script type="module" src="/console/assets/app.js"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the console…</p></div>
<noscript>The Toolgate console needs JavaScript.</noscript>
</body>
</html>
`;
