/**
 * Members' passwords: a memory-hard scrypt hash (node:crypto, on Bun and Deno alike; parameters and the measured cost
 * in docs/decisions/0368), bounded in how many run at once so a flood of sign-ins queues briefly and is then refused
 * instead of taking the process's memory and CPU.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt cost: N = 2^15, r = 8, p = 1 (32 MiB per hash); stored in each hash, so it can rise without a migration. */
const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 256;

/** Hashes in flight at once per instance, and how many may wait; beyond that a sign-in is told to retry. */
const MAX_RUNNING = 2;
const MAX_WAITING = 32;

export class HashingBusy extends Error {
  constructor() {
    super('Too many sign-ins are being checked at once; retry in a few seconds.');
  }
}

let running = 0;
const waiting: Array<() => void> = [];

async function bounded<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_RUNNING) {
    if (waiting.length >= MAX_WAITING) throw new HashingBusy();
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return bounded(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N, r, p, maxmem: 128 * N * r * p + 1024 * 1024 }, (err, key) =>
          err ? reject(err) : resolve(key),
        ),
      ),
  );
}

/** `scrypt$<log2 N>$<r>$<p>$<salt b64url>$<key b64url>` */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, R, P);
  return ['scrypt', LOG_N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether the password matches the stored hash; a malformed hash matches nothing (after the same work). */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, logN, r, p, salt, key] = stored.split('$');
  const params = [Number(logN), Number(r), Number(p)];
  const sane = scheme === 'scrypt' && params.every(Number.isInteger) && params[0]! >= 10 && params[0]! <= 20 && params[1]! <= 32 && params[2]! <= 16;
  const expected = Buffer.from(key ?? '', 'base64url');
  const derived = await derive(password, Buffer.from(salt ?? '', 'base64url'), sane ? params[0]! : LOG_N, sane ? params[1]! : R, sane ? params[2]! : P);
  return sane && expected.length === derived.length && timingSafeEqual(expected, derived);
}

let dummy: Promise<string> | null = null;
/**
 * A hash no password matches, with the current parameters: an unknown e-mail (or a member without a password) is
 * checked against it, so the answer takes the time a member's takes.
 */
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(24).toString('base64url'));
  return dummy;
}

/** Why a new password is refused, or null. Length only (NIST SP 800-63B): no composition rules. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password.length > MAX_PASSWORD_LENGTH) return `The password may have at most ${MAX_PASSWORD_LENGTH} characters.`;
  return null;
}
