/** Helpers for suites that run an org's own identity provider (BYOIDP) against a real gateway. */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair } from 'jose';
import { b64url, nowSec, signToken, type FakeIdp, type TestKey } from '../idp/fake-idp.ts';
import * as sdk from '../../sdk/index.ts';
import { BASE, type TestGateway } from './gateway.ts';
import { sdkFor } from './sdk.ts';
import { PG_URL } from './services.ts';

export { makeKey, nowSec, signToken, startFakeIdp, type FakeIdp, type TestKey } from '../idp/fake-idp.ts';

/** The env a test gateway needs to fetch JWKS from a local issuer quickly (200 ms cooldown, 500 ms deadline). */
export function idpGatewayEnv(idp: FakeIdp, extraHosts: string[] = []): Record<string, string> {
  return {
    TOOLGATE_OUTBOUND_ALLOW_HOSTS: [idp.hostPort, ...extraHosts].join(','),
    TOOLGATE_JWKS_COOLDOWN_MS: '200',
    TOOLGATE_JWKS_TIMEOUT_MS: '500',
  };
}

export interface IdpConfigBody {
  issuer: string;
  jwks_uri: string;
  audience: string;
  role_claim?: string;
  email_claim?: string;
  default_role?: 'contributor' | 'admin' | 'finance' | null;
}

export function idpConfig(idp: FakeIdp, audience: string, extra: Partial<IdpConfigBody> = {}): IdpConfigBody {
  return { issuer: idp.issuer, jwks_uri: idp.jwksUri, audience, ...extra };
}

/** PUT /api/org/idp; throws unless it is saved (200). */
export async function saveIdpConfig(gateway: TestGateway, token: string, body: IdpConfigBody): Promise<void> {
  const { error, response } = await sdk.setIdpConfig({ client: sdkFor(gateway, token).client, body: body as sdk.IdpConfigInput });
  if (response.status !== 200) throw new Error(`saving the IdP config failed: ${response.status} ${JSON.stringify(error)}`);
}

export interface RpcReply {
  status: number;
  body: any;
}

/** One JSON-RPC request to the org's MCP endpoint with `Authorization: Bearer <token>` (or an X-API-Key). */
export async function mcpRequest(
  gateway: TestGateway,
  slug: string,
  credential: { bearer?: string | null; apiKey?: string },
  method = 'tools/list',
  params: Record<string, unknown> = {},
): Promise<RpcReply> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (credential.bearer) headers.authorization = `Bearer ${credential.bearer}`;
  if (credential.apiKey) headers['x-api-key'] = credential.apiKey;
  const res = await gateway.handle(
    new Request(`${BASE}/mcp/${slug}`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) }),
  );
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: res.status, body };
}

/** An unsigned token (`alg: none`), with and without a trailing signature segment. */
export function algNoneToken(payload: Record<string, unknown>, signature = ''): string {
  return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.${signature}`;
}

/** The classic algorithm confusion: HS256 with the issuer's RSA public key (PEM text) as the HMAC secret. */
export async function hs256WithPublicKey(key: TestKey, payload: Record<string, unknown>): Promise<string> {
  const pem = await exportSPKI(key.publicKey);
  return new SignJWT({ sub: 'user-1', iat: nowSec(), exp: nowSec() + 300, ...payload })
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'JWT' })
    .sign(new TextEncoder().encode(pem));
}

/** A validly signed token with an algorithm other than RS256 (RS512, its own key published under `kid`). */
export async function rs512Token(kid: string, payload: Record<string, unknown>): Promise<{ token: string; key: TestKey }> {
  const { privateKey, publicKey } = await generateKeyPair('RS512', { extractable: true });
  const token = await new SignJWT({ sub: 'user-1', iat: nowSec(), exp: nowSec() + 300, ...payload })
    .setProtectedHeader({ alg: 'RS512', kid, typ: 'JWT' })
    .sign(privateKey);
  return { token, key: { kid, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS512', use: 'sig' } } };
}

/** Signs with `key` for `issuer`/`audience`; claims override (undefined drops one). */
export function idpToken(key: TestKey, issuer: string, audience: unknown, claims: Record<string, unknown> = {}, kid?: string): Promise<string> {
  return signToken(key, { iss: issuer, aud: audience, ...claims }, kid);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface PgFixture {
  /** A DatabaseConfig for POST /api/connectors. */
  config: { host: string; port: number; database: string; user: string; tls: 'disable' };
  credential: string | null;
  drop(): Promise<void>;
}

/** A fresh database on the test PostgreSQL server holding the given (empty, one-column) tables. */
export async function pgFixture(tables: string[]): Promise<PgFixture> {
  const name = `tg_idp_${randomBytes(5).toString('hex')}`;
  const server = postgres(PG_URL, { max: 1, onnotice: () => undefined });
  await server.unsafe(`create database ${name}`);
  await server.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const db = postgres(url.toString(), { max: 1, onnotice: () => undefined });
  for (const table of tables) await db.unsafe(`create table ${table} (id int primary key)`);
  await db.end();
  return {
    config: { host: url.hostname, port: Number(url.port || 5432), database: name, user: decodeURIComponent(url.username) || 'postgres', tls: 'disable' },
    credential: decodeURIComponent(url.password) || null,
    drop: async () => {
      const again = postgres(PG_URL, { max: 1, onnotice: () => undefined });
      await again.unsafe(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}

/** host:port of the test PostgreSQL server, for the outbound allow-list. */
export function pgHostPort(): string {
  const url = new URL(PG_URL);
  return `${url.hostname}:${url.port || 5432}`;
}

/** Creates a connector with the org:manage token and waits until its validation has finished. */
export async function createConnector(gateway: TestGateway, token: string, name: string, fixture: PgFixture): Promise<{ id: string; status: string }> {
  const client = sdkFor(gateway, token).client;
  const { data, error, response } = await sdk.createConnector({
    client,
    body: { name, type: 'postgresql', config: fixture.config, ...(fixture.credential ? { credential: fixture.credential } : {}) },
  });
  if (response.status !== 201) throw new Error(`creating a connector failed: ${response.status} ${JSON.stringify(error)}`);
  const id = data!.id;
  await gateway.deps.jobs.idle();
  const deadline = Date.now() + 15_000;
  for (;;) {
    const row = (await sdk.getConnector({ client, throwOnError: true, path: { connectorId: id } })).data;
    if (row.status !== 'validating') return { id, status: row.status };
    if (Date.now() > deadline) throw new Error(`connector ${id} is still validating`);
    await sleep(50);
  }
}
