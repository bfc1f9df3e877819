/**
 * The settings console at /console: its page and assets, sign-in (the org's IdP by OIDC code + PKCE, or an OAuth
 * client with org:manage), the session, and /console/rest/*, through which the page's generated REST client reaches
 * /api/* with the session's bearer. A web-standard fetch handler; src/http/router.ts mounts it.
 */
import type { Elysia } from 'elysia';
import type { AppDeps } from '../deps.ts';
import type { Principal } from '../principal.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { hostPolicyFor } from '../net/host-policy.ts';
import { describeError } from '../util/log.ts';
import { CONSOLE_PAGE, consoleAssets } from './assets.ts';
import { authorizationUrl, beginLogin, discover, finishLogin, openLogin, sameSecret, sealLogin, SignInError, LOGIN_TTL_MS } from './oidc.ts';
import { createSession, csrfTokenOf, deleteSession, findSession, type ConsoleSession } from './sessions.ts';
import { forwardSourceAddress, sourceAddressOf } from '../net/source-address.ts';
import { limitedAttempt, refusalMessage, type AttemptRefusal } from '../limits/auth-failures.ts';
import { refusalRow } from '../audit/refusals.ts';
import { countLimitRefusal } from '../observability/metrics.ts';

/** The header every state-changing console request carries (a page of another site cannot set it). */
const CSRF_HEADER = 'x-toolgate-csrf';
/** A console page to come back to after sign-in: a name, never a URL, so it cannot redirect anywhere else. */
const PAGE_NAME = /^[a-z][a-z-]{0,30}$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** No session outlives this, whatever the token's lifetime. */
const MAX_SESSION_MS = 12 * 3600_000;

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

function respond(body: BodyInit | null, status: number, headers: Record<string, string> = {}, cookies: string[] = []): Response {
  const out = new Headers({ ...SECURITY_HEADERS, ...headers });
  for (const cookie of cookies) out.append('set-cookie', cookie);
  return new Response(body, { status, headers: out });
}

const jsonReply = (body: unknown, status = 200, cookies: string[] = []) =>
  respond(JSON.stringify(body), status, { 'content-type': 'application/json' }, cookies);
const errorReply = (status: number, error: string, message: string, cookies: string[] = []) => jsonReply({ error, message }, status, cookies);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A callback refused by the failed-sign-in limits before anything in it was checked. */
class SignInRefused extends Error {
  constructor(readonly refusal: AttemptRefusal) {
    super(refusalMessage(refusal));
  }
}

/** A failed callback with the status its page is answered with. */
class CallbackFailure extends SignInError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** A small page for the sign-in redirects (no script: the CSP allows none inline). */
function messagePage(
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

function cookieOf(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

interface CookieNames {
  session: string;
  login: string;
  /** Attributes shared by both cookies. */
  base: string;
  sessionPath: string;
  loginPath: string;
}

/** Over https the __Host- prefix pins the cookies to this exact host (no Domain, Path=/, Secure). */
function cookieNames(publicUrl: string): CookieNames {
  const secure = publicUrl.startsWith('https:');
  return secure
    ? { session: '__Host-tg_console', login: '__Host-tg_console_login', base: 'HttpOnly; Secure', sessionPath: '/', loginPath: '/' }
    : { session: 'tg_console', login: 'tg_console_login', base: 'HttpOnly', sessionPath: '/console', loginPath: '/console/auth' };
}

function createConsoleHandler(deps: AppDeps, forward: (request: Request) => Promise<Response>): (request: Request) => Promise<Response> {
  const { config, store, box } = deps;
  const names = cookieNames(config.publicUrl);
  const redirectUri = `${config.publicUrl}/console/auth/callback`;
  const sessionCookie = (id: string, expiresAt: Date) =>
    `${names.session}=${id}; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=${Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`;
  const clearSession = `${names.session}=; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=0`;
  // Lax, not Strict: the IdP's redirect back is a cross-site navigation, and the transaction must come along.
  const loginCookie = (sealed: string) => `${names.login}=${sealed}; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=${LOGIN_TTL_MS / 1000}`;
  const clearLogin = `${names.login}=; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=0`;

  /** The principal REST would see for this bearer (same authenticator, same IdP claim rules), or null. */
  async function principalOf(bearer: string): Promise<Principal | null> {
    try {
      return await deps.auth.rest(new Request(`${config.publicUrl}/api/org`, { headers: { authorization: `Bearer ${bearer}` } }));
    } catch {
      return null;
    }
  }

  async function sessionOf(request: Request): Promise<{ id: string; session: ConsoleSession } | null> {
    const id = cookieOf(request, names.session);
    const session = await findSession(store.db, box, id);
    return session && id ? { id, session } : null;
  }

  /** Browsers mark a request a page of another site made; a state-changing console request must come from ours. */
  const crossSite = (request: Request) => {
    const site = request.headers.get('sec-fetch-site');
    return site !== null && site !== 'same-origin' && site !== 'none';
  };

  async function startSession(request: Request, session: ConsoleSession): Promise<string[]> {
    // A new id at every sign-in (no fixation); the previous session of this browser ends.
    await deleteSession(store.db, cookieOf(request, names.session));
    const expiresAt = new Date(Math.min(session.expiresAt.getTime(), Date.now() + MAX_SESSION_MS));
    const id = await createSession(store.db, box, { ...session, expiresAt });
    return [sessionCookie(id, expiresAt)];
  }

  async function signInWithClient(request: Request): Promise<Response> {
    if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
    if ((request.headers.get('content-type') ?? '').split(';')[0]!.trim() !== 'application/json')
      return errorReply(415, 'unsupported_media_type', 'Content-Type must be application/json.');
    let input: { client_id?: unknown; client_secret?: unknown };
    try {
      const text = await request.text();
      if (text.length > 4096) return errorReply(413, 'payload_too_large', 'The body is too large.');
      input = JSON.parse(text) as typeof input;
    } catch {
      return errorReply(400, 'invalid_json', 'The body is not valid JSON.');
    }
    const clientId = typeof input?.client_id === 'string' ? input.client_id.trim() : '';
    const clientSecret = typeof input?.client_secret === 'string' ? input.client_secret.trim() : '';
    if (!clientId || !clientSecret || clientId.length > 200 || clientSecret.length > 500)
      return errorReply(400, 'validation_error', 'Enter the client id and the client secret.');
    // The gateway's own token endpoint, as any OAuth client would call it (same checks, same audit, and the same
    // failed-authentication limits, counted against this browser's address).
    const tokenRequest = new Request(`${new URL(request.url).origin}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', host: request.headers.get('host') ?? new URL(request.url).host },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: 'org:manage' }),
    });
    forwardSourceAddress(request, tokenRequest, config.trustedProxies);
    const tokenResponse = await forward(tokenRequest);
    const token = (await tokenResponse.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error?: string; message?: string };
    if (tokenResponse.status === 429) {
      const retryAfter = tokenResponse.headers.get('retry-after') ?? '1';
      return respond(JSON.stringify({ error: 'rate_limited', message: token.message ?? 'Too many failed sign-in attempts.' }), 429, {
        'content-type': 'application/json',
        'retry-after': retryAfter,
      });
    }
    if (tokenResponse.status !== 200 || !token.access_token) {
      if (token.error === 'invalid_scope')
        return errorReply(403, 'insufficient_scope', 'This OAuth client does not have the org:manage scope, which the console needs.');
      return errorReply(401, 'unauthenticated', 'The client id or secret is wrong, or the client has been revoked.');
    }
    const principal = await principalOf(token.access_token);
    if (!principal) return errorReply(401, 'unauthenticated', 'The issued token was not accepted.');
    const expiresAt = new Date(Date.now() + (token.expires_in ?? 3600) * 1000);
    const cookies = await startSession(request, { orgId: principal.orgId, kind: 'oauth_client', actor: clientId, bearer: token.access_token, expiresAt });
    return jsonReply({ signed_in: true }, 200, cookies);
  }

  async function startIdpSignIn(url: URL): Promise<Response> {
    const slug = url.searchParams.get('org') ?? '';
    const returnTo = url.searchParams.get('return') ?? 'overview';
    if (!SLUG.test(slug)) return messagePage('Sign-in failed', 'Enter the org name (its slug, as in the MCP endpoint URL).', 400);
    const org = await findOrgBySlug(store.db, slug);
    const idp = org ? await findIdpConfig(store.db, org.id) : undefined;
    // The same answer whether the org is unknown or has no console client: nothing to learn about other orgs.
    if (!org || !idp?.consoleClientId)
      return messagePage('Sign-in failed', `The org "${slug}" has no identity provider sign-in for the console. Sign in with an OAuth client instead.`, 404);
    try {
      const discovery = await discover(idp.issuer, deps.outbound);
      const login = beginLogin(org.id, PAGE_NAME.test(returnTo) ? returnTo : 'overview');
      return respond(null, 302, { location: authorizationUrl(discovery, idp.consoleClientId, redirectUri, login) }, [loginCookie(sealLogin(box, login))]);
    } catch (err) {
      if (err instanceof SignInError) return messagePage('Sign-in failed', err.message, 502);
      throw err;
    }
  }

  /**
   * The IdP's redirect back. Every failed callback (a stale transaction, a foreign state, a refused or forged code or
   * ID token) counts against the org and this browser's address, like a wrong client secret (limits/auth-failures.ts).
   */
  async function finishIdpSignIn(request: Request, url: URL): Promise<Response> {
    // The transaction is single-use: its cookie is cleared whatever happens next.
    const login = openLogin(box, cookieOf(request, names.login));
    const subject = { client: `idp:${login?.orgId ?? 'none'}`, address: sourceAddressOf(request, config.trustedProxies) };
    try {
      return await limitedAttempt(
        deps.authFailures,
        subject,
        () => completeIdpSignIn(request, url, login),
        (err) => (err instanceof SignInError ? 'failed' : 'unjudged'),
        async (refusal) => {
          throw new SignInRefused(refusal);
        },
      );
    } catch (err) {
      if (err instanceof SignInRefused) {
        countLimitRefusal('auth_failures');
        if (login) deps.audit.denial(refusalRow(login.orgId, request, 429, 'rate_limited', err.message, null));
        return messagePage('Sign-in refused', err.message, 429, [clearLogin], undefined, { 'retry-after': String(err.refusal.retryAfterSeconds) });
      }
      if (err instanceof SignInError) return messagePage('Sign-in failed', err.message, err instanceof CallbackFailure ? err.status : 401, [clearLogin]);
      throw err;
    }
  }

  async function completeIdpSignIn(request: Request, url: URL, login: ReturnType<typeof openLogin>): Promise<Response> {
    const fail = (message: string): never => {
      throw new CallbackFailure(message, 400);
    };
    if (!login) return fail('This sign-in has expired or was started in another browser. Start again from the console.');
    const state = url.searchParams.get('state') ?? '';
    if (!sameSecret(state, login.state)) return fail('This sign-in answer does not belong to the sign-in this browser started.');
    const idpError = url.searchParams.get('error');
    if (idpError) return fail(`The identity provider refused the sign-in: ${idpError.slice(0, 100)}.`);
    const code = url.searchParams.get('code');
    if (!code) return fail('The identity provider sent no authorization code.');
    const idp = await findIdpConfig(store.db, login.orgId);
    if (!idp?.consoleClientId) return fail('This org no longer has identity provider sign-in for the console.');
    const discovery = await discover(idp.issuer, deps.outbound);
    const signedIn = await finishLogin({ config: idp, discovery, code, redirectUri, login, box, outbound: deps.outbound, verifier: deps.idpVerifier });
    // The console acts on REST with the IdP's access token, so REST must accept it for this user of this org.
    const principal = await principalOf(signedIn.accessToken);
    if (!principal || principal.orgId !== login.orgId || principal.actorId !== signedIn.identity.subject) {
      throw new SignInError(
        `The identity provider's access token is not accepted by the REST interface: it must be a JWT signed by the issuer with the audience "${idp.audience}".`,
      );
    }
    const cookies = await startSession(request, {
      orgId: login.orgId,
      kind: 'idp_user',
      actor: signedIn.identity.subject,
      bearer: signedIn.accessToken,
      expiresAt: signedIn.expiresAt,
    });
    // A page, not a redirect: a SameSite=Strict cookie is not sent on a redirect chain that began at another site.
    return messagePage('Signed in', 'You are signed in.', 200, [...cookies, clearLogin], `/console#/${login.returnTo}`);
  }

  async function sessionInfo(request: Request): Promise<Response> {
    const current = await sessionOf(request);
    if (!current) return errorReply(401, 'unauthenticated', 'Not signed in.', [clearSession]);
    const principal = await principalOf(current.session.bearer);
    if (!principal) {
      await deleteSession(store.db, current.id);
      return errorReply(401, 'unauthenticated', 'The session ended: its credential is no longer accepted. Sign in again.', [clearSession]);
    }
    return jsonReply({
      org_id: principal.orgId,
      kind: current.session.kind,
      actor: principal.kind === 'idp_user' ? (principal.email ?? principal.actorId) : principal.actorId,
      roles: principal.roles,
      org_level: principal.orgLevel,
      csrf_token: csrfTokenOf(current.id),
      expires_at: current.session.expiresAt.toISOString(),
    });
  }

  async function signOut(request: Request): Promise<Response> {
    const current = await sessionOf(request);
    if (current) {
      if (crossSite(request) || !sameSecret(request.headers.get(CSRF_HEADER) ?? '', csrfTokenOf(current.id)))
        return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
      await deleteSession(store.db, current.id);
    }
    return jsonReply({ signed_out: true }, 200, [clearSession]);
  }

  async function proxy(request: Request, url: URL, rest: string): Promise<Response> {
    const current = await sessionOf(request);
    if (!current) return errorReply(401, 'unauthenticated', 'Not signed in, or the session ended. Sign in again.', [clearSession]);
    if (crossSite(request) || !sameSecret(request.headers.get(CSRF_HEADER) ?? '', csrfTokenOf(current.id)))
      return errorReply(403, 'csrf', 'The request lacks the console CSRF token.');
    // Only the REST management interface: never the operator API, the token endpoint or the MCP endpoint.
    if (!rest.startsWith('api/') || rest.includes('..') || rest.includes('//')) return errorReply(404, 'not_found', 'No such route.');
    const headers = new Headers({ authorization: `Bearer ${current.session.bearer}`, host: request.headers.get('host') ?? url.host });
    for (const name of ['content-type', 'accept']) {
      const value = request.headers.get(name);
      if (value) headers.set(name, value);
    }
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
    // The body is streamed on, not read here: the router's own size cap (TOOLGATE_MAX_BODY_BYTES) applies to it.
    const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, body: hasBody ? request.body : null, duplex: 'half' };
    const answer = await forward(new Request(`${url.origin}/${rest}${url.search}`, init));
    const out = new Headers(answer.headers);
    out.set('cache-control', 'no-store');
    return new Response(answer.body, { status: answer.status, headers: out });
  }

  async function serveAsset(name: string): Promise<Response> {
    let assets: Map<string, { body: Uint8Array<ArrayBuffer>; type: string; etag: string }>;
    try {
      assets = await consoleAssets();
    } catch (err) {
      deps.log.error('console bundle unavailable', { error: describeError(err) });
      return errorReply(503, 'console_unavailable', 'The console bundle could not be built on this instance.');
    }
    const found = Object.hasOwn(Object.fromEntries(assets), name) ? assets.get(name) : undefined;
    if (!found) return errorReply(404, 'not_found', 'No such asset.');
    return respond(found.body, 200, { 'content-type': found.type, etag: found.etag, 'cache-control': 'no-cache' });
  }

  return async (request) => {
    const url = new URL(request.url);
    const path = url.pathname;
    // DNS rebinding: a page on a name the attacker controls gets nothing back.
    const hostPolicy = hostPolicyFor(config);
    if (!hostPolicy.hostAllowed(request)) return errorReply(403, 'forbidden_host', 'This gateway does not answer to the host name in the Host header.');
    // A page of another origin (or an opaque one, `Origin: null`) gets nothing, before any session, body or sign-in is
    // looked at: the same check as the MCP endpoint. Navigations and same-origin GETs send no Origin and pass; the
    // CSRF token and Sec-Fetch-Site still apply after it.
    if (!hostPolicy.originAllowed(request.headers.get('origin'))) return errorReply(403, 'forbidden_origin', 'This Origin may not call the console.');
    const method = request.method;
    try {
      if (path.startsWith('/console/rest/')) return await proxy(request, url, path.slice('/console/rest/'.length));
      if (method === 'GET' && (path === '/console' || path === '/console/')) return respond(CONSOLE_PAGE, 200, { 'content-type': 'text/html; charset=utf-8' });
      if (method === 'GET' && path.startsWith('/console/assets/')) return await serveAsset(path.slice('/console/assets/'.length));
      if (method === 'GET' && path === '/console/session') return await sessionInfo(request);
      if (method === 'POST' && path === '/console/auth/client') return await signInWithClient(request);
      if (method === 'GET' && path === '/console/auth/idp') return await startIdpSignIn(url);
      if (method === 'GET' && path === '/console/auth/callback') return await finishIdpSignIn(request, url);
      if (method === 'POST' && path === '/console/auth/logout') return await signOut(request);
      return errorReply(404, 'not_found', 'No such route.');
    } catch (err) {
      deps.log.error('console request failed', { path, error: describeError(err) });
      return errorReply(500, 'internal_error', 'An internal error occurred.');
    }
  };
}

/** Mounts the console on the router's Elysia app; REST calls from the page go back through that same app. */
export function mountConsole(app: Elysia, deps: AppDeps): void {
  const handler = createConsoleHandler(deps, (request) => app.handle(request));
  for (const path of ['/console', '/console/*']) app.all(path, ({ request }) => handler(request), { parse: 'none' } as never);
}
