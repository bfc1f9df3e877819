/**
 * The console's page and its two assets (app.js, app.css). `npm run gen` (scripts/gen.ts) bundles web/console into
 * generated/console, and CI's `gen --check` keeps it fresh; here they are only read, once per process when first
 * asked for, so every runtime (Bun, Deno) serves the same files and no bundler runs in the gateway. Nothing is loaded
 * from another host.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Resolved from the module URL (import.meta.dir is Bun's own; the Deno entry loads this module too). */
const builtFile = (name: string) => fileURLToPath(new URL(`../../generated/console/${name}`, import.meta.url));

export interface ConsoleAsset {
  body: Uint8Array<ArrayBuffer>;
  type: string;
  etag: string;
}

let loaded: Promise<Map<string, ConsoleAsset>> | null = null;

const asset = (body: Uint8Array<ArrayBuffer>, type: string): ConsoleAsset => ({
  body,
  type,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
});

async function load(): Promise<Map<string, ConsoleAsset>> {
  const read = async (name: string) => {
    try {
      return new Uint8Array(await readFile(builtFile(name)));
    } catch {
      throw new Error(`generated/console/${name} is missing; run \`npm run gen\``);
    }
  };
  return new Map([
    ['app.js', asset(await read('app.js'), 'text/javascript; charset=utf-8')],
    ['app.css', asset(await read('app.css'), 'text/css; charset=utf-8')],
  ]);
}

/** Reads the built assets (once); a failed read is retried on the next request. */
export function consoleAssets(): Promise<Map<string, ConsoleAsset>> {
  if (!loaded) {
    loaded = load();
    loaded.catch(() => {
      loaded = null;
    });
  }
  return loaded;
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

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What `GET /` answers: a small page leading to the console, the API docs and the MCP endpoint's URL (no script). */
export function landingPage(publicUrl: string): string {
  const base = escapeHtml(publicUrl);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Toolgate</title>
<link rel="stylesheet" href="/console/assets/app.css">
</head>
<body>
<main class="message landing">
<h1>Toolgate</h1>
<p>The MCP gateway that turns an organisation's databases and MCP servers into tools agents can call safely.</p>
<ul>
<li><a href="/console">Open the console</a>: connectors, tools, approvals, audit, keys.</li>
<li><a href="/docs">API reference</a> (the REST interface; <a href="/openapi.json">openapi.json</a>).</li>
<li>MCP endpoint of an org: <code>${base}/mcp/&lt;org-slug&gt;</code> (the console's "Connect an agent" page shows ready-made client configurations).</li>
</ul>
</main>
</body>
</html>
`;
}
