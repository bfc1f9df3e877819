/**
 * The console's pages (the landing page, the console's, the sign-in messages) and its two assets (app.js, app.css). `npm run gen` (scripts/gen.ts) bundles web/console into
 * generated/console, and CI's `gen --check` keeps it fresh; here they are only read, once per process when first
 * asked for, so every runtime (Bun, Deno) serves the same files and no bundler runs in the gateway. Nothing is loaded
 * from another host.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { AppError, notFound } from '../errors.ts';
import { withCookies } from '../net/cookies.ts';
import { describeError } from '../util/log.ts';
import type { Logger } from '../util/log.ts';

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

/** The asset of this name with its type and ETag, revalidated on every use; 404 for any other name. */
export async function assetReply(log: Logger, name: string): Promise<Response> {
  let assets: Map<string, ConsoleAsset>;
  try {
    assets = await consoleAssets();
  } catch (err) {
    log.error('console bundle unavailable', { error: describeError(err) });
    throw new AppError(503, 'console_unavailable', 'The console assets are missing on this instance (run npm run gen).');
  }
  const found = Object.hasOwn(Object.fromEntries(assets), name) ? assets.get(name) : undefined;
  if (!found) throw notFound('not_found', 'No such asset.');
  return new Response(found.body, { headers: { 'content-type': found.type, etag: found.etag, 'cache-control': 'no-cache' } });
}

/** An HTML answer (the console's door adds its security headers). */
const htmlReply = (html: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', ...headers } });

const CONSOLE_PAGE = `<!doctype html>
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

export const consolePage = () => htmlReply(CONSOLE_PAGE);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What `GET /` answers: a small page leading to the console, the API docs and the MCP endpoint's URL (no script). */
export function landingPage(publicUrl: string): Response {
  const base = escapeHtml(publicUrl);
  return htmlReply(`<!doctype html>
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
`);
}

/** A small page for the sign-in redirects (no script: the CSP allows none inline), with the cookies it sets. */
export function messagePage(
  title: string,
  message: string,
  status: number,
  cookies: string[] = [],
  refreshTo?: string,
  headers: Record<string, string> = {},
): Response {
  const refresh = refreshTo ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(refreshTo)}">` : '';
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>${refresh}<link rel="stylesheet" href="/console/assets/app.css"></head><body><main class="message"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="${escapeHtml(refreshTo ?? '/console')}">Continue to the console</a></p></main></body></html>`;
  return withCookies(htmlReply(html, status, headers), cookies);
}
