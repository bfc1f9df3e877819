/** The console's answers: every one carries the console's security headers (a strict CSP, no framing, no caching). */

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

export function respond(body: BodyInit | null, status: number, headers: Record<string, string> = {}, cookies: string[] = []): Response {
  const out = new Headers({ ...SECURITY_HEADERS, ...headers });
  for (const cookie of cookies) out.append('set-cookie', cookie);
  return new Response(body, { status, headers: out });
}

export const jsonReply = (body: unknown, status = 200, cookies: string[] = []) =>
  respond(JSON.stringify(body), status, { 'content-type': 'application/json' }, cookies);

export const errorReply = (status: number, error: string, message: string, cookies: string[] = []) => jsonReply({ error, message }, status, cookies);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small page for the sign-in redirects (no script: the CSP allows none inline). */
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
  return respond(html, status, { 'content-type': 'text/html; charset=utf-8', ...headers }, cookies);
}
