/**
 * Members' passkeys (WebAuthn with @simplewebauthn/server; decision 0380): the ceremonies' options, their answers
 * checked, the stored credentials listed, renamed and removed. The relying party is the gateway's public URL (its
 * hostname the RP ID, its origin the only origin accepted); a challenge is random, kept in the store as its hash with
 * what asked for it and its expiry, and taken (deleted) by the ceremony that answers it, so it works once on every
 * instance; user verification is required; the signature counter only moves forward (an authenticator that keeps none
 * reports 0 every time).
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { recordAudit, type Actor } from '../audit/repository.ts';
import { AppError, conflict, notFound, unprocessable } from '../errors.ts';
import type { Db, Queryable } from '../store/db.ts';
import { sha256Hex } from '../util/crypto.ts';
import {
  deletePasskey,
  findPasskeyByCredentialId,
  insertChallenge,
  insertPasskey,
  listPasskeyRows,
  passkeyUsed,
  renamePasskeyRow,
  takeChallenge,
  type PasskeyRow,
} from './passkeys/repository.ts';
import type { MemberRow } from './repository.ts';

type WebAuthn = typeof import('@simplewebauthn/server');
let webauthnModule: Promise<WebAuthn> | null = null;
/**
 * @simplewebauthn/server, loaded with the first ceremony (decision 0410): ~13-20 MB resident that a gateway whose
 * members never use a passkey would otherwise hold from start.
 */
const webauthn = (): Promise<WebAuthn> => (webauthnModule ??= import('@simplewebauthn/server'));

/** How long a ceremony's challenge is accepted; the browser is told half of it. */
const CHALLENGE_TTL_MS = 5 * 60_000;
/** At most this many passkeys per member. */
const MAX_PASSKEYS = 20;
/** ES256, EdDSA, RS256: what platform authenticators and security keys use. */
const ALGORITHMS = [-7, -8, -257];
const MAX_RESPONSE_CHARS = 16_000;

export interface PasskeyDeps {
  db: Queryable;
  publicUrl: string;
}

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  backed_up: boolean;
}

const passkeyView = (p: PasskeyRow): PasskeyView => ({
  id: p.id,
  name: p.name,
  created_at: p.createdAt.toISOString(),
  last_used_at: p.lastUsedAt?.toISOString() ?? null,
  backed_up: p.backedUp,
});

/** The relying party: the public URL's hostname and origin; null where WebAuthn cannot work (an IP address). */
export function relyingParty(publicUrl: string): { id: string; origin: string } | null {
  const url = new URL(publicUrl);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(hostname) ? null : { id: hostname, origin: url.origin };
}

function rpOf(publicUrl: string): { id: string; origin: string } {
  const rp = relyingParty(publicUrl);
  if (!rp) {
    throw conflict(
      'passkeys_unavailable',
      'Passkeys need the gateway at a host name, not an IP address: set TOOLGATE_PUBLIC_URL to a name (http://localhost:PORT on this machine).',
    );
  }
  return rp;
}

/** A passkey's answer that was not accepted: the caller says one thing whatever the reason. */
export class PasskeyRefused extends Error {
  constructor(readonly reason: 'malformed' | 'challenge' | 'replayed' | 'unknown_credential' | 'member' | 'signature' | 'counter') {
    super(`passkey refused: ${reason}`);
  }
}

type Purpose = 'register' | 'sign_in';

/**
 * A fresh challenge (32 random bytes), stored as its SHA-256 with the purpose, the SHA-256 of `binding` (the member and
 * session, the link, the browser, the sign-in transaction: what asked for it) and its expiry. Nothing else is kept.
 */
async function issueChallenge(db: Queryable, purpose: Purpose, binding: string, now = new Date()): Promise<Uint8Array<ArrayBuffer>> {
  const challenge = randomBytes(32);
  await insertChallenge(
    db,
    {
      challengeHash: sha256Hex(challenge.toString('base64url')),
      purpose,
      bindingHash: sha256Hex(binding),
      expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS),
    },
    now,
  );
  return Uint8Array.from(challenge);
}

/**
 * The challenge in the browser's client data, taken from the store (its row deleted: once, on any instance) and
 * checked: issued here, for this purpose and binding, not expired. Otherwise a refusal.
 */
async function useChallenge(deps: PasskeyDeps, clientDataJSON: unknown, purpose: Purpose, binding: string): Promise<string> {
  let challenge: unknown;
  try {
    challenge = (JSON.parse(Buffer.from(String(clientDataJSON), 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
  } catch {
    throw new PasskeyRefused('malformed');
  }
  if (typeof challenge !== 'string' || challenge.length > 200) throw new PasskeyRefused('malformed');
  const row = await takeChallenge(deps.db, sha256Hex(challenge));
  if (!row) throw new PasskeyRefused('replayed');
  if (row.purpose !== purpose || row.bindingHash !== sha256Hex(binding) || row.expiresAt.getTime() <= Date.now()) throw new PasskeyRefused('challenge');
  return challenge;
}

/** A member's WebAuthn user handle: the member id's 16 bytes (no e-mail, nothing personal). */
const userHandleOf = (memberId: string) => Uint8Array.from(Buffer.from(memberId.replace(/-/g, ''), 'hex'));

/** Options to create a discoverable passkey (a resident key, user verification required) for the member. */
export async function registrationOptions(deps: PasskeyDeps, member: MemberRow, binding: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const rp = rpOf(deps.publicUrl);
  const existing = await listPasskeyRows(deps.db, member.orgId, member.id);
  if (existing.length >= MAX_PASSKEYS) throw conflict('too_many_passkeys', `A member may have at most ${MAX_PASSKEYS} passkeys: remove one first.`);
  return (await webauthn()).generateRegistrationOptions({
    rpName: 'Toolgate',
    rpID: rp.id,
    userName: member.email,
    userDisplayName: member.displayName ?? member.email,
    userID: userHandleOf(member.id),
    challenge: await issueChallenge(deps.db, 'register', binding),
    timeout: CHALLENGE_TTL_MS / 2,
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransport[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
}

/** A new credential, checked; not yet stored. */
export interface NewPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string[];
  backedUp: boolean;
}

/** Checks the browser's answer to `registrationOptions`; a refused one is a 422 `passkey_invalid`. */
export async function verifyRegistration(deps: PasskeyDeps, binding: string, response: unknown): Promise<NewPasskey> {
  const rp = rpOf(deps.publicUrl);
  const invalid = () => unprocessable('passkey_invalid', 'The passkey could not be registered: its answer was not accepted. Try again.');
  const answer = response as RegistrationResponseJSON;
  if (JSON.stringify(response ?? null).length > MAX_RESPONSE_CHARS || typeof answer?.response !== 'object') throw invalid();
  try {
    const expectedChallenge = await useChallenge(deps, answer.response.clientDataJSON, 'register', binding);
    const { verified, registrationInfo } = await (await webauthn()).verifyRegistrationResponse({
      response: answer,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
      supportedAlgorithmIDs: ALGORITHMS,
    });
    if (!verified || !registrationInfo) throw invalid();
    const { credential } = registrationInfo;
    return {
      credentialId: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: (credential.transports ?? []).filter((t) => typeof t === 'string').slice(0, 8),
      backedUp: registrationInfo.credentialBackedUp,
    };
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw invalid();
  }
}

/** Stores a checked passkey for the member, audited with `actor` (the member, or who followed their link). */
export async function savePasskey(db: Queryable, member: MemberRow, passkey: NewPasskey, name: string | undefined, actor: Actor): Promise<PasskeyView> {
  const row = await insertPasskey(db, { ...passkey, orgId: member.orgId, memberId: member.id, name: name?.trim() || 'Passkey' });
  if (!row) throw conflict('passkey_exists', 'This passkey is already registered.');
  await recordAudit(db, {
    orgId: member.orgId,
    action: 'member.passkey_added',
    actor,
    targetType: 'member',
    targetId: member.id,
    details: { passkey: row.id },
  });
  return passkeyView(row);
}

/** Options to sign in with any discoverable passkey of this gateway (no e-mail asked, none revealed). */
export async function authenticationOptions(deps: PasskeyDeps, binding: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const rp = rpOf(deps.publicUrl);
  return (await webauthn()).generateAuthenticationOptions({
    rpID: rp.id,
    challenge: await issueChallenge(deps.db, 'sign_in', binding),
    timeout: CHALLENGE_TTL_MS / 2,
    userVerification: 'required',
  });
}

/** The credential id an answer claims (not yet checked), or null when the answer is not one. */
export function claimedCredential(response: unknown): string | null {
  const id = (response as { id?: unknown } | null)?.id;
  return typeof id === 'string' && /^[A-Za-z0-9_-]{16,1400}$/.test(id) && JSON.stringify(response).length <= MAX_RESPONSE_CHARS ? id : null;
}

/**
 * Checks a sign-in answer against the stored passkey (found by the caller from `claimedCredential`) and its member:
 * the challenge (ours, bound here, once), origin, RP ID, user verification, signature, user handle and counter. The
 * passkey's counter and last use are recorded; the member is returned. Any failure is a PasskeyRefused.
 */
export async function verifySignIn(deps: PasskeyDeps, response: unknown, binding: string, passkey: PasskeyRow, member: MemberRow): Promise<void> {
  const rp = rpOf(deps.publicUrl);
  const answer = response as AuthenticationResponseJSON;
  if (typeof answer?.response !== 'object' || answer.response === null) throw new PasskeyRefused('malformed');
  const expectedChallenge = await useChallenge(deps, answer.response.clientDataJSON, 'sign_in', binding);
  const handle = answer.response.userHandle;
  if (handle !== undefined && handle !== Buffer.from(userHandleOf(member.id)).toString('base64url')) throw new PasskeyRefused('member');
  const { verifyAuthenticationResponse } = await webauthn();
  let verified: Awaited<ReturnType<WebAuthn['verifyAuthenticationResponse']>>;
  try {
    verified = await verifyAuthenticationResponse({
      response: answer,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
      credential: {
        id: passkey.credentialId,
        publicKey: Uint8Array.from(Buffer.from(passkey.publicKey, 'base64url')),
        counter: passkey.counter,
        transports: passkey.transports as AuthenticatorTransport[],
      },
    });
  } catch (err) {
    throw new PasskeyRefused(/counter/i.test((err as Error).message) ? 'counter' : 'signature');
  }
  if (!verified.verified) throw new PasskeyRefused('signature');
  if (!(await passkeyUsed(deps.db, passkey.id, verified.authenticationInfo.newCounter, new Date()))) throw new PasskeyRefused('counter');
}

export const findPasskey = (db: Queryable, credentialId: string) => findPasskeyByCredentialId(db, credentialId);

export async function listPasskeys(db: Queryable, orgId: string, memberId: string): Promise<{ passkeys: PasskeyView[] }> {
  return { passkeys: (await listPasskeyRows(db, orgId, memberId)).map(passkeyView) };
}

/** Renames one of the member's own passkeys (what tells them apart in lists), audited. */
export async function renamePasskey(db: Queryable, member: MemberRow, passkeyId: string, name: string, actor: Actor): Promise<PasskeyView> {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 100) throw unprocessable('validation_error', 'A passkey name has 1 to 100 characters.');
  const row = await renamePasskeyRow(db, member.orgId, member.id, passkeyId, trimmed);
  if (!row) throw notFound('passkey_not_found', 'The member has no passkey with this id.');
  await recordAudit(db, {
    orgId: member.orgId,
    action: 'member.passkey_renamed',
    actor,
    targetType: 'member',
    targetId: member.id,
    details: { passkey: passkeyId },
  });
  return passkeyView(row);
}

/**
 * Removes one of the member's passkeys (by the member, an admin or the operator), audited. The console sessions signed
 * in with it end and the MCP grants made after signing in with it are revoked (decision 0380).
 */
export function removePasskey(db: Db, orgId: string, memberId: string, passkeyId: string, actor: Actor): Promise<PasskeyView> {
  return db.transaction(async (tx) => {
    const row = await deletePasskey(tx, orgId, memberId, passkeyId);
    if (!row) throw notFound('passkey_not_found', 'The member has no passkey with this id.');
    await recordAudit(tx, { orgId, action: 'member.passkey_removed', actor, targetType: 'member', targetId: memberId, details: { passkey: passkeyId } });
    return passkeyView(row);
  });
}
