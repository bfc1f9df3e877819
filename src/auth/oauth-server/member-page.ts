/**
 * A member's sign-in on the org's authorization server (issue 40): the page with e-mail and password (and, when the
 * org offers both, the way to its IdP), and the sealed cookie that carries the checked authorization request and the
 * form's CSRF token from the page to its post. Server-rendered, escaped, no script, as the consent page.
 */
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
 * Decision 0386: with mail, a link to the console's form that mails a reset link (then start again from the client);
 * without, where to get one.
 */
function forgotLine(slug: string, mailConfigured: boolean): string {
  if (!mailConfigured) return '<p class="claim">Forgot your password? An admin of the org gives you a link to set a new one.</p>';
  return `<p><a href="/console#/forgot/${encodeURIComponent(slug)}">Forgot password?</a> A link to set a new one comes by mail; then start again from your client.</p>`;
}

/** The sign-in page; `idpUrl` when the org also offers its IdP; `problem` after a refused attempt. */
export function memberSignInPage(
  tx: MemberSignInTransaction,
  options: { idpUrl: string | null; problem: string | null; email: string; status: number; cookies: string[]; mailConfigured?: boolean },
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
${idp}
${forgotLine(tx.org.slug, options.mailConfigured === true)}
<p class="claim">No account? An admin of the org invites you from the console’s Members page.</p>`;
  return page('Sign in', body, options.status, options.cookies);
}
