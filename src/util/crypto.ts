/** Secrets at rest: AES-256-GCM for what must be recovered, SHA-256 hashes for what only needs checking. */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const VERSION = 'v1';

export class SecretBox {
  constructor(private readonly key: Uint8Array) {
    if (key.length !== 32) throw new Error('secret key must be 32 bytes');
  }

  /** Returns `v1.<iv>.<tag>.<ciphertext>` (base64url); `context` binds the ciphertext to its row (AAD). */
  encrypt(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
  }

  /** A 32-byte key derived from the secret key for one purpose (HMAC-SHA256 of `context`), e.g. an org's mask key. */
  derive(context: string): Buffer {
    return createHmac('sha256', this.key).update(context).digest();
  }

  decrypt(sealed: string, context: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || data === undefined) throw new Error('unrecognised ciphertext');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/**
 * Secrets the gateway issues carry 256 bits of randomness, so a fast hash is sufficient
 * (a slow KDF protects low-entropy passwords, not random keys) and keeps the hot path fast.
 */
export function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

/** SHA-256 as hex of a string's UTF-8 bytes: Bun's native one-shot hasher where it runs (half the time of a node:crypto Hash object on the MCP hot path), node:crypto elsewhere (Deno). */
export const sha256Hex: (text: string) => string =
  typeof Bun !== 'undefined' && typeof Bun.CryptoHasher?.hash === 'function'
    ? (text) => Bun.CryptoHasher.hash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text).digest('hex');

export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
