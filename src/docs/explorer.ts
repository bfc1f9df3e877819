/**
 * The /docs explorer: the page is @elysiajs/swagger's Scalar page over the hand-written contract at /openapi.json,
 * and the Scalar bundle it loads (`scalarCDN`) is served by the gateway itself, so it renders with no internet.
 * The bundle is Scalar's single-file browser build, vendored in vendor/scalar-api-reference/ (3.6 MB) instead of
 * the @scalar/api-reference package, whose tree is 299 packages and 243 MB for that one file (docs/install.md, decision 0222).
 *
 * The plugin is not `.use()`d on the router: it would also register a spec route derived from the Elysia routes at
 * its `specPath`, and the routes of this app are the contract's operations (getDocs/getDocsAsset), not the plugin's.
 * Its Elysia instance renders the page once; the contract's /docs operation serves that page.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import openapiDocument from '../../generated/openapi.json' with { type: 'json' };

const SCALAR_BUNDLE = 'scalar-standalone.js';
const scalarBundlePath = fileURLToPath(new URL('../../vendor/scalar-api-reference/standalone.js', import.meta.url));

/** The plugin (and Elysia's swagger code with it, ~5 MB) loads with the first /docs request (decision 0192). */
const explorer = async () =>
  (await import('@elysiajs/swagger')).swagger({
    provider: 'scalar',
    path: '/docs',
    // Rendered as a relative URL ("openapi.json"), which /docs resolves to the gateway's own /openapi.json.
    specPath: '/openapi.json',
    scalarCDN: `/docs/assets/${SCALAR_BUNDLE}`,
    documentation: { info: { title: 'Toolgate API explorer', description: 'The Toolgate REST API, from openapi.yaml', version: openapiDocument.info.version } },
    scalarConfig: {
      // Everything that would reach another host: the font CDN, the "open in client" link, the request proxy,
      // telemetry, and the "Ask AI" agent with its document registry.
      withDefaultFonts: false,
      hideClientButton: true,
      proxyUrl: '',
      telemetry: false,
      agent: { disabled: true },
      showDeveloperTools: 'never',
    } as Record<string, unknown>,
  });

/** The only files served under /docs/assets: an allow-list, never a path joined from user input. */
const ASSETS: Record<string, { file: string; type: string }> = {
  [SCALAR_BUNDLE]: { file: scalarBundlePath, type: 'text/javascript; charset=utf-8' },
};

/** The page's inline scripts (the plugin's configuration element) are allowed by hash, never by 'unsafe-inline'. */
function scriptHashes(html: string): string {
  const hashes: string[] = [];
  for (const match of html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)) {
    hashes.push(`'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`);
  }
  return hashes.join(' ');
}

/** Only our own origin: the page must not reach the internet (and cannot be framed). */
function contentSecurityPolicy(html: string): string {
  return `default-src 'self'; img-src 'self' data:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' ${scriptHashes(html)}; connect-src 'self'; frame-ancestors 'none'`;
}

let page: Promise<{ html: string; csp: string }> | null = null;
const cache = new Map<string, Uint8Array<ArrayBuffer>>();

async function renderPage(): Promise<{ html: string; csp: string }> {
  const html = await (await (await explorer()).handle(new Request('http://explorer.local/docs'))).text();
  return { html, csp: contentSecurityPolicy(html) };
}

export async function explorerPage(): Promise<Response> {
  page ??= renderPage();
  const { html, csp } = await page;
  return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp } });
}

export async function explorerAsset(name: string): Promise<Response | null> {
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) return null;
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = new Uint8Array(await readFile(asset.file));
    cache.set(name, bytes);
  }
  return new Response(bytes, { headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=3600' } });
}
