/**
 * Members on the org's authorization server (issue 40): which way a person signs in (members, the IdP, or both: the
 * org's setting when it has an IdP), the e-mail and password page with its passkey button, and their posts, which lead
 * to the same consent page an IdP sign-in leads to. The grant's subject is `member:<id>`; the member is read again on
 * every token use.
 */
import type { AuthorizationRequest, OrgRef } from '../auth/oauth-server/authorize.ts';
import { CONSENT_COOKIE, sealConsent } from '../auth/oauth-server/consent.ts';
import { MEMBER_COOKIE, memberSignInPage, openMemberSignIn, sealMemberSignIn, type MemberSignInTransaction } from '../auth/oauth-server/member-page.ts';
import { consentPage, errorPage } from '../auth/oauth-server/pages.ts';
import { activeConnectors } from '../auth/oauth-server/repository.ts';
import { signInMember, type MemberSignIn } from '../auth/member-sign-in.ts';
import { signInMemberWithPasskey } from '../auth/passkey-sign-in.ts';
import { authenticationOptions, relyingParty } from '../members/passkeys.ts';
import { sameSecret } from '../auth/idp/oidc-client.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { countActiveMembers, peopleSignIn } from '../members/repository.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler } from './context.ts';
import { passkeyDepsOf, takePasskeyOptions } from './passkeys.ts';

function cookie(deps: AppDeps, slug: string, name: string, value: string, maxAgeSeconds: number): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  return `${name}=${value}; Path=/oauth/${slug}/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

function cookieValue(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return null;
}

/** Whether anyone can sign in to the org: an IdP with a console client, or an active member. */
export async function orgCanSignIn(deps: AppDeps, orgId: string): Promise<boolean> {
  const idp = await findIdpConfig(deps.store.db, orgId);
  return Boolean(idp?.consoleClientId) || (await countActiveMembers(deps.store.db, orgId)) > 0;
}

/** How this authorization request signs the person in: at the IdP, with the member page, or not at all (no way yet). */
export async function peopleRoute(deps: AppDeps, orgId: string, url: URL): Promise<'idp' | 'none' | { idpUrl: string | null }> {
  const idp = await findIdpConfig(deps.store.db, orgId);
  if (!idp?.consoleClientId) return (await countActiveMembers(deps.store.db, orgId)) > 0 ? { idpUrl: null } : 'none';
  const mode = await peopleSignIn(deps.store.db, orgId);
  if (mode === 'idp_only' || (mode === 'both' && url.searchParams.get('via') === 'idp')) return 'idp';
  if (mode === 'members_only') return { idpUrl: null };
  const viaIdp = new URL(url);
  viaIdp.searchParams.set('via', 'idp');
  return { idpUrl: `${viaIdp.pathname}${viaIdp.search}` };
}

/** A passkey sign-in's challenge on this page is bound to the org and to this browser's transaction. */
const passkeyBinding = (tx: MemberSignInTransaction) => `mcp:${tx.org.id}:${tx.csrf}`;

/**
 * The member page: fresh passkey options with every rendering (each challenge works once), a few per second from one
 * address (each writes a challenge row: the console's limit, decision 0380); past it the page has no passkey button
 * (the password form works; a reload a second later has it again).
 */
async function memberPage(
  deps: AppDeps,
  tx: MemberSignInTransaction,
  address: string,
  options: { idpUrl: string | null; problem: string | null; email: string; status: number; cookies: string[] },
): Promise<Response> {
  const offered = relyingParty(deps.config.publicUrl) !== null && (await takePasskeyOptions(deps, address)).allowed;
  const passkey = offered ? await authenticationOptions(passkeyDepsOf(deps), passkeyBinding(tx)) : null;
  return memberSignInPage(tx, { ...options, passkey, mailConfigured: deps.mailer !== null });
}

/** The member page for a checked authorization request, with its sealed transaction. */
export function startMemberSignIn(deps: AppDeps, org: OrgRef, request: AuthorizationRequest, idpUrl: string | null, address: string): Promise<Response> {
  const { sealed, tx } = sealMemberSignIn(deps.box, org, request);
  return memberPage(deps, tx, address, { idpUrl, problem: null, email: '', status: 200, cookies: [cookie(deps, org.slug, MEMBER_COOKIE, sealed, 600)] });
}

/** A form post from this gateway's own page (no other origin). */
function crossSite(request: Request, publicUrl: string): boolean {
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return true;
  const origin = request.headers.get('origin');
  return origin !== null && origin !== new URL(publicUrl).origin;
}

type Opened = { kind: 'page'; response: Response } | { kind: 'open'; org: OrgRef; tx: MemberSignInTransaction; clear: string; address: string };

/** The checks both sign-in posts share: the org, our own page, this browser's live transaction and its CSRF token. */
async function openPost(request: Request, slug: string, csrf: string, deps: AppDeps): Promise<Opened> {
  const page = (response: Response) => ({ kind: 'page' as const, response });
  const found = await findOrgBySlug(deps.store.db, slug);
  if (!found) return page(errorPage('Sign-in failed', 'No org has this address.', 404));
  if (crossSite(request, deps.config.publicUrl)) return page(errorPage('Refused', 'The sign-in must come from the sign-in page.', 403));
  const org = { id: found.id, slug: found.slug, name: found.name };
  const clear = cookie(deps, org.slug, MEMBER_COOKIE, '', 0);
  const tx = openMemberSignIn(deps.box, cookieValue(request, MEMBER_COOKIE), org.id);
  if (!tx || !sameSecret(csrf, tx.csrf)) {
    return page(errorPage('Sign-in failed', 'This sign-in has expired or was started in another browser. Start again from your client.', 400, [clear]));
  }
  if (found.suspendedAt) return page(errorPage('Sign-in unavailable', 'This org is suspended by the gateway operator.', 403, [clear]));
  return { kind: 'open', org, tx, clear, address: sourceAddressOf(request, deps.config.trustedProxies) };
}

/** The page again with the refusal, or the consent page for the signed-in member. */
async function afterSignIn(
  deps: AppDeps,
  opened: Extract<Opened, { kind: 'open' }>,
  outcome: MemberSignIn & { passkeyId?: string },
  email: string,
): Promise<Response> {
  const { org, tx, clear } = opened;
  if (outcome.kind !== 'ok') {
    const status = outcome.kind === 'refused' ? 429 : 401;
    const response = await memberPage(deps, tx, opened.address, { idpUrl: null, problem: outcome.message, email: email.slice(0, 320), status, cookies: [] });
    if (outcome.kind === 'refused') response.headers.set('retry-after', String(outcome.retryAfterSeconds));
    return response;
  }
  const { member } = outcome;
  const person = { subject: `member:${member.id}`, email: member.email, roles: member.roles, attributes: member.attributes, passkeyId: outcome.passkeyId };
  const consent = sealConsent(deps.box, { org: tx.org, request: tx.request, person });
  const connectors = await activeConnectors(deps.store.db, org.id);
  return consentPage(consent.tx, consent.csrf, connectors, [clear, cookie(deps, org.slug, CONSENT_COOKIE, consent.sealed, 600)]);
}

export const signInMcpMember: Handler = async ({ request, params, body, deps }) => {
  const form = body as { csrf: string; email: string; password: string };
  const opened = await openPost(request, params.orgSlug!, form.csrf ?? '', deps);
  if (opened.kind === 'page') return opened.response;
  const outcome = await signInMember({ db: deps.store.db, authFailures: deps.authFailures }, opened.org.id, form.email, form.password, opened.address);
  return afterSignIn(deps, opened, outcome, form.email);
};

/** The passkey button's post: the answer to this page's challenge (bound to the org and this transaction). */
export const signInMcpMemberPasskey: Handler = async ({ request, params, body, deps }) => {
  const form = body as { csrf: string; response: string };
  const opened = await openPost(request, params.orgSlug!, form.csrf ?? '', deps);
  if (opened.kind === 'page') return opened.response;
  let response: unknown = null;
  try {
    response = JSON.parse(form.response);
  } catch {}
  const signInDeps = { ...passkeyDepsOf(deps), authFailures: deps.authFailures };
  const outcome = await signInMemberWithPasskey(signInDeps, opened.org.id, response, passkeyBinding(opened.tx), opened.address);
  return afterSignIn(deps, opened, outcome, '');
};
