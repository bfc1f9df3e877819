/**
 * Issue 10, billing: subscription, usage and limits (through the generated client), usage equal to the quota counter
 * under concurrent calls on two instances, the per-plan connector limit (also under concurrent creation), and the
 * trial's end at its exact boundary. Real PostgreSQL for the store and the connector target.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { getLimits, getSubscription, getUsage } from '../sdk/index.ts';
import { trialExpired } from '../src/billing/trial.ts';
import { CONNECTOR_LIMITS } from '../src/limits/plans.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('billing.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; the suite is skipped');

const ITEMS = 'query_postgresql_items';

/** The SDK's client for `token` on `gateway` (every response checked against openapi.yaml). */
const clientFor = (gateway: TestGateway, token: string) => sdkFor(gateway, token).client;

describe('trial end (unit)', () => {
  test('the trial ends at trial_expires_at inclusive; active subscriptions never expire this way', () => {
    verifies('BILLING-TRIAL-EXPIRY');
    const end = new Date('2026-03-01T00:00:00.000Z');
    expect(trialExpired({ subscriptionStatus: 'trialing', trialExpiresAt: end }, new Date(end.getTime() - 1))).toBe(false);
    expect(trialExpired({ subscriptionStatus: 'trialing', trialExpiresAt: end }, end)).toBe(true);
    expect(trialExpired({ subscriptionStatus: 'active', trialExpiresAt: end }, new Date(end.getTime() + 1))).toBe(false);
    expect(trialExpired({ subscriptionStatus: 'trialing', trialExpiresAt: null }, end)).toBe(false);
  });
});

describe.skipIf(!hasPg)('billing', () => {
  let g: TestGateway;
  let g2: TestGateway;
  let t: Targets;
  beforeAll(async () => {
    t = await createTargets('tg_billing', 'pg');
    g = await startTestGateway('postgres');
    // A second instance on the same store: usage must add up across instances.
    g2 = await startTestGateway('postgres', {}, g.databaseUrl!);
  }, 120_000);
  afterAll(async () => {
    await g2?.close();
    await g?.close();
    await t?.drop();
  }, 60_000);

  test('subscription, usage and limits: usage is the quota counter, also with concurrent calls on two instances', async () => {
    verifies('BILLING-ENDPOINTS');
    const org = await onboard(g, undefined, 'growth');
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const connector = await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    const client = clientFor(g, token);

    const sub = await getSubscription({ client });
    expect(sub.response.status).toBe(200);
    expect(sub.data).toMatchObject({
      plan: 'growth',
      status: 'trialing',
      price: { currency: 'USD', monthly_base: 14_900, included_tool_calls: 50_000, overage_block: 1000, overage_per_block: 0 },
    });
    expect(Date.parse(sub.data!.trial_expires_at!)).toBeGreaterThan(Date.now());

    // 20 calls per instance at once (growth allows 50 per second per instance window).
    const calls = await Promise.all([
      ...Array.from({ length: 20 }, () => callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: 'SELECT name FROM items' })),
      ...Array.from({ length: 20 }, () => callTool(g2, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: 'SELECT name FROM items' })),
    ]);
    for (const call of calls) expect(call.body.result.isError).toBeFalsy();
    // Refused and built-in calls do not count.
    expectRpcError(await callTool(g, org.slug, { apiKey: org.apiKey }, 'query_postgresql_nope', { sql: 'SELECT 1' }), -32602);
    await callTool(g, org.slug, { apiKey: org.apiKey }, 'check_approval_status', { approvalId: 'x' });

    const usage = await getUsage({ client });
    expect(usage.response.status).toBe(200);
    const now = new Date();
    expect(usage.data).toEqual({
      period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      period_end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      tool_calls: 40,
      by_connector: [{ connector_id: connector.id, connector_name: 'pg', tool_calls: 40 }],
      // The one agent, by its API key's name; a trialing Growth org is charged nothing yet (decision 0392).
      by_agent: [{ agent: { type: 'api_key', id: expect.any(String), name: expect.any(String) }, tool_calls: 40 }],
      charges: {
        priced: true,
        currency: 'USD',
        amount: 0,
        line_items: [
          { kind: 'base', description: 'Growth plan, monthly base', quantity: 1, unit_amount: 14_900, amount: 14_900 },
          { kind: 'credit', description: expect.stringContaining('Trial'), quantity: 1, unit_amount: -14_900, amount: -14_900 },
        ],
      },
    });
    const counter = await g.deps.store.db.execute(sql`SELECT tool_calls FROM usage_counters WHERE org_id = ${org.orgId}`);
    expect(Number((counter as any)[0].tool_calls)).toBe(40);

    const limits = await getLimits({ client: clientFor(g2, token) });
    expect(limits.data).toEqual({
      plan: 'growth',
      connectors_max: 10,
      connectors_used: 1,
      monthly_tool_calls: 50_000,
      tool_calls_used: 40,
      burst_limit_per_second: 50,
    });
  });

  test('the plan limits connectors: the next creation is 409 connector_limit_reached, exactly, under concurrency', async () => {
    verifies('BILLING-CONNECTOR-LIMIT');
    expect(CONNECTOR_LIMITS).toEqual({ starter: 3, growth: 10, scale: 50, enterprise: null, standalone: null });
    const org = await onboard(g, undefined, 'starter');
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const [one, two] = [clientFor(g, token), clientFor(g2, token)];
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        sdk.createConnector({ client: i % 2 ? one : two, body: { name: `pg ${i}`, type: 'postgresql', config: t.pgConfig } }),
      ),
    );
    const statuses = answers.map((r) => r.response.status).sort();
    expect(statuses).toEqual([201, 201, 201, 409, 409, 409]);
    const refused = answers.find((r) => r.response.status === 409)!;
    expect((refused.error as sdk.ToolgateError).body).toEqual({
      error: 'connector_limit_reached',
      message: expect.stringContaining('starter plan allows 3 connectors'),
    });
    await g.deps.jobs.idle();
    await g2.deps.jobs.idle();
    const limits = await getLimits({ client: clientFor(g, token) });
    expect(limits.data).toMatchObject({ connectors_max: 3, connectors_used: 3 });
    // Archiving one makes room again.
    const created = (await sdk.listConnectors({ client: one, throwOnError: true })).data;
    expect((await sdk.archiveConnector({ client: one, path: { connectorId: created.connectors[0]!.id } })).response.status).toBe(200);
    expect((await sdk.createConnector({ client: one, body: { name: 'again', type: 'postgresql', config: t.pgConfig } })).response.status).toBe(201);
    await g.deps.jobs.idle();
  });

  test('at the end of the trial tools/call is refused with -32000 and the subscription reads expired; tools/list still answers', async () => {
    verifies('BILLING-TRIAL-EXPIRY');
    const org = await onboard(g, undefined, 'growth');
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    const end = new Date(Date.now() + 1500);
    await g.deps.store.db.execute(sql`UPDATE orgs SET trial_expires_at = ${end.toISOString()}::timestamptz WHERE id = ${org.orgId}`);
    const before = await callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: 'SELECT name FROM items' });
    expect(before.body.result.isError).toBeFalsy();
    expect((await getSubscription({ client: clientFor(g, token) })).data!.status).toBe('trialing');
    await Bun.sleep(Math.max(0, end.getTime() - Date.now()) + 20);
    expectRpcError(await callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: 'SELECT name FROM items' }), -32000, 'trial of this org ended');
    expect((await rpc(g, org.slug, { apiKey: org.apiKey }, 'tools/list', {})).status).toBe(200);
    expect((await getSubscription({ client: clientFor(g, token) })).data).toMatchObject({ status: 'expired', trial_expires_at: end.toISOString() });
    // Subscribing ends the refusal.
    await g.deps.store.db.execute(sql`UPDATE orgs SET subscription_status = 'active' WHERE id = ${org.orgId}`);
    expect((await callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: 'SELECT name FROM items' })).body.result.isError).toBeFalsy();
  });
});
