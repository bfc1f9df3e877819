/** The /docs explorer: Swagger UI served from the gateway's own files, so it renders with no internet. */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const distDir = dirname(require.resolve('swagger-ui-dist/package.json'));

/** The only files served under /docs/assets: an allow-list, never a path joined from user input. */
const ASSETS: Record<string, { file: string | null; type: string }> = {
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: 'favicon-32x32.png', type: 'image/png' },
  'init.js': { file: null, type: 'text/javascript; charset=utf-8' },
};

const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#explorer',
    deepLinking: true,
    tryItOutEnabled: true,
    persistAuthorization: false,
    validatorUrl: null
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Toolgate API explorer</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="explorer"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>
`;

/** Only our own origin: the page must not reach the internet (and cannot be framed). */
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

const cache = new Map<string, Uint8Array<ArrayBuffer>>();

export function explorerPage(): Response {
  return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP } });
}

export async function explorerAsset(name: string): Promise<Response | null> {
  const asset = ASSETS[name];
  if (!asset) return null;
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = asset.file ? new Uint8Array(await readFile(join(distDir, asset.file))) : new TextEncoder().encode(INIT_SCRIPT);
    cache.set(name, bytes);
  }
  return new Response(bytes, { headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=3600' } });
}
