/** A local OIDC issuer for tests: serves a JWKS on 127.0.0.1, counts requests, and signs tokens with its keys. */
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface TestKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

export async function makeKey(kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicKey, jwk };
}

type JwksMode = 'ok' | 'hang' | 'redirect' | 'huge' | 'error';

export interface FakeIdp {
  issuer: string;
  jwksUri: string;
  /** host:port, for the outbound allow-list. */
  hostPort: string;
  /** Keys currently published; replace to rotate. */
  published: TestKey[];
  mode: JwksMode;
  hits: number;
  stop(): void;
}

export function startFakeIdp(published: TestKey[]): FakeIdp {
  const idp: FakeIdp = {
    issuer: '',
    jwksUri: '',
    hostPort: '',
    published,
    mode: 'ok',
    hits: 0,
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(req) {
      if (new URL(req.url).pathname !== '/jwks') return new Response('not found', { status: 404 });
      idp.hits++;
      switch (idp.mode) {
        case 'hang':
          return new Promise<Response>(() => {});
        case 'redirect':
          return Response.redirect('http://169.254.169.254/jwks', 302);
        case 'huge':
          return Response.json({ keys: idp.published.map((k) => k.jwk), pad: 'x'.repeat(1024 * 1024) });
        case 'error':
          return new Response('unavailable', { status: 503 });
        case 'ok':
          return Response.json({ keys: idp.published.map((k) => k.jwk) });
      }
    },
  });
  idp.hostPort = `127.0.0.1:${server.port}`;
  idp.issuer = `http://${idp.hostPort}`;
  idp.jwksUri = `${idp.issuer}/jwks`;
  return idp;
}

const now = () => Math.floor(Date.now() / 1000);

/** Signs an RS256 token; `claims` override the defaults (sub, iss, aud, iat, exp in 5 min). Use undefined to drop one. */
export async function signToken(key: TestKey, claims: Record<string, unknown> & { iss: string; aud?: unknown }, kid: string = key.kid): Promise<string> {
  const payload: Record<string, unknown> = { sub: 'user-1', iat: now(), exp: now() + 300, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload as JWTPayload).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(key.privateKey);
}

export const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
export const nowSec = now;
