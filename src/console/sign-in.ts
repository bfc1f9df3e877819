/**
 * The console's sign-in routes: an OAuth client with org:manage (a token from the gateway's token service), or the
 * org's IdP by OIDC code + PKCE (start, and the IdP's redirect back).
 */
import { AppError, OAuthError } from '../errors.ts';
import { issueClientTokenLimited } from '../auth/tokens.ts';
import { findIdpConfig } from '../auth/idp/repository.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { withCookies } from '../net/cookies.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { limitedAttempt, refusalMessage, type AttemptRefusal } from '../limits/auth-failures.ts';
import { Refusal } from '../audit/refusals.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import { authorizationUrl, beginLogin, discover, finishLogin, openLogin, sameSecret, sealLogin, SignInError } from '../auth/idp/oidc-client.ts';
import { crossSite, errorReply, jsonReply, type ConsoleContext } from './context.ts';
import { messagePage } from './assets.ts';

/** A console page to come back to after sign-in: a name, never a URL, so it cannot redirect anywhere else. */
const PAGE_NAME = /^[a-z][a-z-]{0,30}$/;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

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

/** The sign-in form's body, as the contract declares it (the pipeline read and checked it). */
export type ClientInput = { client_id?: string; client_secret?: string };

/**
 * A token for the client from the token service, as the token endpoint issues it (the same checks, audit and
 * failed-sign-in limits, counted against this browser's address); `null` for a wrong or revoked client, `'scope'`
 * when the client lacks a scope asked for. A refusal by the limits is the pipeline's to audit and answer, as JSON
 * (the token endpoint words it in RFC 6749's form).
 */
async function clientToken(ctx: ConsoleContext, request: Request, clientId: string, clientSecret: string, scope: string) {
  const address = sourceAddressOf(request, ctx.deps.config.trustedProxies);
  try {
    const issued = await issueClientTokenLimited(ctx.deps, { clientId, clientSecret, scope, basic: false }, address);
    ctx.deps.auth.clientUsed(clientId);
    return issued;
  } catch (err) {
    if (err instanceof Refusal) {
      const retryAfter = err.error.headers?.['retry-after'] ?? '1';
      throw new Refusal(new AppError(429, 'rate_limited', err.error.message, { 'retry-after': retryAfter }), err.orgId, null);
    }
    if (err instanceof OAuthError) return err.code === 'invalid_scope' ? ('scope' as const) : null;
    throw err;
  }
}

export async function signInWithClient(ctx: ConsoleContext, request: Request, input: ClientInput): Promise<Response> {
  if (crossSite(request)) return errorReply(403, 'cross_site', 'Sign-in must come from the console page.');
  const clientId = input.client_id?.trim() ?? '';
  const clientSecret = input.client_secret?.trim() ?? '';
  if (!clientId || !clientSecret) return errorReply(400, 'validation_error', 'Enter the client id and the client secret.');
  // With mcp:call too when the client has it, so the tool playground can call tools as this client; else the console's
  // own scope alone (a refused scope comes after the secret was found right: it is no failed sign-in).
  let issued = await clientToken(ctx, request, clientId, clientSecret, 'org:manage mcp:call');
  if (issued === 'scope') issued = await clientToken(ctx, request, clientId, clientSecret, 'org:manage');
  if (issued === 'scope') return errorReply(403, 'insufficient_scope', 'This OAuth client does not have the org:manage scope, which the console needs.');
  if (!issued) return errorReply(401, 'unauthenticated', 'The client id or secret is wrong, or the client has been revoked.');
  const principal = await ctx.principalOf(issued.accessToken);
  if (!principal) return errorReply(401, 'unauthenticated', 'The issued token was not accepted.');
  const expiresAt = new Date(Date.now() + issued.ttlSeconds * 1000);
  const cookies = await ctx.startSession(request, { orgId: principal.orgId, kind: 'oauth_client', actor: clientId, bearer: issued.accessToken, expiresAt });
  return jsonReply({ signed_in: true }, 200, cookies);
}

export async function startIdpSignIn(ctx: ConsoleContext, url: URL): Promise<Response> {
  const { store, box, outbound } = ctx.deps;
  const slug = url.searchParams.get('org') ?? '';
  const returnTo = url.searchParams.get('return') ?? 'overview';
  if (!SLUG.test(slug)) return messagePage('Sign-in failed', 'Enter the org name (its slug, as in the MCP endpoint URL).', 400);
  const org = await findOrgBySlug(store.db, slug);
  const idp = org ? await findIdpConfig(store.db, org.id) : undefined;
  // The same answer whether the org is unknown or has no console client: nothing to learn about other orgs.
  if (!org || !idp?.consoleClientId)
    return messagePage('Sign-in failed', `The org "${slug}" has no identity provider sign-in for the console. Sign in with an OAuth client instead.`, 404);
  try {
    const discovery = await discover(idp.issuer, outbound);
    const login = beginLogin(org.id, PAGE_NAME.test(returnTo) ? returnTo : 'overview');
    const location = authorizationUrl(discovery, idp.consoleClientId, ctx.redirectUri, login);
    return withCookies(new Response(null, { status: 302, headers: { location } }), [ctx.loginCookie(sealLogin(box, login))]);
  } catch (err) {
    if (err instanceof SignInError) return messagePage('Sign-in failed', err.message, 502);
    throw err;
  }
}

/**
 * The IdP's redirect back. Every failed callback (a stale transaction, a foreign state, a refused or forged code or
 * ID token) counts against the org and this browser's address, like a wrong client secret (limits/auth-failures.ts).
 * A refused callback is a Refusal: the pipeline audits it in the org of the transaction, when there is one.
 */
export async function finishIdpSignIn(ctx: ConsoleContext, request: Request, url: URL): Promise<Response> {
  const { deps, clearLogin } = ctx;
  // The transaction is single-use: its cookie is cleared whatever happens next.
  const login = openLogin(deps.box, ctx.cookieOf(request, 'login'));
  const subject = { client: `idp:${login?.orgId ?? 'none'}`, address: sourceAddressOf(request, deps.config.trustedProxies) };
  try {
    return await limitedAttempt(
      deps.authFailures,
      subject,
      () => completeIdpSignIn(ctx, request, url, login),
      (err) => (err instanceof SignInError ? 'failed' : 'unjudged'),
      async (refusal) => {
        throw new SignInRefused(refusal);
      },
    );
  } catch (err) {
    if (err instanceof SignInRefused) {
      countLimitRefusal('auth_failures');
      const retryAfter = { 'retry-after': String(err.refusal.retryAfterSeconds) };
      const page = messagePage('Sign-in refused', err.message, 429, [clearLogin], undefined, retryAfter);
      throw new Refusal(new AppError(429, 'rate_limited', err.message, retryAfter), login?.orgId ?? null, null, page);
    }
    if (err instanceof SignInError) return messagePage('Sign-in failed', err.message, err instanceof CallbackFailure ? err.status : 401, [clearLogin]);
    throw err;
  }
}

async function completeIdpSignIn(ctx: ConsoleContext, request: Request, url: URL, login: ReturnType<typeof openLogin>): Promise<Response> {
  const { store, box, outbound, idpVerifier } = ctx.deps;
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
  const discovery = await discover(idp.issuer, outbound);
  const signedIn = await finishLogin({ config: idp, discovery, code, redirectUri: ctx.redirectUri, login, box, outbound, verifier: idpVerifier });
  // The console acts on REST with the IdP's access token, so REST must accept it for this user of this org.
  const principal = await ctx.principalOf(signedIn.accessToken);
  if (!principal || principal.orgId !== login.orgId || principal.actorId !== signedIn.identity.subject) {
    throw new SignInError(
      `The identity provider's access token is not accepted by the REST interface: it must be a JWT signed by the issuer with the audience "${idp.audience}".`,
    );
  }
  const cookies = await ctx.startSession(request, {
    orgId: login.orgId,
    kind: 'idp_user',
    actor: signedIn.identity.subject,
    bearer: signedIn.accessToken,
    expiresAt: signedIn.expiresAt,
  });
  // A page, not a redirect: a SameSite=Strict cookie is not sent on a redirect chain that began at another site.
  return messagePage('Signed in', 'You are signed in.', 200, [...cookies, ctx.clearLogin], `/console#/${login.returnTo}`);
}
