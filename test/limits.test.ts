/**
 * Burst limits and monthly quotas (spec "Limits", checklist "Limits"): exact under concurrency across
 * instances (Redis windows, PostgreSQL counts), a Redis outage falls back without 5xx, the month rolls over.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { LocalWindow } from '../src/limits/burst.ts';
import { periodStart, PLAN_LIMITS } from '../src/limits/plans.ts';
import { consumeToolCall, toolCallsInPeriod } from '../src/limits/quota.ts';
import { getLimits, getOrg } from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { freshDatabase, onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);

const hasPg = await serviceAvailable('postgres');
const hasRedis = await serviceAvailable('redis');

/** Waits for the start of a wall-clock second, so a burst lands inside one window. */
async function startOfSecond(): Promise<void> {
  const ms = Date.now() % 1000;
  if (ms > 50) await Bun.sleep(1000 - ms + 5);
}

describe('burst window arithmetic (unit)', () => {
  test('a fixed one-second window admits exactly the limit and resets on the next second', () => {
    let now = 10_000;
    const window = new LocalWindow(() => now);
    const first = Array.from({ length: 25 }, () => window.take('org', 20));
    expect(first.filter((d) => d.allowed).length).toBe(20);
    expect(first.every((d) => d.retryAfterSeconds >= 1)).toBe(true);
    expect(window.take('other-org', 20).allowed).toBe(true);
    now += 1000;
    expect(window.take('org', 20).allowed).toBe(true);
  });

  test('plans carry the spec figures', () => {
    verifies('LIMIT-PLAN-FIGURES');
    expect(PLAN_LIMITS.starter).toMatchObject({ monthlyToolCalls: 20_000, burstPerSecond: 20 });
    expect(PLAN_LIMITS.growth).toMatchObject({ monthlyToolCalls: 50_000, burstPerSecond: 50 });
    expect(PLAN_LIMITS.scale).toMatchObject({ monthlyToolCalls: null, burstPerSecond: 100 });
    expect(periodStart(new Date('2026-02-28T23:59:59Z'))).toBe('2026-02-01');
  });
});

describe('burst limit on the MCP endpoint', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startTestGateway('pglite');
  }, 60_000);
  afterAll(async () => g?.close(), 30_000);

  test('a starter org gets 20 calls per second; the rest is 429 with an integer Retry-After of at least 1', async () => {
    verifies('LIMIT-BURST-429');
    const org = await onboard(g, undefined, 'starter');
    await startOfSecond();
    const answers = await Promise.all(Array.from({ length: 25 }, () => rpc(g, org.slug, { apiKey: org.apiKey }, 'tools/list')));
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200).length).toBe(20);
    expect(limited.length).toBe(5);
    for (const answer of limited) {
      expect(Number.isInteger(Number(answer.headers.get('retry-after')))).toBe(true);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // A JSON-RPC error response with the request's id, not a REST body.
      expect(answer.body).toEqual({ jsonrpc: '2.0', id: expect.any(Number), error: { code: -32029, message: expect.stringContaining('burst limit') } });
    }
    // The next second admits calls again.
    await Bun.sleep(1000);
    expect((await rpc(g, org.slug, { apiKey: org.apiKey }, 'ping')).status).toBe(200);
  });

  test('a custom burst limit of an enterprise org is applied and reported', async () => {
    verifies('LIMIT-PLAN-FIGURES');
    const org = await onboard(g, undefined, 'enterprise', 3);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const me = await getOrg({ client: sdkFor(g, token).client, throwOnError: true });
    expect(me.data.burst_limit_per_second).toBe(3);
    await startOfSecond();
    const answers = await Promise.all(Array.from({ length: 5 }, () => rpc(g, org.slug, { apiKey: org.apiKey }, 'ping')));
    expect(answers.filter((a) => a.status === 200).length).toBe(3);
  });

  test("an operator's burst figure overrides a starter org's plan figure (20), and is what the org is told", async () => {
    verifies('LIMIT-PLAN-FIGURES');
    const org = await onboard(g, undefined, 'starter', 2);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const client = sdkFor(g, token).client;
    expect((await getOrg({ client, throwOnError: true })).data.burst_limit_per_second).toBe(2);
    const limits = await getLimits({ client, throwOnError: true });
    expect(limits.data).toMatchObject({ plan: 'starter', burst_limit_per_second: 2, monthly_tool_calls: 20_000 });
    await startOfSecond();
    const answers = await Promise.all(Array.from({ length: 5 }, () => rpc(g, org.slug, { apiKey: org.apiKey }, 'ping')));
    expect(answers.filter((a) => a.status === 200).length).toBe(2);
    expect(answers.filter((a) => a.status === 429).length).toBe(3);
  });
});

describe.skipIf(!hasPg || !hasRedis)('shared limits across instances (PostgreSQL store, Redis windows)', () => {
  let store: { url: string; drop: () => Promise<void> };
  let one: TestGateway;
  let two: TestGateway;
  let targets: Targets;
  beforeAll(async () => {
    store = await freshDatabase();
    one = await startTestGateway('postgres', { REDIS_URL: 'redis://127.0.0.1:6379' }, store.url);
    two = await startTestGateway('postgres', { REDIS_URL: 'redis://127.0.0.1:6379' }, store.url);
    targets = await createTargets('tg_limits', 'pg');
    // Let both instances' Redis clients connect (they connect in the background at start).
    await Bun.sleep(300);
  }, 60_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await targets?.drop();
    await store?.drop();
  }, 30_000);

  test('N+1 concurrent calls against a limit of N, spread over two instances: exactly N pass', async () => {
    verifies('LIMIT-BURST-MULTI-INSTANCE');
    const org = await onboard(one, undefined, 'starter');
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    await createConnector(one, token, { name: 'burst', type: 'postgresql', config: targets.pgConfig });
    // Each instance alone sees about half the calls, well under its own window: only the shared count can refuse one.
    // The burst must land in one window: on a loaded machine one that spills into the next second (two windows, so
    // all 21 may pass) is sent again in a later second, at most five times (as test/limits-doors.test.ts does).
    let answers: Awaited<ReturnType<typeof callTool>>[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      await startOfSecond();
      const second = Math.floor(Date.now() / 1000);
      answers = await Promise.all(
        Array.from({ length: 21 }, (_, i) =>
          callTool(i % 2 ? one : two, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' }),
        ),
      );
      if (Math.floor(Date.now() / 1000) === second) break;
    }
    expect(answers.filter((a) => a.status === 200 && a.body.result && !a.body.result.isError).length).toBe(20);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBe(1);
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  test('concurrent calls at quota-1 on two instances: exactly one runs, the rest get -32000; tools/list does not count', async () => {
    verifies('LIMIT-QUOTA-NO-OVERSHOOT', 'RPC-32000', 'LIMIT-LIST-NOT-COUNTED');
    const org = await onboard(one, undefined, 'starter');
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    const connector = await createConnector(one, token, { name: 'limits', type: 'postgresql', config: targets.pgConfig });
    expect(connector.status).toBe('active');
    await one.deps.store.db.execute(
      sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${org.orgId}, ${periodStart(new Date())}, ${20_000 - 1})`,
    );
    await startOfSecond();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        callTool(i % 2 ? one : two, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' }),
      ),
    );
    const ran = answers.filter((a) => a.body?.result && !a.body.result.isError);
    const refused = answers.filter((a) => a.body?.error?.code === -32000);
    expect(ran.length).toBe(1);
    expect(refused.length).toBe(5);
    expect(refused[0]!.body.error.message).toMatch(/quota exceeded/i);
    expect(refused[0]!.body.error.message).toMatch(/upgrade/i);
    expect(await toolCallsInPeriod(one.deps.store.db, org.orgId)).toBe(20_000);
    // Only tools/call counts: listing still works with the quota used up.
    expect((await rpc(two, org.slug, { apiKey: org.apiKey }, 'tools/list')).status).toBe(200);
  });

  test('a burst across the quota on two instances: exactly the rest of the quota runs, batched; REST usage is exact', async () => {
    verifies('LIMIT-QUOTA-NO-OVERSHOOT', 'LIMIT-QUOTA-BATCHED');
    const org = await onboard(one, undefined, 'growth');
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    await createConnector(one, token, { name: 'burst-quota', type: 'postgresql', config: targets.pgConfig });
    await one.deps.store.db.execute(
      sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${org.orgId}, ${periodStart(new Date())}, ${50_000 - 15})`,
    );
    const before = [one.deps.usage.quotaStats(), two.deps.usage.quotaStats()];
    await startOfSecond();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        callTool(i % 2 ? one : two, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' }),
      ),
    );
    expect(answers.filter((a) => a.body?.result && !a.body.result.isError).length).toBe(15);
    expect(answers.filter((a) => a.body?.error?.code === -32000).length).toBe(25);
    // The 40 increments went to the store in fewer statements than calls.
    const after = [one.deps.usage.quotaStats(), two.deps.usage.quotaStats()];
    const batches = after[0]!.batches + after[1]!.batches - before[0]!.batches - before[1]!.batches;
    expect(after[0]!.calls + after[1]!.calls - before[0]!.calls - before[1]!.calls).toBe(40);
    expect(batches).toBeLessThanOrEqual(20);
    const limits = await getLimits({ client: sdkFor(two, token).client, throwOnError: true });
    expect(limits.data).toMatchObject({ monthly_tool_calls: 50_000, tool_calls_used: 50_000 });
  });

  test('the month rolls over at the period boundary', async () => {
    verifies('LIMIT-QUOTA-ROLLOVER');
    const org = await onboard(one, undefined, 'starter');
    const db = one.deps.store.db;
    const lastSecondOfJanuary = new Date('2026-01-31T23:59:59.999Z');
    await db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${org.orgId}, '2026-01-01', 2)`);
    expect(await consumeToolCall(db, org.orgId, 2, lastSecondOfJanuary)).toBe(false);
    expect(await consumeToolCall(db, org.orgId, 2, new Date('2026-02-01T00:00:00Z'))).toBe(true);
    expect(await toolCallsInPeriod(db, org.orgId, new Date('2026-02-15T00:00:00Z'))).toBe(1);
    expect(await toolCallsInPeriod(db, org.orgId, lastSecondOfJanuary)).toBe(2);
  });

  test('unlimited plans are counted too, without a store write per call', async () => {
    const org = await onboard(one, undefined, 'enterprise');
    const token = await tokenFor(one, org.clientId, org.clientSecret);
    await createConnector(one, token, { name: 'usage', type: 'postgresql', config: targets.pgConfig });
    for (let i = 0; i < 3; i++) {
      const answer = await callTool(one, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' });
      expect(answer.body.result.isError).toBeUndefined();
    }
    expect(await toolCallsInPeriod(one.deps.store.db, org.orgId)).toBe(0);
    await one.deps.usage.flush();
    expect(await toolCallsInPeriod(one.deps.store.db, org.orgId)).toBe(3);
  });
});

describe('Redis down', () => {
  let g: TestGateway;
  beforeAll(async () => {
    // Nothing listens on port 1: the limiter must fall back to a per-instance window.
    g = await startTestGateway('pglite', { REDIS_URL: 'redis://127.0.0.1:1' });
  }, 60_000);
  afterAll(async () => g?.close(), 30_000);

  test('burst limiting falls back to a per-instance limiter, with no 5xx', async () => {
    verifies('LIMIT-REDIS-DOWN');
    const org = await onboard(g, undefined, 'starter');
    await startOfSecond();
    const answers = await Promise.all(Array.from({ length: 22 }, () => rpc(g, org.slug, { apiKey: org.apiKey }, 'ping')));
    expect(answers.some((a) => a.status >= 500)).toBe(false);
    expect(answers.filter((a) => a.status === 200).length).toBe(20);
    expect(answers.filter((a) => a.status === 429).length).toBe(2);
  });
});
