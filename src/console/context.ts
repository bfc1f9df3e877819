/**
 * What the console's operations share: the parts of the container they use, the cookies (names and attributes per
 * the public URL's scheme, read and written by net/cookies.ts), the session of a request and the session as a
 * credential of /api/* and /mcp/* (decisions 0317, 0335).
 */
import { createHash } from 'node:crypto';
import type { Authenticator } from '../auth/authenticate.ts';
import type { IdpVerifier } from '../auth/idp/verifier.ts';
import type { LimitedTokenDeps } from '../auth/tokens.ts';
import type { Config } from '../config.ts';
import type { Principal } from '../principal.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import type { Logger } from '../util/log.ts';
import type { OutboundPolicy } from '../net/outbound.ts';
import { AppError, json, unauthenticated } from '../errors.ts';
import { cookieValue, withCookies } from '../net/cookies.ts';
import { hostPolicyFor } from '../net/host-policy.ts';
import { LOGIN_TTL_MS, sameSecret } from '../auth/idp/oidc-client.ts';
import { createSession, csrfTokenOf, deleteSession, findSession, type ConsoleSession } from './sessions.ts';

/** The parts of the container the console uses (the gateway's container has them all). */
export interface ConsoleDeps extends LimitedTokenDeps {
  config: Config;
  store: Store;
  box: SecretBox;
  auth: Authenticator;
  outbound: OutboundPolicy;
  idpVerifier: IdpVerifier;
  log: Logger;
}

/** The console's JSON answers: the pipeline's `json`, with the cookies they set (the console's door adds its headers). */
export const jsonReply = (body: unknown, status = 200, cookies: string[] = []) => withCookies(json(body, status), cookies);

export const errorReply = (status: number, error: string, message: string, cookies: string[] = []) => jsonReply({ error, message }, status, cookies);

/** A passkey sign-in's binding cookie lasts as long as its challenge is accepted. */
const PASSKEY_COOKIE_SECONDS = 300;

/** No session outlives this, whatever the token's lifetime. */
const MAX_SESSION_MS = 12 * 3600_000;

export interface ConsoleContext {
  deps: ConsoleDeps;
  redirectUri: string;
  /** The value of a cookie of the request, or null. */
  cookieOf(request: Request, which: 'session' | 'login' | 'passkey'): string | null;
  clearSession: string;
  loginCookie(sealed: string): string;
  clearLogin: string;
  /** The random value a passkey sign-in's challenge is bound to: this browser only (decision 0380). */
  passkeyCookie(value: string): string;
  clearPasskey: string;
  /** The principal REST sees for this bearer (the same authenticator, the same IdP claim rules), or null. */
  principalOf(bearer: string): Promise<Principal | null>;
  sessionOf(request: Request): Promise<{ id: string; session: ConsoleSession } | null>;
  /** A new session for this browser (its previous one ends); returns the cookies that carry it. */
  startSession(request: Request, session: ConsoleSession): Promise<string[]>;
}

/** Over https the __Host- prefix pins the cookies to this exact host (no Domain, Path=/, Secure). */
function cookieNames(publicUrl: string) {
  const secure = publicUrl.startsWith('https:');
  return secure
    ? {
        session: '__Host-tg_console',
        login: '__Host-tg_console_login',
        passkey: '__Host-tg_console_passkey',
        base: 'HttpOnly; Secure',
        sessionPath: '/',
        loginPath: '/',
      }
    : { session: 'tg_console', login: 'tg_console_login', passkey: 'tg_console_passkey', base: 'HttpOnly', sessionPath: '/', loginPath: '/console/auth' };
}

export function consoleContext(deps: ConsoleDeps): ConsoleContext {
  const { config, store, box } = deps;
  const names = cookieNames(config.publicUrl);
  const cookieOf = (request: Request, which: 'session' | 'login' | 'passkey') => cookieValue(request, names[which]);
  const sessionCookie = (id: string, expiresAt: Date) =>
    `${names.session}=${id}; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=${Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`;
  return {
    deps,
    redirectUri: `${config.publicUrl}/console/auth/callback`,
    cookieOf,
    clearSession: `${names.session}=; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=0`,
    // Lax, not Strict: the IdP's redirect back is a cross-site navigation, and the transaction must come along.
    loginCookie: (sealed) => `${names.login}=${sealed}; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=${LOGIN_TTL_MS / 1000}`,
    clearLogin: `${names.login}=; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=0`,
    passkeyCookie: (value) => `${names.passkey}=${value}; Path=${names.loginPath}; ${names.base}; SameSite=Strict; Max-Age=${PASSKEY_COOKIE_SECONDS}`,
    clearPasskey: `${names.passkey}=; Path=${names.loginPath}; ${names.base}; SameSite=Strict; Max-Age=0`,
    principalOf: (bearer) => deps.auth.restToken(bearer).catch(() => null),
    sessionOf: (request) => sessionOf(deps, request),
    async startSession(request, session) {
      // A new id at every sign-in (no fixation); the previous session of this browser ends.
      await deleteSession(store.db, cookieOf(request, 'session'));
      const expiresAt = new Date(Math.min(session.expiresAt.getTime(), Date.now() + MAX_SESSION_MS));
      const id = await createSession(store.db, box, { ...session, expiresAt });
      return [sessionCookie(id, expiresAt)];
    },
  };
}

/** Browsers mark a request a page of another site made; a state-changing console request must come from ours. */
export function crossSite(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site');
  return site !== null && site !== 'same-origin' && site !== 'none';
}

/** A request of another site, or one without the session's CSRF token (a header another site's page cannot set). */
export const lacksCsrf = (request: Request, sessionId: string) =>
  crossSite(request) || !sameSecret(request.headers.get('x-toolgate-csrf') ?? '', csrfTokenOf(sessionId));

async function sessionOf(deps: ConsoleDeps, request: Request): Promise<{ id: string; session: ConsoleSession } | null> {
  const id = cookieValue(request, cookieNames(deps.config.publicUrl).session);
  const session = await findSession(deps.store.db, deps.box, id);
  return session && id ? { id, session } : null;
}

/** Whether the credential is the console session: its cookie and no Authorization header (a bearer always wins). */
export function fromSession(request: Request, deps: ConsoleDeps): boolean {
  return !request.headers.has('authorization') && cookieValue(request, cookieNames(deps.config.publicUrl).session) !== null;
}

/**
 * The session's bearer, once the request shows what the session credential must (decisions 0317, 0335): our own
 * Origin, a live session, its CSRF token, a page of this site. The bearer itself never leaves the server.
 */
export async function sessionBearer(request: Request, deps: ConsoleDeps): Promise<string> {
  if (!hostPolicyFor(deps.config).originAllowed(request.headers.get('origin'))) {
    throw new AppError(403, 'forbidden_origin', 'This Origin may not call the gateway with the console session.');
  }
  const current = await sessionOf(deps, request);
  if (!current) throw unauthenticated('Not signed in, or the console session ended. Sign in again.');
  if (lacksCsrf(request, current.id)) throw new AppError(403, 'csrf', 'The request lacks the console CSRF token.');
  return current.session.bearer;
}

/** The session's principal on /api/*: its bearer authenticated as REST authenticates any. */
export const sessionPrincipal = async (request: Request, deps: ConsoleDeps): Promise<Principal> => deps.auth.restToken(await sessionBearer(request, deps));

/**
 * A session's answer: never cached; a JSON 200 to a GET gets a strong ETag, and 304 when If-None-Match names it (the
 * pending-approvals badge polls so). Downloads (Content-Disposition) are streamed on as they are.
 */
export async function sessionAnswer(request: Request, answer: Response): Promise<Response> {
  const headers = new Headers(answer.headers);
  headers.set('cache-control', 'no-store');
  if (request.method !== 'GET' || answer.status !== 200 || headers.has('content-disposition')) {
    return new Response(answer.body, { status: answer.status, headers });
  }
  const body = new Uint8Array(await answer.arrayBuffer());
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  headers.set('etag', etag);
  if (request.headers.get('if-none-match') === etag) {
    headers.delete('content-type');
    headers.delete('content-length');
    return new Response(null, { status: 304, headers });
  }
  return new Response(body, { status: 200, headers });
}
