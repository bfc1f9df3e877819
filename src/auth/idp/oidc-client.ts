/**
 * The console as an OpenID Connect relying party of an org's IdP: discovery, the authorization request (code flow,
 * PKCE S256, state, nonce), the code exchange and the ID token check. Every server-side request to the IdP goes
 * through the outbound policy (safeFetch: https unless allow-listed, no private ranges, no redirects, capped).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { IdpConfigRow } from './repository.ts';
import { toVerifierConfig } from './resolver.ts';
import { consoleSecretContext } from './service.ts';
import type { IdpVerifier } from './verifier.ts';
import type { IdpIdentity } from './identity.ts';
import { safeFetch, type OutboundPolicy } from '../../net/outbound.ts';
import { randomSecret, type SecretBox } from '../../util/crypto.ts';

/** A sign-in that the user cannot fix by retrying the same way; the message is shown on the page as is. */
export class SignInError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SignInError';
  }
}

export interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
}

/** What the browser carries between the redirect to the IdP and the callback (sealed in a short-lived cookie). */
export interface LoginTransaction {
  orgId: string;
  state: string;
  nonce: string;
  verifier: string;
  /** A console page name (validated against a pattern), never a URL. */
  returnTo: string;
  expiresAt: number;
}

const FETCH = { requireHttps: true, timeoutMs: 5_000, maxBytes: 256 * 1024 };
export const LOGIN_TTL_MS = 10 * 60_000;

export async function discover(issuer: string, outbound: OutboundPolicy): Promise<Discovery> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let document: Partial<Discovery>;
  try {
    const response = await safeFetch(url, { headers: { accept: 'application/json' } }, outbound, FETCH);
    if (!response.ok) throw new Error(`status ${response.status}`);
    document = (await response.json()) as Partial<Discovery>;
  } catch (err) {
    throw new SignInError(`The identity provider's discovery document could not be read (${err instanceof Error ? err.message : 'error'}).`);
  }
  // OpenID Connect Discovery 1.0 §4.3: the document's issuer must be exactly the configured one.
  if (document.issuer !== issuer) throw new SignInError("The identity provider's discovery document names another issuer.");
  for (const key of ['authorization_endpoint', 'token_endpoint'] as const) {
    const value = document[key];
    let parsed: URL | null = null;
    try {
      parsed = typeof value === 'string' ? new URL(value) : null;
    } catch {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
      throw new SignInError(`The identity provider's ${key} is missing or not a web address.`);
  }
  return document as Discovery;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export function beginLogin(orgId: string, returnTo: string): LoginTransaction {
  return { orgId, state: randomSecret(24), nonce: randomSecret(24), verifier: randomSecret(48), returnTo, expiresAt: Date.now() + LOGIN_TTL_MS };
}

export function authorizationUrl(discovery: Discovery, clientId: string, redirectUri: string, login: LoginTransaction): string {
  const url = new URL(discovery.authorization_endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('scope', 'openid email profile');
  url.searchParams.set('state', login.state);
  url.searchParams.set('nonce', login.nonce);
  url.searchParams.set('code_challenge', s256(login.verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return url.href;
}

export function sealLogin(box: SecretBox, login: LoginTransaction): string {
  return box.encrypt(JSON.stringify(login), 'console_login');
}

export function openLogin(box: SecretBox, sealed: string | null): LoginTransaction | null {
  if (!sealed || sealed.length > 2000) return null;
  try {
    const login = JSON.parse(box.decrypt(sealed, 'console_login')) as LoginTransaction;
    return login.expiresAt > Date.now() ? login : null;
  } catch {
    return null;
  }
}

export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface SignedIn {
  identity: IdpIdentity;
  accessToken: string;
  /** The earliest of the ID token's and the access token's expiry. */
  expiresAt: Date;
}

/** Exchanges the code (with the PKCE verifier) and checks the ID token: signature, issuer, audience, expiry, nonce. */
export async function finishLogin(input: {
  config: IdpConfigRow;
  discovery: Discovery;
  code: string;
  redirectUri: string;
  login: LoginTransaction;
  box: SecretBox;
  outbound: OutboundPolicy;
  verifier: IdpVerifier;
}): Promise<SignedIn> {
  const { config, login } = input;
  const clientId = config.consoleClientId!;
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: input.code,
    redirect_uri: input.redirectUri,
    code_verifier: login.verifier,
    client_id: clientId,
  });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (config.consoleClientSecretSealed) {
    // client_secret_basic, the default method of OpenID Connect Core §9.
    const secret = input.box.decrypt(config.consoleClientSecretSealed, consoleSecretContext(config.orgId));
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  }
  let body: { id_token?: unknown; access_token?: unknown; error?: unknown };
  try {
    const response = await safeFetch(input.discovery.token_endpoint, { method: 'POST', headers, body: form.toString() }, input.outbound, FETCH);
    body = (await response.json()) as typeof body;
    if (!response.ok) throw new SignInError(`The identity provider refused the sign-in (${typeof body.error === 'string' ? body.error : response.status}).`);
  } catch (err) {
    if (err instanceof SignInError) throw err;
    throw new SignInError(`The identity provider's token endpoint could not be reached (${err instanceof Error ? err.message : 'error'}).`);
  }
  if (typeof body.id_token !== 'string' || typeof body.access_token !== 'string')
    throw new SignInError('The identity provider returned no ID token or access token.');
  let identity: IdpIdentity;
  try {
    // The org's keys and claim rules, with the console client as the audience: roles come out exactly as on REST.
    identity = await input.verifier.verify(config.orgId, { ...toVerifierConfig(config), audience: clientId }, body.id_token);
  } catch (err) {
    throw new SignInError(`The ID token was not accepted: ${err instanceof Error ? err.message : 'invalid'}.`);
  }
  if (typeof identity.claims.nonce !== 'string' || !sameSecret(identity.claims.nonce, login.nonce))
    throw new SignInError('The ID token does not answer this sign-in (nonce mismatch).');
  let accessExp = Infinity;
  try {
    const exp = decodeJwt(body.access_token).exp;
    if (typeof exp === 'number') accessExp = exp * 1000;
  } catch {
    // an opaque access token: REST will refuse it, which the caller reports
  }
  const idExp = (identity.claims.exp as number) * 1000;
  return { identity, accessToken: body.access_token, expiresAt: new Date(Math.min(idExp, accessExp)) };
}
