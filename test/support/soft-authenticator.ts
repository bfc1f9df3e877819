/**
 * A software WebAuthn authenticator for the CLI test (no browser): real P-256 keys from node:crypto, real
 * CBOR attestation objects ("none" format) and real ES256 signatures over authenticator data and client data, the
 * way a platform authenticator and a browser produce them together. A test can change what a browser would vouch for
 * (the origin, the user-verified flag, the counter) to see the gateway refuse it; it replaces no part of the gateway.
 * Chromium's virtual authenticator (test/member-passkeys.test.ts, test/demo-member-sign-in.test.ts) covers the
 * browser itself.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

type Cbor = number | string | Uint8Array | CborMap | { [key: string]: Cbor };
interface CborMap extends Map<Cbor, Cbor> {}

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

/** The CBOR subset WebAuthn needs: integers, byte and text strings, maps. */
function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, v]) => [cbor(k), cbor(v)])]);
}

const b64u = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

export interface SoftCredential {
  id: Buffer;
  privateKey: KeyObject;
  rpId: string;
  userHandle: string;
  counter: number;
}

export interface Tweaks {
  origin?: string;
  userVerified?: boolean;
  counter?: number;
  challenge?: string;
}

function flags(userVerified: boolean, attested: boolean): number {
  return 0x01 | (userVerified ? 0x04 : 0) | (attested ? 0x40 : 0);
}

function clientData(type: string, challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
}

/** One authenticator holding discoverable credentials, for one origin unless a call says otherwise. */
export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];

  constructor(readonly origin: string) {}

  /** navigator.credentials.create(): a new ES256 credential for the options' RP and user, as RegistrationResponseJSON. */
  create(options: { challenge: string; rp: { id?: string }; user: { id: string } }, tweaks: Tweaks = {}) {
    const rpId = options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
    const cose = cbor(
      new Map<Cbor, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x, 'base64url')],
        [-3, Buffer.from(jwk.y, 'base64url')],
      ]),
    );
    const id = randomBytes(32);
    const counter = tweaks.counter ?? 0;
    const signCount = Buffer.alloc(4);
    signCount.writeUInt32BE(counter);
    const idLength = Buffer.from([id.length >> 8, id.length & 0xff]);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([flags(tweaks.userVerified ?? true, true)]), signCount, Buffer.alloc(16), idLength, id, cose]);
    const credential: SoftCredential = { id, privateKey, rpId, userHandle: options.user.id, counter };
    this.credentials.push(credential);
    const attestationObject = cbor({ fmt: 'none', attStmt: {}, authData });
    return {
      id: b64u(id),
      rawId: b64u(id),
      type: 'public-key' as const,
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64u(clientData('webauthn.create', tweaks.challenge ?? options.challenge, tweaks.origin ?? this.origin)),
        attestationObject: b64u(attestationObject),
        transports: ['internal'],
      },
    };
  }

  /** navigator.credentials.get() with a discoverable credential (the newest, or `credential`): AuthenticationResponseJSON. */
  get(options: { challenge: string; rpId?: string }, tweaks: Tweaks = {}, credential = this.credentials.at(-1)!) {
    credential.counter = tweaks.counter ?? credential.counter + (credential.counter > 0 ? 1 : 0);
    const signCount = Buffer.alloc(4);
    signCount.writeUInt32BE(credential.counter);
    const authData = Buffer.concat([sha256(options.rpId ?? credential.rpId), Buffer.from([flags(tweaks.userVerified ?? true, false)]), signCount]);
    const data = clientData('webauthn.get', tweaks.challenge ?? options.challenge, tweaks.origin ?? this.origin);
    const signature = sign('sha256', Buffer.concat([authData, sha256(data)]), credential.privateKey);
    return {
      id: b64u(credential.id),
      rawId: b64u(credential.id),
      type: 'public-key' as const,
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64u(data),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        userHandle: credential.userHandle,
      },
    };
  }
}
