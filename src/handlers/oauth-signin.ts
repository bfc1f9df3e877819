/**
 * The person's side of an org's authorization server: the authorization request (to the org's IdP), the IdP's
 * redirect back (to the consent page) and the consent (to the client, with a one-time code and `iss`). Browser state
 * travels in sealed, HttpOnly, SameSite=Lax cookies scoped to the org's /oauth/{orgSlug}/ path.
 */
import { checkAuthorizationRequest, issuerOf, redirectTo, type OrgRef } from '../auth/oauth-server/authorize.ts';
import { CONSENT_COOKIE, grantConsent, narrowScopes, openConsent, openSignIn, SIGN_IN_COOKIE, sealConsent, sealSignIn } from '../auth/oauth-server/consent.ts';
import { consentPage, errorPage } from '../auth/oauth-server/pages.ts';
import { activeConnectors } from '../auth/oauth-server/repository.ts';
import { authorizationUrl, beginLogin, discover, finishLogin, sameSecret, SignInError } from '../auth/idp/oidc-client.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { claimAttributes } from '../auth/idp/identity.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { cookieValue, withCookies } from '../net/cookies.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler } from './context.ts';
import { peopleRoute, startMemberSignIn } from './oauth-member-sign-in.ts';

const NO_IDP =
  "This org has no way to sign people in yet: its admins invite members (the console's Members page) or configure an identity provider with a console client (docs/mcp-sign-in.md). Until then, connect with an API key.";

async function orgRef(deps: AppDeps, slug: string): Promise<(OrgRef & { suspended: boolean }) | null> {
  const org = await findOrgBySlug(deps.store.db, slug);
  return org ? { id: org.id, slug: org.slug, name: org.name, suspended: org.suspendedAt !== null } : null;
}

const SUSPENDED = 'This org is suspended by the gateway operator: no one can sign in to it until it is resumed.';

const callbackUrl = (deps: AppDeps, slug: string) => `${issuerOf(deps.config.publicUrl, slug)}/callback`;

function cookie(deps: AppDeps, slug: string, name: string, value: string, maxAgeSeconds: number): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  return `${name}=${value}; Path=/oauth/${slug}/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

const redirect = (location: string, cookies: string[] = []) =>
  withCookies(new Response(null, { status: 302, headers: { location, 'cache-control': 'no-store' } }), cookies);

export const authorizeMcpClient: Handler = async ({ params, url, deps, request }) => {
  const org = await orgRef(deps, params.orgSlug!);
  if (!org) return errorPage('Sign-in failed', 'No org has this address.', 404);
  if (org.suspended) return errorPage('Sign-in unavailable', SUSPENDED, 403);
  const checked = await checkAuthorizationRequest({ db: deps.store.db, outbound: deps.outbound, publicUrl: deps.config.publicUrl }, org, url.searchParams);
  if (checked.kind === 'page') return errorPage('Sign-in failed', checked.message, checked.status);
  if (checked.kind === 'redirect') return redirect(checked.location);
  // Members (issue 40): the e-mail and password page, unless the org sends people to its IdP.
  const people = await peopleRoute(deps, org.id, url);
  if (people === 'none') return errorPage('Sign-in unavailable', NO_IDP, 403);
  if (people !== 'idp') {
    const address = sourceAddressOf(request, deps.config.trustedProxies);
    return startMemberSignIn(deps, { id: org.id, slug: org.slug, name: org.name }, checked.request, people.idpUrl, address);
  }
  const idp = await findIdpConfig(deps.store.db, org.id);
  if (!idp?.consoleClientId) return errorPage('Sign-in unavailable', NO_IDP, 403);
  try {
    const discovery = await discover(idp.issuer, deps.outbound);
    const login = beginLogin(org.id, 'mcp');
    const sealed = sealSignIn(deps.box, { org: { id: org.id, slug: org.slug, name: org.name }, request: checked.request, login });
    return redirect(authorizationUrl(discovery, idp.consoleClientId, callbackUrl(deps, org.slug), login), [
      cookie(deps, org.slug, SIGN_IN_COOKIE, sealed, 600),
    ]);
  } catch (err) {
    if (err instanceof SignInError) return errorPage('Sign-in failed', err.message, 502);
    throw err;
  }
};

/** The IdP's redirect back: the person is identified, then asked to consent. */
export const finishMcpSignIn: Handler = async ({ request, params, url, deps }) => {
  const org = await orgRef(deps, params.orgSlug!);
  if (!org) return errorPage('Sign-in failed', 'No org has this address.', 404);
  const clear = cookie(deps, org.slug, SIGN_IN_COOKIE, '', 0);
  const tx = openSignIn(deps.box, cookieValue(request, SIGN_IN_COOKIE), org.id);
  if (!tx) return errorPage('Sign-in failed', 'This sign-in has expired or was started in another browser. Start again from your client.', 400, [clear]);
  if (!sameSecret(url.searchParams.get('state') ?? '', tx.login.state)) {
    return errorPage('Sign-in failed', 'This answer does not belong to the sign-in this browser started.', 400, [clear]);
  }
  const issuer = issuerOf(deps.config.publicUrl, org.slug);
  if (url.searchParams.get('error')) {
    return redirect(
      redirectTo(tx.request.redirectUri, { error: 'access_denied', error_description: 'The sign-in was refused.', state: tx.request.state }, issuer),
      [clear],
    );
  }
  const idp = await findIdpConfig(deps.store.db, org.id);
  const code = url.searchParams.get('code');
  if (!idp?.consoleClientId || !code) return errorPage('Sign-in failed', 'The identity provider sent no authorization code.', 400, [clear]);
  try {
    const { store, box, outbound, idpVerifier } = deps;
    const discovery = await discover(idp.issuer, outbound);
    const signedIn = await finishLogin({
      config: idp,
      discovery,
      code,
      redirectUri: callbackUrl(deps, org.slug),
      login: tx.login,
      box,
      outbound,
      verifier: idpVerifier,
    });
    const { identity } = signedIn;
    const person = { subject: identity.subject, email: identity.email, roles: identity.roles, attributes: claimAttributes(identity.claims) };
    const consent = sealConsent(box, { org: tx.org, request: tx.request, person });
    const connectors = await activeConnectors(store.db, org.id);
    return consentPage(consent.tx, consent.csrf, connectors, [clear, cookie(deps, org.slug, CONSENT_COOKIE, consent.sealed, 600)]);
  } catch (err) {
    if (err instanceof SignInError) return errorPage('Sign-in failed', err.message, 401, [clear]);
    throw err;
  }
};

/** A form post from this gateway's own consent page (no other origin, the CSRF token of this browser's consent). */
function crossSite(request: Request, publicUrl: string): boolean {
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return true;
  const origin = request.headers.get('origin');
  return origin !== null && origin !== new URL(publicUrl).origin;
}

export const consentMcpClient: Handler = async ({ request, params, body, deps }) => {
  const form = body as Record<string, string>;
  const org = await orgRef(deps, params.orgSlug!);
  if (!org) return errorPage('Sign-in failed', 'No org has this address.', 404);
  if (crossSite(request, deps.config.publicUrl)) return errorPage('Refused', 'The consent must come from the consent page.', 403);
  if (org.suspended) return errorPage('Sign-in unavailable', SUSPENDED, 403);
  const clear = cookie(deps, org.slug, CONSENT_COOKIE, '', 0);
  const tx = openConsent(deps.box, cookieValue(request, CONSENT_COOKIE), org.id);
  if (!tx || !sameSecret(form.csrf ?? '', tx.csrf)) {
    return errorPage('Sign-in failed', 'This consent has expired or does not belong to this browser. Start again from your client.', 400, [clear]);
  }
  const issuer = issuerOf(deps.config.publicUrl, org.slug);
  const { redirectUri, state } = tx.request;
  const ticked = Object.entries(form)
    .filter(([key]) => key.startsWith('scope_'))
    .map(([, value]) => value);
  const scopes = form.decision === 'allow' ? narrowScopes(tx.request.scopes, ticked) : [];
  if (scopes.length === 0) {
    return redirect(redirectTo(redirectUri, { error: 'access_denied', error_description: 'The person did not allow this client.', state }, issuer), [clear]);
  }
  const code = await grantConsent(deps.store.db, tx, scopes);
  return redirect(redirectTo(redirectUri, { code, state }, issuer), [clear]);
};
