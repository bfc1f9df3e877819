/**
 * Limits on every door (issue 26, item 2): failed sign-ins per client id and source address on /oauth/token, the
 * console and the operator token, REST calls per credential by plan, the MCP 429 as a JSON-RPC error; two gateway
 * instances on one PostgreSQL and Redis, and an instance whose Redis is down. Source addresses are given to each
 * request exactly as src/main.ts does (notePeerAddress).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.ts';
import { AUTH_FAILURE_RULES, createLocalFailureLimiter } from '../src/limits/auth-failures.ts';
import { notePeerAddress, sourceAddressOf, parseTrustedProxies } from '../src/net/source-address.ts';
import { verifies } from './requirements.ts';
import { BASE, freshDatabase, OPERATOR_TOKEN, onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { rpcRaw } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
const hasRedis = await serviceAvailable('redis');

/** A request as the entry point hands it over: with the peer address it came from. */
function from(address: string, request: Request): Request {
  notePeerAddress(request, address);
  return request;
}

function tokenRequest(clientId: string, clientSecret: string, address: string): Request {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  return from(address, new Request(`${BASE}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }));
}

/** A JSON 429 with an integer Retry-After of at least 1; returns its body. */
async function expect429(response: Response): Promise<any> {
  expect(response.status).toBe(429);
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  return response.json();
}

/** Waits for the start of the next wall-clock second, so a burst lands inside one fresh window. */
async function startOfSecond(): Promise<void> {
  await Bun.sleep(1000 - (Date.now() % 1000) + 5);
}

/**
 * Sends `count` calls at once at the start of a second, and returns their answers once all of them were sent and
 * answered within that one second (so all were counted in one fixed window); on a loaded machine a burst can spill
 * into the next second, and is then sent again in a later one (at most five times).
 */
async function burstInOneSecond(count: number, send: (i: number) => Promise<Response>): Promise<Response[]> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await startOfSecond();
    const second = Math.floor(Date.now() / 1000);
    const answers = await Promise.all(Array.from({ length: count }, (_, i) => send(i)));
    if (Math.floor(Date.now() / 1000) === second) return answers;
  }
  throw new Error(`no burst of ${count} calls fit in one second`);
}

describe('source address (unit)', () => {
  const plain = (peer: string, xff?: string) => from(peer, new Request(`${BASE}/x`, { headers: xff ? { 'x-forwarded-for': xff } : {} }));

  test('the direct peer counts; X-Forwarded-For is ignored unless the peer is a trusted proxy', () => {
    expect(sourceAddressOf(plain('198.51.100.7', '203.0.113.9'), [])).toBe('198.51.100.7');
    expect(sourceAddressOf(new Request(`${BASE}/x`), [])).toBe('unknown');
    const proxies = parseTrustedProxies(['10.0.0.0/8', '192.168.1.5']);
    // Behind the proxy: the nearest hop that is not a trusted proxy; what the client wrote to the left is ignored.
    expect(sourceAddressOf(plain('10.1.2.3', '1.1.1.1, 203.0.113.9, 10.9.9.9'), proxies)).toBe('203.0.113.9');
    expect(sourceAddressOf(plain('192.168.1.6', '203.0.113.9'), proxies)).toBe('192.168.1.6');
  });

  test('IPv4-mapped IPv6 is the IPv4 address; IPv6 counts by its /64', () => {
    expect(sourceAddressOf(plain('::ffff:198.51.100.7'), [])).toBe('198.51.100.7');
    expect(sourceAddressOf(plain('2001:db8:1:2:aaaa::1'), [])).toBe(sourceAddressOf(plain('2001:db8:1:2:bbbb::9'), []));
    expect(sourceAddressOf(plain('2001:db8:1:2::1'), [])).not.toBe(sourceAddressOf(plain('2001:db8:1:3::1'), []));
  });

  test('TOOLGATE_TRUSTED_PROXIES is checked at start', () => {
    expect(() => loadConfig({ TOOLGATE_TRUSTED_PROXIES: 'proxy.internal' })).toThrow(/TOOLGATE_TRUSTED_PROXIES/);
    expect(() => loadConfig({ TOOLGATE_TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TOOLGATE_TRUSTED_PROXIES/);
    expect(loadConfig({ TOOLGATE_TRUSTED_PROXIES: '10.0.0.0/8, ::1' }).trustedProxies).toHaveLength(2);
  });
});

describe('failed-sign-in arithmetic (unit, in-process counts)', () => {
  test('locks escalate 30 s, 60 s, ... and expire; the per-client cap never applies to a known address', async () => {
    verifies('LIMIT-AUTH-NO-LOCKOUT');
    let now = 1_000_000;
    const limiter = createLocalFailureLimiter('unit', () => now);
    const pair = { client: 'oauth:c1', address: '198.51.100.1' };
    const fail = async (s: typeof pair) => {
      const d = await limiter.begin(s);
      if (d.allowed) await limiter.failed(s);
      return d;
    };
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await fail(pair)).allowed).toBe(true);
    expect(await limiter.begin(pair)).toEqual({ allowed: false, bucket: 'pair', retryAfterSeconds: 30 });
    now += 30_000;
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await fail(pair)).allowed).toBe(true);
    // The second lock within the hour is twice as long.
    expect(await limiter.begin(pair)).toEqual({ allowed: false, bucket: 'pair', retryAfterSeconds: 60 });
    now += 60_000;
    // A success at the pair clears it.
    expect((await limiter.begin(pair)).allowed).toBe(true);
    await limiter.succeeded(pair);

    // The client signed in from `known`; failures for it from many other addresses reach the per-client cap.
    const known = { client: 'oauth:c2', address: '198.51.100.2' };
    expect((await limiter.begin(known)).allowed).toBe(true);
    await limiter.succeeded(known);
    for (let i = 0; i < AUTH_FAILURE_RULES.client.limit; i++) await fail({ client: 'oauth:c2', address: `203.0.113.${i % 250}:${i}` });
    const stranger = await limiter.begin({ client: 'oauth:c2', address: '198.51.100.3' });
    expect(stranger).toMatchObject({ allowed: false, bucket: 'client' });
    expect((await limiter.begin(known)).allowed).toBe(true);
    await limiter.succeeded(known);
    // It only slows: after its window the new address gets through.
    now += AUTH_FAILURE_RULES.client.lockSeconds * 1000;
    expect((await limiter.begin({ client: 'oauth:c2', address: '198.51.100.3' })).allowed).toBe(true);
  });
});

describe.skipIf(!hasPg || !hasRedis)('two instances on one Redis', () => {
  let store: { url: string; drop: () => Promise<void> };
  let one: TestGateway;
  let two: TestGateway;
  const prefix = `tgtest_doors_${Date.now().toString(36)}`;
  let n = 0;
  /** A fresh address per test, so tests do not share per-address counts. */
  const address = () => `198.18.${Math.floor(n / 250)}.${(n++ % 250) + 1}`;
  const either = (i: number) => (i % 2 ? one : two);

  beforeAll(async () => {
    store = await freshDatabase();
    const env = { REDIS_URL: 'redis://127.0.0.1:6379' };
    one = await startTestGateway('postgres', env, store.url, { limitsKeyPrefix: prefix });
    two = await startTestGateway('postgres', env, store.url, { limitsKeyPrefix: prefix });
    await Bun.sleep(300);
    expect(one.deps.authFailures.mode()).toBe('shared');
  }, 60_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await store?.drop();
  }, 30_000);

  test('/oauth/token: failures per (client id, address) lock that pair across instances; the client still gets a token from its own address', async () => {
    verifies('LIMIT-AUTH-FAILURES', 'LIMIT-AUTH-NO-LOCKOUT');
    const org = await onboard(one);
    const attacker = address();
    const legitimate = address();
    // Concurrent wrong secrets over both instances: exactly `limit` are checked, the rest refused unchecked.
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => either(i).handle(tokenRequest(org.clientId, 'wrong-secret', attacker))));
    expect(answers.filter((a) => a.status === 401).length).toBe(AUTH_FAILURE_RULES.pair.limit);
    expect(answers.filter((a) => a.status === 429).length).toBe(8 - AUTH_FAILURE_RULES.pair.limit);
    // Now locked: even the right secret is refused from there (nothing is checked while locked).
    const body = await expect429(await two.handle(tokenRequest(org.clientId, org.clientSecret, attacker)));
    expect(body).toMatchObject({ error: 'rate_limited', error_description: expect.stringContaining('this client from this address') });
    // The legitimate client, at its own address, on either instance.
    expect((await one.handle(tokenRequest(org.clientId, org.clientSecret, legitimate))).status).toBe(200);
    expect((await two.handle(tokenRequest(org.clientId, org.clientSecret, legitimate))).status).toBe(200);
    // The refusal is in the org's audit log.
    await one.deps.audit.drain();
    await two.deps.audit.drain();
    const rows = await one.deps.store.db.execute(
      sql`SELECT details->>'status' AS status FROM audit_events WHERE org_id = ${org.orgId} AND action = 'rate_limit.refused'`,
    );
    expect((rows as unknown as { status: string }[]).length).toBeGreaterThanOrEqual(1);
  });

  test('concurrent right credentials from one address are all answered: token requests and operator calls past every bucket limit', async () => {
    verifies('LIMIT-AUTH-NO-LOCKOUT');
    // Each attempt is reserved while it is checked (so a guesser's concurrent attempts cannot all be checked); one that
    // finds the bucket full of attempts in flight waits for their verdicts instead of being refused.
    const org = await onboard(one);
    const office = address();
    const tokens = await Promise.all(Array.from({ length: 40 }, (_, i) => either(i).handle(tokenRequest(org.clientId, org.clientSecret, office))));
    expect(tokens.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
    const operatorAt = address();
    const listed = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        either(i).handle(from(operatorAt, new Request(`${BASE}/operator/orgs?limit=1`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }))),
      ),
    );
    expect(listed.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
    // Wrong and right secrets at once from another address: still at most `limit` wrong ones are checked.
    const mixed = address();
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) => either(i).handle(tokenRequest(org.clientId, i % 2 ? org.clientSecret : 'wrong-secret', mixed))),
    );
    expect(answers.some((a) => a.status >= 500)).toBe(false);
    expect(answers.filter((a, i) => i % 2 === 0 && a.status === 401).length).toBeLessThanOrEqual(AUTH_FAILURE_RULES.pair.limit);
    expect(answers.every((a) => [200, 401, 429].includes(a.status))).toBe(true);
  });

  test('/oauth/token: one address naming many client ids is locked as an address; other addresses are not', async () => {
    verifies('LIMIT-AUTH-FAILURES');
    const org = await onboard(one);
    const sprayer = address();
    for (let i = 0; i < AUTH_FAILURE_RULES.address.limit; i++) {
      expect((await either(i).handle(tokenRequest(`tgc_unknown${i}`, 'nope', sprayer))).status).toBe(401);
    }
    const body = await expect429(await one.handle(tokenRequest(org.clientId, org.clientSecret, sprayer)));
    expect(body.error_description).toContain('from this address');
    expect((await two.handle(tokenRequest(org.clientId, org.clientSecret, address()))).status).toBe(200);
  });

  test('/oauth/token: failures spread over many addresses slow the client at new addresses, never at one it signed in from', async () => {
    verifies('LIMIT-AUTH-NO-LOCKOUT');
    const org = await onboard(one);
    const home = address();
    expect((await one.handle(tokenRequest(org.clientId, org.clientSecret, home))).status).toBe(200);
    for (let i = 0; i < AUTH_FAILURE_RULES.client.limit; i++) {
      expect((await either(i).handle(tokenRequest(org.clientId, 'guess', address()))).status).toBe(401);
    }
    const body = await expect429(await two.handle(tokenRequest(org.clientId, org.clientSecret, address())));
    expect(body.error_description).toContain('for this client');
    expect((await two.handle(tokenRequest(org.clientId, org.clientSecret, home))).status).toBe(200);
  });

  test('console sign-in with an OAuth client: failures count against the browser address, across instances', async () => {
    verifies('LIMIT-AUTH-FAILURES', 'LIMIT-AUTH-NO-LOCKOUT');
    const org = await onboard(one);
    const signIn = (g: TestGateway, secret: string, at: string) =>
      g.handle(
        from(
          at,
          new Request(`${BASE}/console/auth/client`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ client_id: org.clientId, client_secret: secret }),
          }),
        ),
      );
    const attacker = address();
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await signIn(either(i), 'wrong', attacker)).status).toBe(401);
    const body = await expect429(await signIn(one, org.clientSecret, attacker));
    expect(body).toEqual({ error: 'rate_limited', message: expect.stringContaining('retry after') });
    // The same client through /oauth/token from that address is locked too: one count for both doors.
    await expect429(await two.handle(tokenRequest(org.clientId, org.clientSecret, attacker)));
    expect((await signIn(two, org.clientSecret, address())).status).toBe(200);
  });

  test('console sign-in with the IdP: failed callbacks from one address are refused with 429, across instances', async () => {
    verifies('LIMIT-AUTH-FAILURES');
    const callback = (g: TestGateway, at: string) => g.handle(from(at, new Request(`${BASE}/console/auth/callback?state=forged&code=forged`)));
    const attacker = address();
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await callback(either(i), attacker)).status).toBe(400);
    const refused = await callback(one, attacker);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused.text()).toContain('Too many failed sign-in attempts');
    expect((await callback(two, address())).status).toBe(400);
  });

  test('REST: N+1 concurrent calls of one credential against its plan limit N, over two instances: exactly N pass', async () => {
    verifies('LIMIT-REST-PER-CREDENTIAL');
    const org = await onboard(one, undefined, 'starter');
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    const get = (g: TestGateway) => g.handle(new Request(`${BASE}/api/org`, { headers: { authorization: `Bearer ${token}` } }));
    // Warm each instance's plan lookup, then start a fresh window.
    await get(one);
    await get(two);
    const answers = await burstInOneSecond(21, (i) => get(either(i)));
    expect(answers.filter((a) => a.status === 200).length).toBe(20);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBe(1);
    expect(await expect429(limited[0]!)).toMatchObject({ error: 'rate_limited' });
    await one.deps.audit.drain();
    await two.deps.audit.drain();
    const rows = await one.deps.store.db.execute(sql`SELECT 1 FROM audit_events WHERE org_id = ${org.orgId} AND action = 'rate_limit.refused'`);
    expect((rows as unknown[]).length).toBeGreaterThanOrEqual(1);
    // The next second admits again.
    await Bun.sleep(1000);
    expect((await get(two)).status).toBe(200);
  });

  test('MCP: the 429 is a JSON-RPC error with the request id (each id for a batch), with Retry-After', async () => {
    verifies('LIMIT-MCP-429-JSONRPC', 'LIMIT-BURST-429');
    const org = await onboard(one, undefined, 'enterprise', 2);
    const send = (id: unknown) => rpcRaw(one, org.slug, { apiKey: org.apiKey }, JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
    await startOfSecond();
    const answers = await Promise.all([send('a-1'), send('a-2'), send('a-3')]);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBe(1);
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited[0]!.body).toEqual({
      jsonrpc: '2.0',
      id: expect.stringMatching(/^a-\d$/),
      error: { code: -32029, message: expect.stringContaining('burst limit') },
    });
    await Bun.sleep(1000);
    const batch = [1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'ping' }));
    const answer = await rpcRaw(one, org.slug, { apiKey: org.apiKey }, JSON.stringify(batch));
    expect(answer.status).toBe(429);
    expect(answer.body.map((e: any) => [e.id, e.error.code])).toEqual([
      [1, -32029],
      [2, -32029],
      [3, -32029],
    ]);
  });

  test('the operator token is a door too: wrong tokens from one address are refused with 429, not from another', async () => {
    verifies('LIMIT-AUTH-FAILURES');
    const attacker = address();
    const create = (token: string, at: string) =>
      one.handle(
        from(
          at,
          new Request(`${BASE}/operator/orgs`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            body: JSON.stringify({ slug: `op-${Date.now().toString(36)}-${n++}`, name: 'x', plan: 'starter' }),
          }),
        ),
      );
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await create('wrong-operator-token-0123456789', attacker)).status).toBe(401);
    await expect429(await create(OPERATOR_TOKEN, attacker));
    expect((await create(OPERATOR_TOKEN, address())).status).toBe(201);
  });
});

describe('Redis down: the limits fall back to per-instance counts, no 5xx', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startTestGateway('pglite', { REDIS_URL: 'redis://127.0.0.1:1' }, undefined, { limitsKeyPrefix: `tgtest_down_${Date.now().toString(36)}` });
  }, 60_000);
  afterAll(async () => g?.close(), 30_000);

  test('failed sign-ins and REST calls are still limited', async () => {
    verifies('LIMIT-REDIS-DOWN', 'LIMIT-AUTH-FAILURES', 'LIMIT-REST-PER-CREDENTIAL');
    expect(g.deps.authFailures.mode()).toBe('fallback');
    const org = await onboard(g, undefined, 'starter');
    const at = '198.51.100.77';
    const answers = [];
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit + 2; i++) answers.push(await g.handle(tokenRequest(org.clientId, 'wrong', at)));
    expect(answers.some((a) => a.status >= 500)).toBe(false);
    expect(answers.filter((a) => a.status === 401).length).toBe(AUTH_FAILURE_RULES.pair.limit);
    await expect429(answers.at(-1)!);
    expect((await g.handle(tokenRequest(org.clientId, org.clientSecret, '198.51.100.78'))).status).toBe(200);

    const token = await tokenFor(g, org.clientId, org.clientSecret);
    await g.handle(new Request(`${BASE}/api/org`, { headers: { authorization: `Bearer ${token}` } }));
    const rest = await burstInOneSecond(22, () => g.handle(new Request(`${BASE}/api/org`, { headers: { authorization: `Bearer ${token}` } })));
    expect(rest.some((a) => a.status >= 500)).toBe(false);
    expect(rest.filter((a) => a.status === 200).length).toBe(20);
    expect(rest.filter((a) => a.status === 429).length).toBe(2);
  });
});
