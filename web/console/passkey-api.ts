/**
 * The console's passkey calls (decision 0380): the WebAuthn ceremonies (@simplewebauthn/browser) around the gateway's
 * operations. A member's own passkeys go through the generated client (tag `passkeys`, the session and its CSRF
 * token as the credential); the sign-in's two calls are console operations (they set and read a cookie).
 */
import {
  browserSupportsWebAuthn,
  startAuthentication,
  startRegistration,
  WebAuthnError,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
} from '@simplewebauthn/browser';
import { ApiError, call, client, rest, type PasskeyResponse } from './api.ts';

/** Whether this browser can use passkeys at all (WebAuthn). */
export const passkeysSupported = () => browserSupportsWebAuthn();

/** The browser's WebAuthn ceremony, its refusals (cancelled, timed out, no authenticator) in the page's words. */
async function ceremony<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const cancelled = err instanceof WebAuthnError || (err instanceof DOMException && err.name === 'NotAllowedError');
    throw new ApiError(0, 'passkey_cancelled', cancelled ? 'The passkey was cancelled or timed out. Try again.' : (err as Error).message);
  }
}

async function consolePost<T>(path: string, body?: unknown): Promise<T> {
  const init: RequestInit =
    body === undefined ? { method: 'POST' } : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const response = await fetch(path, { ...init, credentials: 'same-origin' });
  const answer = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
  if (!response.ok) throw new ApiError(response.status, answer.error ?? 'request_failed', answer.message ?? `HTTP ${response.status}`);
  return answer as T;
}

/** A member's sign-in with a passkey: no org or e-mail (the passkey names its member). */
export async function signInWithPasskey() {
  const { options } = await consolePost<{ options: PublicKeyCredentialRequestOptionsJSON }>('/console/auth/passkey/options');
  const response = await ceremony(() => startAuthentication({ optionsJSON: options }));
  return consolePost<{ signed_in: true }>('/console/auth/passkey', { response });
}

/** The generated contract types WebAuthn's JSON loosely (objects); the library types it closely: the same JSON. */
const asContract = (response: unknown) => response as PasskeyResponse;

export const listOwnPasskeys = () => call(rest.listConsolePasskeys({ client }));

export async function addOwnPasskey(name: string) {
  const { options } = await call(rest.startConsolePasskeyRegistration({ client }));
  const response = await ceremony(() => startRegistration({ optionsJSON: options as unknown as PublicKeyCredentialCreationOptionsJSON }));
  return call(rest.registerConsolePasskey({ client, body: { name, response: asContract(response) } }));
}

export const renameOwnPasskey = (passkeyId: string, name: string) => call(rest.renameConsolePasskey({ client, path: { passkeyId }, body: { name } }));
export const removeOwnPasskey = (passkeyId: string) => call(rest.removeConsolePasskey({ client, path: { passkeyId } }));

/** A new passkey while following an invitation or reset link (the link is used when the answer is sent with it). */
export async function passkeyForLink(token: string): Promise<PasskeyResponse> {
  const { options } = await call(rest.startMemberLinkPasskey({ client, body: { token } }));
  return asContract(await ceremony(() => startRegistration({ optionsJSON: options as unknown as PublicKeyCredentialCreationOptionsJSON })));
}
