// The gateway's store, run identically on embedded PGlite and on a PostgreSQL server: migrations, uniqueness,
// secrets at rest, org scoping, SecretBox, and (PostgreSQL) instances sharing one database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { migrations } from '../src/store/migrations.ts';
import { migrate, openStore, rowsOf } from '../src/store/db.ts';
import { SecretBox, digestsEqual, hashSecret, sha256Hex } from '../src/util/crypto.ts';
import { createHash } from 'node:crypto';
import * as sdk from '../sdk/index.ts';
import type { ToolgateError } from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { sdkFor } from './support/sdk.ts';
import { BASE, OPERATOR_TOKEN, api, freshDatabase, onboard, startTestGateway, tokenFor, type StoreKind, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

/** Hooks default to 5 s in bun whatever bunfig says; starting PGlite under load can take longer. */
const HOOK_TIMEOUT_MS = 60_000;

const pgUp = await serviceAvailable('postgres');

async function query<T>(g: TestGateway, text: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await g.deps.store.db.execute(text));
}

/** Every row of every table of the gateway's schema, as JSON text. */
async function dumpAllTables(g: TestGateway): Promise<string> {
  const tables = await query<{ table_name: string }>(
    g,
    sql`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  expect(tables.map((t) => t.table_name)).toContain('api_keys');
  const parts: string[] = [];
  for (const { table_name } of tables) {
    const rows = await query<{ j: string }>(g, sql.raw(`SELECT row_to_json(t)::text AS j FROM "${table_name}" t`));
    parts.push(...rows.map((r) => r.j));
  }
  return parts.join('\n');
}

function mcpToolsList(g: TestGateway, slug: string, headers: Record<string, string>) {
  return g.handle(
    new Request(`${BASE}/mcp/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );
}

function repositorySuite(kind: StoreKind) {
  describe.skipIf(kind === 'postgres' && !pgUp)(`store on ${kind}`, () => {
    let g: TestGateway;
    beforeAll(async () => {
      g = await startTestGateway(kind);
    }, HOOK_TIMEOUT_MS);
    afterAll(async () => {
      await g?.close();
    }, HOOK_TIMEOUT_MS);

    test('migrations are applied once, and running them again applies nothing', async () => {
      expect(g.deps.store.kind).toBe(kind);
      const versions = (await query<{ version: number }>(g, sql`SELECT version FROM toolgate_migrations ORDER BY version`)).map((r) => Number(r.version));
      expect(versions).toEqual(migrations.map((m) => m.version).sort((a, b) => a - b));
      expect(await migrate(g.deps.store)).toEqual([]);
      expect(await migrate(g.deps.store)).toEqual([]);
      const again = await query<{ n: number }>(g, sql`SELECT count(*)::int AS n FROM toolgate_migrations`);
      expect(Number(again[0]!.n)).toBe(migrations.length);
    });

    test('a new migration is applied exactly once', async () => {
      const version = 900_000 + Math.floor(Math.random() * 1000);
      const extra = {
        version,
        name: 'test_extra',
        sql: `CREATE TABLE test_extra_${version} (id integer PRIMARY KEY);\nINSERT INTO test_extra_${version} VALUES (1);`,
      };
      expect(await migrate(g.deps.store, [...migrations, extra])).toEqual([version]);
      expect(await migrate(g.deps.store, [...migrations, extra])).toEqual([]);
      const rows = await query<{ id: number }>(g, sql.raw(`SELECT id FROM test_extra_${version}`));
      expect(rows.length).toBe(1);
      await g.deps.store.db.execute(sql.raw(`DROP TABLE test_extra_${version}`));
      await g.deps.store.db.execute(sql`DELETE FROM toolgate_migrations WHERE version = ${version}`);
    });

    test('an org slug is unique: a second onboarding with it is 409 slug_taken', async () => {
      const slug = `dup-${kind}-${Date.now().toString(36)}`;
      await onboard(g, slug);
      const res = await api(g, 'POST', '/operator/orgs', OPERATOR_TOKEN, { slug, name: 'Again' });
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ error: 'slug_taken', message: `The slug "${slug}" is already taken.` });
      const rows = await query<{ n: number }>(g, sql`SELECT count(*)::int AS n FROM orgs WHERE slug = ${slug}`);
      expect(Number(rows[0]!.n)).toBe(1);
    });

    test('API keys and client secrets are stored only as hashes', async () => {
      verifies('AUTH-HASHED-SECRETS');
      const org = await onboard(g);
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      const admin = sdkFor(g, token).client;
      const { data: created } = await sdk.createApiKey({ client: admin, throwOnError: true, body: { name: 'second' } });
      const { data: client } = await sdk.createOAuthClient({ client: admin, throwOnError: true, body: { name: 'etl', scopes: ['mcp:call'] } });
      const secrets = [org.apiKey, org.clientSecret, created.key, client.client_secret];
      const dump = await dumpAllTables(g);
      for (const secret of secrets) {
        expect(secret.length).toBeGreaterThan(30);
        expect(dump).not.toContain(secret);
        expect(dump).not.toContain(secret.slice(4)); // not even without its prefix
      }
      const keyRows = await query<{ key_hash: string; prefix: string }>(g, sql`SELECT key_hash, prefix FROM api_keys WHERE id = ${created.id}`);
      expect(keyRows[0]!.key_hash).toBe(hashSecret(created.key));
      expect(created.key.startsWith(keyRows[0]!.prefix)).toBe(true);
      const clientRows = await query<{ secret_hash: string }>(g, sql`SELECT secret_hash FROM oauth_clients WHERE client_id = ${client.client_id}`);
      expect(digestsEqual(clientRows[0]!.secret_hash, hashSecret(client.client_secret))).toBe(true);
    });

    test("the signing keys' private halves are sealed", async () => {
      const rows = await query<{ kid: string; private_key_sealed: string; public_jwk: unknown }>(
        g,
        sql`SELECT kid, private_key_sealed, public_jwk FROM signing_keys`,
      );
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(row.private_key_sealed).not.toContain('"d":');
        expect(row.private_key_sealed.startsWith('v1.')).toBe(true);
        const publicJwk = typeof row.public_jwk === 'string' ? JSON.parse(row.public_jwk) : row.public_jwk;
        expect(publicJwk).not.toHaveProperty('d');
        expect(publicJwk).toMatchObject({ kty: 'EC', crv: 'P-256', kid: row.kid, alg: 'ES256' });
        // The sealed text opens with the gateway's key and the row's context only.
        const opened = JSON.parse(g.deps.box.decrypt(row.private_key_sealed, `signing_key:${row.kid}`));
        expect(typeof opened.d).toBe('string');
        expect(() => g.deps.box.decrypt(row.private_key_sealed, 'signing_key:another')).toThrow();
      }
      const dump = await dumpAllTables(g);
      expect(dump).not.toMatch(/\\?"d\\?"\s*:/);
    });

    test("org scoping: one org never sees nor revokes another's credentials", async () => {
      verifies('REST-BOLA');
      const a = await onboard(g);
      const b = await onboard(g);
      const ta = await tokenFor(g, a.clientId, a.clientSecret);
      const tb = await tokenFor(g, b.clientId, b.clientSecret);
      const adminA = sdkFor(g, ta).client;
      const adminB = sdkFor(g, tb).client;
      const { data: bKey } = await sdk.createApiKey({ client: adminB, throwOnError: true, body: { name: 'b-extra' } });
      const { data: bClient } = await sdk.createOAuthClient({ client: adminB, throwOnError: true, body: { name: 'b-etl', scopes: ['mcp:call'] } });
      const bKeyIds = (await sdk.listApiKeys({ client: adminB, throwOnError: true })).data.api_keys.map((k) => k.id);
      expect(bKeyIds).toContain(bKey.id);

      const aKeys = (await sdk.listApiKeys({ client: adminA, throwOnError: true })).data.api_keys;
      expect(aKeys.length).toBe(1);
      for (const id of bKeyIds) expect(aKeys.map((k) => k.id)).not.toContain(id);
      const aClients = (await sdk.listOAuthClients({ client: adminA, throwOnError: true })).data.oauth_clients;
      expect(aClients.map((c) => c.client_id)).toEqual([a.clientId]);

      const revokeKey = await sdk.revokeApiKey({ client: adminA, path: { keyId: bKey.id } });
      expect(revokeKey.response.status).toBe(404);
      expect((revokeKey.error as ToolgateError).body).toEqual({ error: 'api_key_not_found', message: 'No such active API key.' });
      const revokeClient = await sdk.revokeOAuthClient({ client: adminA, path: { clientId: bClient.client_id } });
      expect(revokeClient.response.status).toBe(404);

      expect((await mcpToolsList(g, b.slug, { 'x-api-key': bKey.key })).status).toBe(200);
      expect((await mcpToolsList(g, b.slug, { 'x-api-key': b.apiKey })).status).toBe(200);
      expect(await tokenFor(g, bClient.client_id, bClient.client_secret)).toBeString();
      const stillActive = await query<{ n: number }>(g, sql`SELECT count(*)::int AS n FROM api_keys WHERE id = ${bKey.id} AND revoked_at IS NULL`);
      expect(Number(stillActive[0]!.n)).toBe(1);
    });
  });
}

repositorySuite('pglite');
repositorySuite('postgres');

describe('SecretBox', () => {
  const box = new SecretBox(new Uint8Array(32).fill(7));
  const sealed = box.encrypt('the secret ✓', 'connector:1');

  test('round trip, with a fresh IV each time', () => {
    expect(box.decrypt(sealed, 'connector:1')).toBe('the secret ✓');
    expect(sealed).not.toContain('secret');
    expect(box.encrypt('the secret ✓', 'connector:1')).not.toBe(sealed);
    expect(box.decrypt(box.encrypt('', 'x'), 'x')).toBe('');
  });

  test('tampering, another context or another key is detected', () => {
    const [v, iv, tag, data] = sealed.split('.') as [string, string, string, string];
    const flip = (s: string) => {
      const bytes = Buffer.from(s, 'base64url');
      bytes[0] = bytes[0]! ^ 1;
      return bytes.toString('base64url');
    };
    expect(() => box.decrypt([v, iv, tag, flip(data)].join('.'), 'connector:1')).toThrow();
    expect(() => box.decrypt([v, iv, flip(tag), data].join('.'), 'connector:1')).toThrow();
    expect(() => box.decrypt([v, flip(iv), tag, data].join('.'), 'connector:1')).toThrow();
    expect(() => box.decrypt(sealed, 'connector:2')).toThrow();
    expect(() => new SecretBox(new Uint8Array(32).fill(8)).decrypt(sealed, 'connector:1')).toThrow();
    expect(() => box.decrypt(['v2', iv, tag, data].join('.'), 'connector:1')).toThrow('unrecognised ciphertext');
    expect(() => box.decrypt('not sealed', 'connector:1')).toThrow('unrecognised ciphertext');
    expect(() => new SecretBox(new Uint8Array(16))).toThrow();
  });
});

describe("sha256Hex (Bun's native hasher on Bun)", () => {
  test('the same digest as node:crypto for any string: empty, unicode, NUL, lone surrogates, 1 MB', () => {
    const texts = ['', 'tg_live_abc', 'é', '日本語', '😀', '\u0000', '\ud800', 'a\udc00b', '\udbff\udfff', 'x'.repeat(1 << 20)];
    for (let i = 0; i < 200; i++) texts.push(String.fromCharCode(...Array.from({ length: i }, (_, j) => (i * 7919 + j * 104729) % 0xffff)));
    for (const text of texts) expect([text.slice(0, 8), sha256Hex(text)]).toEqual([text.slice(0, 8), createHash('sha256').update(text).digest('hex')]);
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe.skipIf(!pgUp)('instances sharing one PostgreSQL database', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let one: TestGateway;
  let two: TestGateway;
  beforeAll(async () => {
    db = await freshDatabase();
    // Both start at once on the empty database: migrations run under a lock, so neither fails.
    [one, two] = await Promise.all([startTestGateway('postgres', {}, db.url), startTestGateway('postgres', {}, db.url)]);
  }, HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await db?.drop();
  }, HOOK_TIMEOUT_MS);

  test('concurrent stores on a fresh database all migrate', async () => {
    const fresh = await freshDatabase();
    try {
      const stores = await Promise.all([1, 2, 3].map(() => openStore({ databaseUrl: fresh.url, poolSize: 2 })));
      for (const store of stores) await store.close();
    } finally {
      await fresh.drop();
    }
  });

  test('an org onboarded on one instance is served by the other; tokens of either verify on both', async () => {
    // Started together on an empty store, the instances agreed on one signing key.
    const keys = await query<{ kid: string }>(one, sql`SELECT kid FROM signing_keys`);
    expect(keys.length).toBe(1);
    const org = await onboard(one);
    expect((await mcpToolsList(two, org.slug, { 'x-api-key': org.apiKey })).status).toBe(200);
    for (const [issuer, verifier] of [
      [one, two],
      [two, one],
    ] as const) {
      const token = await tokenFor(issuer, org.clientId, org.clientSecret);
      expect((await sdk.getOrg({ client: sdkFor(verifier, token).client })).response.status).toBe(200);
    }
  });

  test('an API key revoked on instance 1 is refused on instance 2 at the very next request', async () => {
    verifies('AUTH-APIKEY-REVOKE');
    const org = await onboard(one);
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    const admin = sdkFor(one, token).client;
    const { data: key } = await sdk.createApiKey({ client: admin, throwOnError: true, body: { name: 'shared' } });
    expect((await mcpToolsList(two, org.slug, { 'x-api-key': key.key })).status).toBe(200);
    expect((await sdk.revokeApiKey({ client: admin, path: { keyId: key.id } })).response.status).toBe(200);
    const refused = await mcpToolsList(two, org.slug, { 'x-api-key': key.key });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe('unauthenticated');
    expect((await mcpToolsList(two, org.slug, { 'x-api-key': org.apiKey })).status).toBe(200);
  });

  test('an OAuth client revoked on instance 1: its token is refused on instance 2 at the next request', async () => {
    verifies('AUTH-CLIENT-REVOKE');
    const org = await onboard(one);
    const admin = sdkFor(one, await tokenFor(one, org.clientId, org.clientSecret)).client;
    const { data: client } = await sdk.createOAuthClient({ client: admin, throwOnError: true, body: { name: 'agent', scopes: ['mcp:call'] } });
    const agentToken = await tokenFor(one, client.client_id, client.client_secret);
    expect((await mcpToolsList(two, org.slug, { authorization: `Bearer ${agentToken}` })).status).toBe(200);
    expect((await sdk.revokeOAuthClient({ client: admin, path: { clientId: client.client_id } })).response.status).toBe(200);
    expect((await mcpToolsList(two, org.slug, { authorization: `Bearer ${agentToken}` })).status).toBe(401);
  });
});
