// BYOIDP verifier against a local issuer on 127.0.0.1: claim checks, algorithm confusion, key rotation, JWKS abuse.
import { afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { SignJWT, exportSPKI } from 'jose';
import { IdpTokenError, createIdpVerifier, peekIssuer, type IdpConfig, type IdpVerifierOptions } from '../../src/auth/idp/index.ts';
import { OutboundRefusedError, parseOutboundPolicy, type Resolver } from '../../src/net/outbound.ts';
import { verifies } from '../requirements.ts';
import { b64url, makeKey, nowSec, signToken, startFakeIdp, type FakeIdp, type TestKey } from './fake-idp.ts';

const noDns: Resolver = async (host) => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};
const AUD = 'toolgate-api';

let keyA: TestKey;
let keyB: TestKey;
let stranger: TestKey;
beforeAll(async () => {
  [keyA, keyB, stranger] = await Promise.all([makeKey('key-a'), makeKey('key-b'), makeKey('key-a')]);
});

const running: FakeIdp[] = [];
afterEach(() => {
  for (const idp of running.splice(0)) idp.stop();
});

function setup(published?: TestKey[], extra: Partial<IdpVerifierOptions> = {}, configExtra: Partial<IdpConfig> = {}) {
  const idp = startFakeIdp(published ?? [keyA]);
  running.push(idp);
  const verifier = createIdpVerifier({
    outbound: parseOutboundPolicy({ allowHosts: [idp.hostPort], resolve: noDns }),
    jwksCooldownMs: 200,
    jwksTimeoutMs: 300,
    ...extra,
  });
  const config: IdpConfig = { issuer: idp.issuer, jwksUri: idp.jwksUri, audience: AUD, ...configExtra };
  return { idp, verifier, config };
}

async function reasonOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(IdpTokenError);
  return (err as IdpTokenError).reason;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('claims', () => {
  test('a valid token yields the identity', async () => {
    const { idp, verifier, config } = setup(undefined, {}, { defaultRole: 'contributor' });
    const token = await signToken(keyA, {
      iss: idp.issuer,
      aud: AUD,
      email: 'ada@example.com',
      role: ['Admin', 'viewer', 'finance', 'admin'],
      scope: 'tools:read tools:call',
      scp: ['tools:call', 'admin:read'],
    });
    const id = await verifier.verify('org-1', config, token);
    expect(id.subject).toBe('user-1');
    expect(id.email).toBe('ada@example.com');
    expect(id.roles).toEqual(['admin', 'finance']);
    expect(id.roleFromDefault).toBe(false);
    expect(id.scopes).toEqual(['tools:read', 'tools:call', 'admin:read']);
    expect(id.claims.iss).toBe(idp.issuer);
    expect(idp.hits).toBe(1);
  });

  test('role claim: absent → defaultRole, present but unrecognised → none, custom dotted claim', async () => {
    const { idp, verifier, config } = setup(undefined, {}, { defaultRole: 'contributor' });
    const absent = await verifier.verify('o', config, await signToken(keyA, { iss: idp.issuer, aud: AUD }));
    expect(absent).toMatchObject({ roles: ['contributor'], roleFromDefault: true, scopes: [], email: null });
    const unknown = await verifier.verify('o', config, await signToken(keyA, { iss: idp.issuer, aud: AUD, role: 'viewer' }));
    expect(unknown).toMatchObject({ roles: [], roleFromDefault: false });
    const nested = { ...config, roleClaim: 'realm_access.roles', emailClaim: 'upn' };
    const kc = await signToken(keyA, { iss: idp.issuer, aud: AUD, realm_access: { roles: ['finance'] }, upn: 'u@x.org' });
    expect(await verifier.verify('o', nested, kc)).toMatchObject({ roles: ['finance'], email: 'u@x.org' });
    const noDefault = await verifier.verify('o', { ...config, defaultRole: null }, await signToken(keyA, { iss: idp.issuer, aud: AUD }));
    expect(noDefault).toMatchObject({ roles: [], roleFromDefault: false });
  });

  test('an e-mail the IdP marks unverified is not returned', async () => {
    const { idp, verifier, config } = setup();
    const token = await signToken(keyA, { iss: idp.issuer, aud: AUD, email: 'x@y.z', email_verified: false });
    expect((await verifier.verify('o', config, token)).email).toBeNull();
  });

  test('expired, within tolerance, missing exp, nbf in the future, missing sub', async () => {
    verifies('AUTH-JWT-EXP', 'AUTH-JWT-NBF');
    const { idp, verifier, config } = setup();
    const base = { iss: idp.issuer, aud: AUD };
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { ...base, exp: nowSec() - 120 })))).toBe('expired');
    await verifier.verify('o', config, await signToken(keyA, { ...base, exp: nowSec() - 10 })); // 30 s tolerance
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { ...base, exp: undefined })))).toBe('missing_exp');
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { ...base, nbf: nowSec() + 300 })))).toBe('not_yet_valid');
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { ...base, sub: undefined })))).toBe('malformed');
  });

  test('issuer and audience', async () => {
    verifies('AUTH-JWT-ISS', 'AUTH-JWT-AUD', 'AUTH-JWT-AUD-ARRAY');
    const { idp, verifier, config } = setup();
    const wrongIss = await signToken(keyA, { iss: `${idp.issuer}/other`, aud: AUD });
    expect(await reasonOf(verifier.verify('o', config, wrongIss))).toBe('wrong_issuer');
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { iss: idp.issuer, aud: 'someone-else' })))).toBe('wrong_audience');
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyA, { iss: idp.issuer })))).toBe('wrong_audience');
    const multi = await signToken(keyA, { iss: idp.issuer, aud: ['account', AUD] });
    expect((await verifier.verify('o', config, multi)).subject).toBe('user-1');
  });

  test('error messages never echo the token', async () => {
    const { idp, verifier, config } = setup();
    const token = await signToken(keyA, { iss: 'https://evil.example', aud: AUD, sub: 'secret-subject' });
    const err = (await verifier.verify('o', config, token).catch((e: unknown) => e)) as IdpTokenError;
    expect(err.message).not.toContain('secret-subject');
    expect(err.message).not.toContain('evil.example');
    expect(err.message).not.toContain(token.split('.')[1] ?? '-');
    void idp;
  });
});

describe('algorithms and keys', () => {
  test('alg none is refused without touching the JWKS', async () => {
    verifies('AUTH-JWT-ALG-NONE');
    const { idp, verifier, config } = setup();
    const payload = { iss: idp.issuer, aud: AUD, sub: 'u', exp: nowSec() + 300 };
    for (const sig of ['', 'x']) {
      const token = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.${sig}`;
      expect(await reasonOf(verifier.verify('o', config, token))).toBe('unsupported_alg');
    }
    expect(idp.hits).toBe(0);
  });

  test('HS256 signed with the RSA public key as the secret is refused', async () => {
    verifies('AUTH-JWT-HS256-PUBKEY');
    const { idp, verifier, config } = setup();
    const pem = await exportSPKI(keyA.publicKey);
    const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    for (const secret of [new TextEncoder().encode(pem), new Uint8Array(der)]) {
      const token = await new SignJWT({ iss: idp.issuer, aud: AUD, sub: 'u', exp: nowSec() + 300 })
        .setProtectedHeader({ alg: 'HS256', kid: keyA.kid })
        .sign(secret);
      expect(await reasonOf(verifier.verify('o', config, token))).toBe('unsupported_alg');
    }
  });

  test('unknown kid, forged signature under a known kid, tampered payload, garbage', async () => {
    verifies('AUTH-JWT-SIGNATURE');
    const { idp, verifier, config } = setup();
    expect(await reasonOf(verifier.verify('o', config, await signToken(keyB, { iss: idp.issuer, aud: AUD })))).toBe('unknown_key');
    // `stranger` claims kid key-a but holds a different private key.
    expect(await reasonOf(verifier.verify('o', config, await signToken(stranger, { iss: idp.issuer, aud: AUD })))).toBe('bad_signature');
    const [h, , s] = (await signToken(keyA, { iss: idp.issuer, aud: AUD })).split('.');
    const tampered = `${h}.${b64url({ iss: idp.issuer, aud: AUD, sub: 'root', exp: nowSec() + 300 })}.${s}`;
    expect(await reasonOf(verifier.verify('o', config, tampered))).toBe('bad_signature');
    expect(await reasonOf(verifier.verify('o', config, 'not.a.jwt'))).toBe('malformed');
    expect(await reasonOf(verifier.verify('o', config, 'x'.repeat(20_000)))).toBe('malformed');
  });

  test('a rotated key is picked up once the cooldown has passed', async () => {
    verifies('AUTH-JWKS-ROTATE', 'AUTH-JWKS-COOLDOWN');
    const { idp, verifier, config } = setup();
    await verifier.verify('o', config, await signToken(keyA, { iss: idp.issuer, aud: AUD }));
    idp.published = [keyB];
    const rotated = await signToken(keyB, { iss: idp.issuer, aud: AUD });
    expect(await reasonOf(verifier.verify('o', config, rotated))).toBe('unknown_key'); // still cooling down
    expect(idp.hits).toBe(1);
    await sleep(250);
    expect((await verifier.verify('o', config, rotated)).subject).toBe('user-1');
    expect(idp.hits).toBe(2);
  });

  test('a flood of unknown kids causes at most one JWKS fetch per cooldown', async () => {
    verifies('AUTH-JWKS-COOLDOWN');
    const { idp, verifier, config } = setup();
    // Sign first so signing time does not spread the flood across the cooldown.
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => signToken(keyB, { iss: idp.issuer, aud: AUD }, `kid-${i}`)));
    const burst = () => Promise.all(tokens.map((t) => reasonOf(verifier.verify('o', config, t))));
    expect(new Set(await burst())).toEqual(new Set(['unknown_key'])); // cold: one shared initial fetch
    expect(idp.hits).toBe(1);
    await burst(); // within the cooldown: no fetch at all
    expect(idp.hits).toBe(1);
    await sleep(250);
    await burst(); // cooldown over: the first miss refetches, the others share or wait for the next window
    expect(idp.hits).toBe(2);
  });
});

describe('JWKS endpoint problems', () => {
  test('a hanging endpoint fails within the timeout; cached keys keep working meanwhile', async () => {
    verifies('AUTH-JWKS-HANG');
    const { idp, verifier, config } = setup();
    const token = await signToken(keyA, { iss: idp.issuer, aud: AUD });
    idp.mode = 'hang';
    let started = performance.now();
    expect(await reasonOf(verifier.verify('cold', config, token))).toBe('jwks_unavailable');
    expect(performance.now() - started).toBeLessThan(1000);

    idp.mode = 'ok';
    await verifier.verify('warm', config, token);
    idp.mode = 'hang';
    started = performance.now();
    expect((await verifier.verify('warm', config, token)).subject).toBe('user-1');
    expect(performance.now() - started).toBeLessThan(200);
    // An unknown kid after the cooldown tries a refresh, which times out.
    await sleep(250);
    started = performance.now();
    const unknown = await signToken(keyB, { iss: idp.issuer, aud: AUD });
    expect(await reasonOf(verifier.verify('warm', config, unknown))).toBe('jwks_unavailable');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('redirects, oversized documents and errors are not accepted', async () => {
    verifies('OUTBOUND-REDIRECT', 'OUTBOUND-TIMEOUT-SIZE');
    const { idp, verifier, config } = setup(undefined, { jwksMaxBytes: 64 * 1024 });
    const token = await signToken(keyA, { iss: idp.issuer, aud: AUD });
    const causes = { redirect: 'redirect', huge: 'too_large', error: undefined } as const;
    for (const mode of ['redirect', 'huge', 'error'] as const) {
      idp.mode = mode;
      const err = (await verifier.verify(`org-${mode}`, config, token).catch((e: unknown) => e)) as IdpTokenError;
      expect(err.reason).toBe('jwks_unavailable');
      const cause = err.cause;
      if (causes[mode]) {
        expect(cause).toBeInstanceOf(OutboundRefusedError);
        expect((cause as OutboundRefusedError).reason).toBe(causes[mode]);
      }
    }
  });

  test('JWKS URIs on private or loopback addresses, or over plain http, are refused before any request', async () => {
    verifies('OUTBOUND-SSRF');
    const { idp, verifier, config } = setup();
    const resolve: Resolver = async () => ['93.184.216.34'];
    const strict = createIdpVerifier({ outbound: parseOutboundPolicy({ allowHosts: [], resolve }) });
    const token = await signToken(keyA, { iss: idp.issuer, aud: AUD });
    const uris = [
      idp.jwksUri.replace('http:', 'https:'), // loopback, not allow-listed for this verifier
      'https://10.0.0.7/jwks',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::ffff:127.0.0.1]/jwks',
      'https://localhost/jwks',
      'http://idp.example.com/jwks', // resolves to a public address, but http
    ];
    for (const jwksUri of uris) {
      const err = (await strict.verify('o', { ...config, jwksUri }, token).catch((e: unknown) => e)) as IdpTokenError;
      expect(err).toBeInstanceOf(IdpTokenError);
      expect(err.reason).toBe('jwks_unavailable');
      expect(err.message).toMatch(/JWKS URI is not allowed: refused/);
    }
    expect(idp.hits).toBe(0);
    void verifier;
  });

  test('a changed config takes effect and forget() drops the cached keys', async () => {
    const { idp, verifier, config } = setup();
    const other = startFakeIdp([keyB]);
    running.push(other);
    const policyBoth = parseOutboundPolicy({ allowHosts: [idp.hostPort, other.hostPort], resolve: noDns });
    const v = createIdpVerifier({ outbound: policyBoth, jwksCooldownMs: 60_000 });
    await v.verify('o', config, await signToken(keyA, { iss: idp.issuer, aud: AUD }));
    const moved = { ...config, issuer: other.issuer, jwksUri: other.jwksUri };
    expect((await v.verify('o', moved, await signToken(keyB, { iss: other.issuer, aud: AUD }))).subject).toBe('user-1');
    expect(other.hits).toBe(1);
    v.forget('o');
    await v.verify('o', moved, await signToken(keyB, { iss: other.issuer, aud: AUD }));
    expect(other.hits).toBe(2);
    void verifier;
  });
});

describe('peekIssuer', () => {
  test('reads iss without verifying, null for anything else', async () => {
    expect(peekIssuer(await signToken(keyA, { iss: 'https://idp.example' }))).toBe('https://idp.example');
    expect(peekIssuer(`${b64url({ alg: 'none' })}.${b64url({ sub: 'x' })}.`)).toBeNull();
    expect(peekIssuer('garbage')).toBeNull();
    expect(peekIssuer(`${b64url({ alg: 'RS256' })}.${b64url({ iss: 42 })}.sig`)).toBeNull();
  });
});
