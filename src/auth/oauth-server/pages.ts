/**
 * The pages of the org's sign-in that a person sees: the consent page and the error page. Server-rendered, every
 * value escaped, no script (but the member page's passkey button, allowed by its hash), framing refused; the client is named by what can be verified (the host of its client_id,
 * where it sends the answer) before what it claims (its name).
 */
import type { ConsentTransaction } from './consent.ts';
import { MCP_SCOPE } from '../credentials.ts';
import { withCookies } from '../../net/cookies.ts';

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the consent form's post.
  'referrer-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
};

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1d2430}
h1{font-size:1.4rem}.who{background:#f3f5f8;border-radius:6px;padding:.75rem 1rem}.claim{color:#5b6472}
label{display:block;margin:.3rem 0}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}code{word-break:break-all}`;

/** A page; `scriptSource` (a CSP hash source) allows the one script the page carries, no other. */
export function page(title: string, body: string, status: number, cookies: string[], scriptSource: string | null = null): Response {
  const headers = scriptSource ? { ...HEADERS, 'content-security-policy': `${HEADERS['content-security-policy']}; script-src ${scriptSource}` } : HEADERS;
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
  return withCookies(new Response(html, { status, headers }), cookies);
}

export function errorPage(title: string, message: string, status: number, cookies: string[] = []): Response {
  return page(title, `<p>${escapeHtml(message)}</p>`, status, cookies);
}

/** Who the client is, verifiable part first: a metadata document's host, or the id the org registered it under. */
function clientLines(tx: ConsentTransaction): string {
  const { client, redirectUri } = tx.request;
  const lines: string[] = [];
  if (client.kind === 'metadata_document') {
    lines.push(`<p>The client at <strong>${escapeHtml(new URL(client.clientId).host)}</strong> (<code>${escapeHtml(client.clientId)}</code>)</p>`);
  } else {
    const how = client.kind === 'registered' ? 'registered itself with this org' : 'was registered by an admin of this org';
    lines.push(`<p>A client that ${how}, id <code>${escapeHtml(client.clientId)}</code></p>`);
  }
  if (client.name) lines.push(`<p class="claim">It calls itself “${escapeHtml(client.name)}” (its own claim).</p>`);
  let target = redirectUri;
  try {
    target = new URL(redirectUri).host || redirectUri;
  } catch {}
  lines.push(`<p>Your answer is sent to <strong>${escapeHtml(target)}</strong>.</p>`);
  return lines.join('\n');
}

function scopeBoxes(tx: ConsentTransaction, connectors: Array<{ id: string; name: string }>): string {
  const asked = tx.request.scopes;
  const everything = asked.includes(MCP_SCOPE);
  const box = (i: number, scope: string, label: string, checked: boolean) =>
    `<label><input type="checkbox" name="scope_${i}" value="${escapeHtml(scope)}"${checked ? ' checked' : ''}> ${label}</label>`;
  const boxes: string[] = [];
  if (everything) boxes.push(box(0, MCP_SCOPE, '<strong>Every connector</strong>: call all tools of the org', true));
  connectors.forEach((c, i) => {
    const scope = `${MCP_SCOPE}:${c.id}`;
    if (everything || asked.includes(scope)) boxes.push(box(i + 1, scope, `Only the tools of <strong>${escapeHtml(c.name)}</strong>`, !everything));
  });
  return boxes.join('\n');
}

/** The consent page: the org, the person, the client, the connectors to allow (untick to narrow), allow or deny. */
export function consentPage(tx: ConsentTransaction, csrf: string, connectors: Array<{ id: string; name: string }>, cookies: string[]): Response {
  const who = tx.person.email ?? tx.person.subject;
  const body = `<p>Signed in to <strong>${escapeHtml(tx.org.name)}</strong> (<code>${escapeHtml(tx.org.slug)}</code>) as <strong>${escapeHtml(who)}</strong>.</p>
<div class="who">${clientLines(tx)}</div>
<p>wants to call tools on your behalf. Allow:</p>
<form method="post" action="/oauth/${escapeHtml(tx.org.slug)}/consent">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">
${scopeBoxes(tx, connectors)}
<p><button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></p>
</form>`;
  return page('Allow this client to use your tools?', body, 200, cookies);
}
