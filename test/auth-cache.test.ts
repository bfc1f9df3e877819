// The MCP endpoint's credential cache (mcp/auth-cache.ts, auth/epoch.ts) on real parts: two gateway instances on one
// PostgreSQL store and one Redis. Each test first proves that the instance under test answers from its cache (its
// hit counter moves, or a change written behind the gateways' back is not seen), then that a change made through
// the other instance is seen by the very next request; and that without a usable shared epoch nothing is cached.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { revalidateConnector } from '../src/connectors/service.ts';
import { hashSecret } from '../src/util/crypto.ts';
import { McpAuthCache } from '../src/mcp/auth-cache.ts';
import type { AuthEpoch } from '../src/auth/epoch.ts';
import { verifies } from './requirements.ts';
import { api, freshDatabase, onboard, OPERATOR_TOKEN, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector, listToolNames, restTools, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { REDIS_URL, serviceAvailable } from './support/services.ts';
import { createTargets, deadPort, tcpProxy, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('redis'));

/** tools/list with an API key: the HTTP status (200, or 401 when the key is refused). */
async function listStatus(g: TestGateway, slug: string, apiKey: string): Promise<number> {
  return (await rpc(g, slug, { apiKey }, 'tools/list', {})).status;
}

/** Sends tools/list until one is answered from `g`'s cache (a few requests: the first ones learn the epoch). */
async function warm(g: TestGateway, slug: string, apiKey: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const hits = g.deps.authCache.stats.hits;
    expect(await listStatus(g, slug, apiKey)).toBe(200);
    if (g.deps.authCache.stats.hits > hits) return;
    if (i >= 5) await Bun.sleep(20); // a Redis client still connecting
  }
  throw new Error('no request was answered from the cache');
}

/** Revokes a key in the store directly: no gateway, so no new epoch (what a lost epoch write would look like). */
async function revokeBehindTheBack(g: TestGateway, apiKey: string): Promise<void> {
  await g.deps.store.db.execute(sql`UPDATE api_keys SET revoked_at = now() WHERE key_hash = ${hashSecret(apiKey)}`);
}

async function newKey(g: TestGateway, token: string): Promise<{ id: string; key: string }> {
  const { data } = await sdk.createApiKey({ client: sdkFor(g, token).client, throwOnError: true, body: { name: `k-${randomUUID().slice(0, 8)}` } });
  return { id: data.id, key: data.key };
}

describe.skipIf(!available)('two instances sharing PostgreSQL and Redis', () => {
  let store: { url: string; drop: () => Promise<void> };
  let t: Targets;
  let a: TestGateway;
  let b: TestGateway;
  let org: Onboarded;
  let token: string;
  const epochKey = `toolgate:auth-epoch:test:${randomUUID()}`;
  const redis = createClient({ url: REDIS_URL });

  beforeAll(async () => {
    [store, t] = await Promise.all([freshDatabase('tg_authcache'), createTargets('tg_authcache', 'pg')]);
    await redis.connect();
    a = await startTestGateway('postgres', { REDIS_URL }, store.url, { authEpochKey: epochKey });
    b = await startTestGateway('postgres', { REDIS_URL }, store.url, { authEpochKey: epochKey });
    org = await onboard(a);
    token = await tokenFor(a, org.clientId, org.clientSecret);
    await createConnector(a, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis.del(epochKey).catch(() => {});
    await redis.close().catch(() => {});
    await store?.drop();
    await t?.drop();
  }, 60_000);

  test('a key revoked through instance A is refused by the very next request on instance B, which had it cached', async () => {
    verifies('AUTH-APIKEY-REVOKE', 'AUTH-CACHE-EPOCH');
    const key = await newKey(a, token);
    await warm(b, org.slug, key.key);
    const misses = b.deps.authCache.stats.misses;
    expect((await sdk.revokeApiKey({ client: sdkFor(a, token).client, path: { keyId: key.id } })).response.status).toBe(200);
    expect(await listStatus(b, org.slug, key.key)).toBe(401);
    expect(b.deps.authCache.stats.misses).toBe(misses + 1);
    // The org's other key is unaffected, and cached again.
    await warm(b, org.slug, org.apiKey);
  });

  test('a change written without a new epoch is not seen while cached: the epoch is what instances rely on', async () => {
    verifies('AUTH-CACHE-EPOCH');
    const key = await newKey(a, token);
    await warm(b, org.slug, key.key);
    await revokeBehindTheBack(a, key.key);
    expect(await listStatus(b, org.slug, key.key)).toBe(200);
    // Any management write through A sets a new epoch (here: a key created), and B drops what it cached.
    await newKey(a, token);
    expect(await listStatus(b, org.slug, key.key)).toBe(401);
  });

  test('a tool disabled through A is gone from the next tools/list on B, by API key and by bearer token', async () => {
    verifies('TOOLS-MULTI-INSTANCE', 'AUTH-CACHE-EPOCH');
    const mcpToken = await tokenFor(a, org.clientId, org.clientSecret, 'mcp:call');
    const tool = (await restTools(a, token, org.orgId)).find((x) => x.tool_name === 'query_postgresql_items')!;
    await warm(b, org.slug, org.apiKey);
    expect(await listToolNames(b, org.slug, { apiKey: org.apiKey })).toContain('query_postgresql_items');
    const hits = b.deps.authCache.stats.hits;
    expect(await listToolNames(b, org.slug, { token: mcpToken })).toContain('query_postgresql_items');
    expect(await listToolNames(b, org.slug, { token: mcpToken })).toContain('query_postgresql_items');
    expect(b.deps.authCache.stats.hits).toBeGreaterThan(hits);
    const patched = await sdk.updateToolMetadata({ client: sdkFor(a, token).client, path: { orgId: org.orgId, toolId: tool.id }, body: { enabled: false } });
    expect(patched.response.status).toBe(200);
    expect(await listToolNames(b, org.slug, { apiKey: org.apiKey })).not.toContain('query_postgresql_items');
    expect(await listToolNames(b, org.slug, { token: mcpToken })).not.toContain('query_postgresql_items');
    await sdk.updateToolMetadata({ client: sdkFor(a, token).client, path: { orgId: org.orgId, toolId: tool.id }, body: { enabled: true } });
    expect(await listToolNames(b, org.slug, { apiKey: org.apiKey })).toContain('query_postgresql_items');
  });

  test('a catalog change made by a background validation (not a REST write) reaches B, which had the org cached', async () => {
    verifies('AUTH-CACHE-EPOCH');
    const [connector] = (await sdk.listConnectors({ client: sdkFor(a, token).client, throwOnError: true })).data.connectors;
    await t.pg('CREATE TABLE IF NOT EXISTS late_table (id integer PRIMARY KEY)');
    await warm(b, org.slug, org.apiKey);
    expect(await listToolNames(b, org.slug, { apiKey: org.apiKey })).not.toContain('query_postgresql_late_table');
    // The domain call, not the REST route: only the validation's own signal can tell B.
    await revalidateConnector(a.deps, org.orgId, connector!.id, { type: 'system', id: null });
    await a.deps.jobs.idle();
    expect(await listToolNames(b, org.slug, { apiKey: org.apiKey })).toContain('query_postgresql_late_table');
  });

  test('an epoch lost with a Redis flush never lets an entry of the old epoch match again', async () => {
    verifies('AUTH-CACHE-EPOCH');
    /** What FLUSHALL or a restart without persistence does to the key; the next reader (on A) sets a new epoch. */
    async function flushAndReinitializeOnA(): Promise<string> {
      await redis.del(epochKey);
      expect(await listStatus(a, org.slug, org.apiKey)).toBe(200);
      for (let i = 0; i < 50 && (await redis.get(epochKey)) === null; i++) await Bun.sleep(10);
      const token = await redis.get(epochKey);
      expect(token).not.toBeNull();
      return token!;
    }
    const first = await flushAndReinitializeOnA();
    const key = await newKey(a, token); // a write: a new epoch ...
    const afterWrite = await flushAndReinitializeOnA(); // ... lost with the next flush
    expect(afterWrite).not.toBe(first);
    await warm(b, org.slug, key.key);
    await revokeBehindTheBack(a, key.key);
    // B never sees the key missing: A sets the new epoch before B's next read. Had the first reader after a flush
    // set a predictable value (a counter restarting at 1), it would equal the one B's entry was filled under.
    const afterFlush = await flushAndReinitializeOnA();
    expect(afterFlush).not.toBe(afterWrite);
    expect(await listStatus(b, org.slug, key.key)).toBe(401);
    // Caching resumes under the new epoch.
    await warm(b, org.slug, org.apiKey);
  });

  test('Redis failing at request time: B answers from the store, never from what it cached', async () => {
    verifies('AUTH-CACHE-FAIL-CLOSED');
    const proxy = await tcpProxy('127.0.0.1', Number(new URL(REDIS_URL).port || 6379));
    const viaProxy = await startTestGateway('postgres', { REDIS_URL: `redis://127.0.0.1:${proxy.port}` }, store.url, { authEpochKey: epochKey });
    try {
      for (let i = 0; i < 50 && viaProxy.deps.limiter.mode?.() !== 'shared'; i++) await Bun.sleep(20);
      const key = await newKey(a, token);
      await warm(viaProxy, org.slug, key.key);
      await revokeBehindTheBack(a, key.key);
      expect(await listStatus(viaProxy, org.slug, key.key)).toBe(200); // cached: the revocation is not seen yet
      await proxy.close(); // Redis "goes down" for this instance
      expect(await listStatus(viaProxy, org.slug, key.key)).toBe(401);
      // Valid keys still work, from the store, and nothing is answered from the cache meanwhile.
      const hits = viaProxy.deps.authCache.stats.hits;
      for (let i = 0; i < 5; i++) expect(await listStatus(viaProxy, org.slug, org.apiKey)).toBe(200);
      expect(viaProxy.deps.authCache.stats.hits).toBe(hits);
    } finally {
      await viaProxy.close();
      await proxy.close().catch(() => {});
    }
  });

  test('Redis unreachable from the start: every request is checked in the store, a revocation through another instance included', async () => {
    verifies('AUTH-CACHE-FAIL-CLOSED', 'AUTH-APIKEY-REVOKE');
    const dead = `redis://127.0.0.1:${await deadPort()}`;
    const c = await startTestGateway('postgres', { REDIS_URL: dead }, store.url);
    const d = await startTestGateway('postgres', { REDIS_URL: dead }, store.url);
    try {
      const key = await newKey(c, token);
      for (let i = 0; i < 5; i++) expect(await listStatus(d, org.slug, key.key)).toBe(200);
      expect(d.deps.authCache.stats.hits).toBe(0);
      expect((await sdk.revokeApiKey({ client: sdkFor(c, token).client, path: { keyId: key.id } })).response.status).toBe(200);
      expect(await listStatus(d, org.slug, key.key)).toBe(401);
      const other = await newKey(c, token);
      expect(await listStatus(d, org.slug, other.key)).toBe(200);
      await revokeBehindTheBack(c, other.key);
      expect(await listStatus(d, org.slug, other.key)).toBe(401);
    } finally {
      await c.close();
      await d.close();
    }
  });

  test('TOOLGATE_AUTH_CACHE_TTL_MS=0 turns the cache off; a short TTL bounds what a lost epoch leaves stale', async () => {
    verifies('AUTH-CACHE-TTL');
    const off = await startTestGateway('postgres', { REDIS_URL, TOOLGATE_AUTH_CACHE_TTL_MS: '0' }, store.url, { authEpochKey: epochKey });
    const short = await startTestGateway('postgres', { REDIS_URL, TOOLGATE_AUTH_CACHE_TTL_MS: '400' }, store.url, { authEpochKey: epochKey });
    try {
      const key = await newKey(a, token);
      for (let i = 0; i < 5; i++) expect(await listStatus(off, org.slug, key.key)).toBe(200);
      expect(off.deps.authCache.stats.hits).toBe(0);
      await warm(short, org.slug, key.key);
      await revokeBehindTheBack(a, key.key);
      expect(await listStatus(off, org.slug, key.key)).toBe(401);
      expect(await listStatus(short, org.slug, key.key)).toBe(200); // no new epoch: stale until the entry expires
      await Bun.sleep(450);
      expect(await listStatus(short, org.slug, key.key)).toBe(401);
      // An instance without a cache still tells the others: its writes set a new epoch.
      const other = await newKey(a, token);
      await warm(b, org.slug, other.key);
      const otherId = other.id;
      expect((await sdk.revokeApiKey({ client: sdkFor(off, token).client, path: { keyId: otherId } })).response.status).toBe(200);
      expect(await listStatus(b, org.slug, other.key)).toBe(401);
    } finally {
      await off.close();
      await short.close();
    }
  });

  test('PostgreSQL store without Redis: no cache (instances could not tell each other)', async () => {
    verifies('AUTH-CACHE-FAIL-CLOSED');
    const plain = await startTestGateway('postgres', {}, store.url);
    try {
      expect(plain.deps.authCache.enabled).toBe(false);
      const key = await newKey(a, token);
      for (let i = 0; i < 5; i++) expect(await listStatus(plain, org.slug, key.key)).toBe(200);
      expect(plain.deps.authCache.stats.hits).toBe(0);
      await revokeBehindTheBack(a, key.key);
      expect(await listStatus(plain, org.slug, key.key)).toBe(401);
    } finally {
      await plain.close();
    }
  });
});

describe('embedded store without Redis: an in-process epoch', () => {
  let g: TestGateway;
  let org: Onboarded;
  let token: string;
  beforeAll(async () => {
    g = await startTestGateway('pglite');
    org = await onboard(g);
    token = await tokenFor(g, org.clientId, org.clientSecret);
  });
  afterAll(async () => {
    await g?.close();
  });

  test('cached, and a key revoked through the REST API is refused by the next request', async () => {
    verifies('AUTH-APIKEY-REVOKE', 'AUTH-CACHE-EPOCH');
    const key = await newKey(g, token);
    await warm(g, org.slug, key.key);
    // Cached: a change behind the gateway's back is not seen ...
    await revokeBehindTheBack(g, key.key);
    expect(await listStatus(g, org.slug, key.key)).toBe(200);
    // ... and one through the API is, at once.
    const other = await newKey(g, token);
    await warm(g, org.slug, other.key);
    expect((await sdk.revokeApiKey({ client: sdkFor(g, token).client, path: { keyId: other.id } })).response.status).toBe(200);
    expect(await listStatus(g, org.slug, other.key)).toBe(401);
    expect(await listStatus(g, org.slug, key.key)).toBe(401);
    // The hits and misses are on /metrics.
    const metrics = await (await api(g, 'GET', '/metrics', OPERATOR_TOKEN)).text();
    expect(metrics).toMatch(/^toolgate_mcp_auth_cache_total\{result="hit"\} [1-9]/m);
    expect(metrics).toMatch(/^toolgate_mcp_auth_cache_total\{result="miss"\} [1-9]/m);
  });
});

/** A shared epoch whose value the test sets (what Redis would hold). */
function fakeEpoch(initial: string | null): AuthEpoch & { value: string | null } {
  const epoch = {
    scope: 'shared' as const,
    value: initial,
    read: async () => epoch.value,
    bump: async () => {
      epoch.value = randomUUID();
    },
    close: async () => {},
  };
  return epoch;
}

/** Lets the epoch read of the current loop turn go out and come back. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1));

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('the cache itself (a fake epoch, a counting loader)', () => {
  test('only found results are cached, at most maxEntries of them, each for its TTL', async () => {
    verifies('AUTH-CACHE-TTL');
    let now = 1_000;
    const cache = new McpAuthCache({ epoch: fakeEpoch('e1'), ttlMs: 100, maxEntries: 3, now: () => now });
    let loads = 0;
    const found = (key: string) => cache.lookup(key, async () => (loads++, { key }));
    const absent = (key: string) => cache.lookup(key, async () => (loads++, undefined));
    await found('warm-up'); // learns the epoch: nothing is filled before one is known
    await settle();
    loads = 0;
    for (let i = 0; i < 3; i++) expect(await absent('nobody')).toBeUndefined();
    expect(loads).toBe(3);
    for (const k of ['a', 'b', 'c', 'd', 'e']) await found(k);
    expect(cache.size).toBe(3);
    loads = 0;
    await found('e');
    await found('d');
    expect(loads).toBe(0);
    await found('a'); // evicted, the oldest
    expect(loads).toBe(1);
    now += 101;
    await found('e');
    expect(loads).toBe(2);
  });

  test('a lookup that started before a change is never reused after it, even when it ends after the new epoch is read', async () => {
    verifies('AUTH-CACHE-EPOCH');
    const epoch = fakeEpoch('e1');
    const cache = new McpAuthCache({ epoch, ttlMs: 60_000 });
    let loads = 0;
    const cached = () => cache.lookup('cached', async () => (loads++, { v: 0 }));
    await cached(); // learns the epoch
    await settle();
    await cached(); // filled under e1
    // A miss whose store lookup reads the old row ...
    const slow = deferred<{ v: number } | undefined>();
    const stale = cache.lookup('k', () => slow.promise);
    // ... while the change commits and its writer sets a new epoch, which a later request reads.
    epoch.value = 'e2';
    await cached();
    slow.resolve({ v: 1 });
    expect(await stale).toEqual({ v: 1 });
    loads = 0;
    expect(await cache.lookup('k', async () => (loads++, { v: 3 }))).toEqual({ v: 3 });
    expect(loads).toBe(1);
    // The refill of `cached` under e2 is used.
    await cached();
    expect(loads).toBe(1);
  });

  test('one epoch read out at a time: a request arriving while a read is out waits for the next one, sent after it', async () => {
    verifies('AUTH-CACHE-EPOCH');
    // An epoch whose reads the test answers: what Redis holds when each read reaches it is the test's to choose.
    let holds = 'e1';
    const out: { resolve: (v: string | null) => void; at: string }[] = [];
    const epoch: AuthEpoch = {
      scope: 'shared',
      read: () => new Promise((resolve) => out.push({ resolve, at: holds })),
      bump: async () => {},
      close: async () => {},
    };
    const answer = async () => {
      const read = out.shift()!;
      read.resolve(read.at);
      await settle();
    };
    const cache = new McpAuthCache({ epoch, ttlMs: 60_000 });
    let loads = 0;
    const look = () => cache.lookup('k', async () => (loads++, { v: loads }));
    const first = look(); // learns the epoch (a miss does not wait for it)
    await settle();
    await answer();
    expect(await first).toEqual({ v: 1 });
    expect(await look()).toEqual({ v: 2 }); // filled under e1 (the first fill had no epoch yet); a miss sends no read
    expect(out.length).toBe(0);
    // r1 arrives; its read goes out after the turn, and reaches Redis while it still holds e1.
    const r1 = look();
    await settle();
    expect(out.length).toBe(1);
    // A writer commits and sets e2 while that read is out; r2 and r3 arrive after the writer answered.
    holds = 'e2';
    const r2 = look();
    await settle();
    const r3 = look();
    await settle();
    expect(out.length).toBe(1); // no second read while one is out
    await answer(); // the read of r1 comes back with e1: r1 may use the entry (its read went out after it arrived)
    expect(await r1).toEqual({ v: 2 });
    expect(out.length).toBe(1); // the read r2 and r3 joined went out at once, after the first came back
    await answer(); // ... and sees e2: neither is answered from the entry of e1
    expect(await r2).not.toEqual({ v: 2 });
    expect(await r3).not.toEqual({ v: 2 });
    expect(loads).toBe(4);
    expect(out.length).toBe(0);
  });

  test('no epoch (unknown, or the read failed): nothing is answered from the cache, and what it held is dropped', async () => {
    verifies('AUTH-CACHE-FAIL-CLOSED');
    const epoch = fakeEpoch('e1');
    const cache = new McpAuthCache({ epoch, ttlMs: 60_000 });
    let loads = 0;
    const look = () => cache.lookup('k', async () => (loads++, { v: loads }));
    await look();
    await settle();
    await look();
    await look();
    expect(cache.stats.hits).toBe(1);
    epoch.value = null;
    const hits = cache.stats.hits;
    for (let i = 0; i < 3; i++) await look();
    expect(cache.stats.hits).toBe(hits);
    expect(cache.size).toBe(0);
  });

  test('without an epoch source, or with a TTL of 0, every lookup loads', async () => {
    verifies('AUTH-CACHE-TTL');
    for (const cache of [new McpAuthCache({ epoch: null, ttlMs: 5000 }), new McpAuthCache({ epoch: fakeEpoch('e1'), ttlMs: 0 })]) {
      let loads = 0;
      for (let i = 0; i < 4; i++) await cache.lookup('k', async () => (loads++, { v: 1 }));
      expect(loads).toBe(4);
      expect(cache.enabled).toBe(false);
    }
  });
});
