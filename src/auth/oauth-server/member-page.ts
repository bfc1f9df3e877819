/**
 * A member's sign-in on the org's authorization server (issue 40): the page with e-mail and password, a passkey
 * button (and, when the org offers both, the way to its IdP), and the sealed cookie that carries the checked
 * authorization request and the forms' CSRF token from the page to its posts. Server-rendered and escaped, as the
 * consent page; its one script is the passkey button's, fixed text allowed by its hash in the page's CSP, which reads
 * the ceremony's options from a JSON data block and posts the passkey's answer as a form field.
 */
import { createHash } from 'node:crypto';
import { randomSecret, type SecretBox } from '../../util/crypto.ts';
import type { AuthorizationRequest, OrgRef } from './authorize.ts';
import { escapeHtml, page } from './pages.ts';

export interface MemberSignInTransaction {
  org: OrgRef;
  request: AuthorizationRequest;
  csrf: string;
  expiresAt: number;
}

export const MEMBER_COOKIE = 'tg_mcp_member';
const TTL_MS = 10 * 60_000;
const MAX_SEALED = 8000;

export function sealMemberSignIn(box: SecretBox, org: OrgRef, request: AuthorizationRequest): { sealed: string; tx: MemberSignInTransaction } {
  const tx = { org, request, csrf: randomSecret(24), expiresAt: Date.now() + TTL_MS };
  return { sealed: box.encrypt(JSON.stringify(tx), 'mcp_member'), tx };
}

export function openMemberSignIn(box: SecretBox, sealed: string | null, orgId: string): MemberSignInTransaction | null {
  if (!sealed || sealed.length > MAX_SEALED) return null;
  try {
    const tx = JSON.parse(box.decrypt(sealed, 'mcp_member')) as MemberSignInTransaction;
    return tx.expiresAt > Date.now() && tx.org.id === orgId ? tx : null;
  } catch {
    return null;
  }
}

/**
 * The passkey button's script (no backslash in it: this is a template literal): WebAuthn's get() with the options of the JSON block (base64url fields decoded), the
 * answer encoded back (as @simplewebauthn/server reads it) into the passkey form, which it submits.
 */
const PASSKEY_SCRIPT = `(() => {
  const button = document.getElementById('passkey');
  const form = document.getElementById('passkey-form');
  const status = document.getElementById('passkey-status');
  if (!button || !form) return;
  if (!window.PublicKeyCredential || !navigator.credentials) { button.disabled = true; status.textContent = 'This browser has no passkeys.'; return; }
  const bytes = (s) => Uint8Array.from(atob(s.replaceAll('-', '+').replaceAll('_', '/') + '='.repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0));
  const text = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
  button.addEventListener('click', async () => {
    const o = JSON.parse(document.getElementById('passkey-options').textContent);
    button.disabled = true;
    status.textContent = 'Waiting for your passkey…';
    try {
      const c = await navigator.credentials.get({ publicKey: { challenge: bytes(o.challenge), rpId: o.rpId, timeout: o.timeout, userVerification: o.userVerification, allowCredentials: [] } });
      const r = c.response;
      form.elements.response.value = JSON.stringify({
        id: c.id, rawId: text(c.rawId), type: c.type, clientExtensionResults: c.getClientExtensionResults(),
        authenticatorAttachment: c.authenticatorAttachment || undefined,
        response: { clientDataJSON: text(r.clientDataJSON), authenticatorData: text(r.authenticatorData), signature: text(r.signature), userHandle: r.userHandle ? text(r.userHandle) : undefined },
      });
      form.submit();
    } catch (e) {
      button.disabled = false;
      status.textContent = 'The passkey sign-in was cancelled or failed. Try again, or use your password.';
    }
  });
})();`;

/** The CSP source that allows exactly the passkey script. */
const PASSKEY_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(PASSKEY_SCRIPT).digest('base64')}'`;

/** JSON inside a <script type="application/json"> block: no `<` can close it. */
const jsonBlock = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

function passkeySection(tx: MemberSignInTransaction, options: unknown): string {
  return `<form id="passkey-form" method="post" action="/oauth/${escapeHtml(tx.org.slug)}/passkey">
<input type="hidden" name="csrf" value="${escapeHtml(tx.csrf)}"><input type="hidden" name="response" value="">
<p><button type="button" id="passkey">Sign in with a passkey</button> <span id="passkey-status" role="status"></span></p>
</form>
<script type="application/json" id="passkey-options">${jsonBlock(options)}</script>
<script>${PASSKEY_SCRIPT}</script>`;
}

/**
 * Decision 0386: with mail, a link to the console's form that mails a reset link (then start again from the client);
 * without, where to get one.
 */
function forgotLine(slug: string, mailConfigured: boolean): string {
  if (!mailConfigured) return '<p class="claim">Forgot your password? An admin of the org gives you a link to set a new one.</p>';
  return `<p><a href="/console#/forgot/${encodeURIComponent(slug)}">Forgot password?</a> A link to set a new one comes by mail; then start again from your client.</p>`;
}

/**
 * The sign-in page; `idpUrl` when the org also offers its IdP; `problem` after a refused attempt; `passkey` the options
 * of a passkey sign-in bound to this transaction (null where the gateway cannot offer passkeys).
 */
export function memberSignInPage(
  tx: MemberSignInTransaction,
  options: {
    idpUrl: string | null;
    problem: string | null;
    email: string;
    status: number;
    cookies: string[];
    passkey: unknown | null;
    mailConfigured?: boolean;
  },
): Response {
  const problem = options.problem ? `<p role="alert" class="claim"><strong>${escapeHtml(options.problem)}</strong></p>` : '';
  const idp = options.idpUrl ? `<p>Or <a href="${escapeHtml(options.idpUrl)}">sign in with your organisation’s identity provider</a>.</p>` : '';
  const body = `<p>Sign in to <strong>${escapeHtml(tx.org.name)}</strong> (<code>${escapeHtml(tx.org.slug)}</code>) to let an MCP client use its tools.</p>
${problem}
<form method="post" action="/oauth/${escapeHtml(tx.org.slug)}/sign-in">
<input type="hidden" name="csrf" value="${escapeHtml(tx.csrf)}">
<label for="email">E-mail</label><input id="email" name="email" type="email" required maxlength="320" autocomplete="username" value="${escapeHtml(options.email)}">
<label for="password">Password</label><input id="password" name="password" type="password" required maxlength="256" autocomplete="current-password">
<p><button type="submit">Sign in</button></p>
</form>
${options.passkey ? passkeySection(tx, options.passkey) : ''}
${idp}
${forgotLine(tx.org.slug, options.mailConfigured === true)}
<p class="claim">No account? An admin of the org invites you from the console’s Members page.</p>`;
  return page('Sign in', body, options.status, options.cookies, options.passkey ? PASSKEY_SCRIPT_SOURCE : null);
}
