/**
 * What every console route group shares: the deps, the cookies (names and attributes per the public URL's scheme),
 * the session of a request, and the app itself, through which sign-in and the page's REST calls go.
 */
import type { AppDeps } from '../deps.ts';
import type { Principal } from '../principal.ts';
import { LOGIN_TTL_MS } from '../auth/idp/oidc-client.ts';
import { createSession, deleteSession, findSession, type ConsoleSession } from './sessions.ts';

/** No session outlives this, whatever the token's lifetime. */
const MAX_SESSION_MS = 12 * 3600_000;

export interface ConsoleContext {
  deps: AppDeps;
  /** The app's own fetch handler: sign-in calls its token endpoint, the page's REST calls reach /api/* through it. */
  forward: (request: Request) => Promise<Response>;
  redirectUri: string;
  /** The value of a cookie of the request, or null. */
  cookieOf(request: Request, which: 'session' | 'login'): string | null;
  clearSession: string;
  loginCookie(sealed: string): string;
  clearLogin: string;
  /** The principal REST would see for this bearer (same authenticator, same IdP claim rules), or null. */
  principalOf(bearer: string): Promise<Principal | null>;
  sessionOf(request: Request): Promise<{ id: string; session: ConsoleSession } | null>;
  /** A new session for this browser (its previous one ends); returns the cookies that carry it. */
  startSession(request: Request, session: ConsoleSession): Promise<string[]>;
}

function cookieValue(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

/** Over https the __Host- prefix pins the cookies to this exact host (no Domain, Path=/, Secure). */
function cookieNames(publicUrl: string) {
  const secure = publicUrl.startsWith('https:');
  return secure
    ? { session: '__Host-tg_console', login: '__Host-tg_console_login', base: 'HttpOnly; Secure', sessionPath: '/', loginPath: '/' }
    : { session: 'tg_console', login: 'tg_console_login', base: 'HttpOnly', sessionPath: '/console', loginPath: '/console/auth' };
}

export function consoleContext(deps: AppDeps, forward: (request: Request) => Promise<Response>): ConsoleContext {
  const { config, store, box } = deps;
  const names = cookieNames(config.publicUrl);
  const cookieOf = (request: Request, which: 'session' | 'login') => cookieValue(request, names[which]);
  const sessionCookie = (id: string, expiresAt: Date) =>
    `${names.session}=${id}; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=${Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`;
  return {
    deps,
    forward,
    redirectUri: `${config.publicUrl}/console/auth/callback`,
    cookieOf,
    clearSession: `${names.session}=; Path=${names.sessionPath}; ${names.base}; SameSite=Strict; Max-Age=0`,
    // Lax, not Strict: the IdP's redirect back is a cross-site navigation, and the transaction must come along.
    loginCookie: (sealed) => `${names.login}=${sealed}; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=${LOGIN_TTL_MS / 1000}`,
    clearLogin: `${names.login}=; Path=${names.loginPath}; ${names.base}; SameSite=Lax; Max-Age=0`,
    async principalOf(bearer) {
      try {
        return await deps.auth.rest(new Request(`${config.publicUrl}/api/org`, { headers: { authorization: `Bearer ${bearer}` } }));
      } catch {
        return null;
      }
    },
    async sessionOf(request) {
      const id = cookieOf(request, 'session');
      const session = await findSession(store.db, box, id);
      return session && id ? { id, session } : null;
    },
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
