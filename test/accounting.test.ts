/**
 * Issue 26, item 9: the records say what happened. A held call is audited `held`; what counts against the monthly
 * quota is a tools/call that reached its connector (immediate, or run after approval), so SQL the guard refuses is
 * not counted (also at quota-1 across two instances: no overshoot), and usage by connector adds up to the total,
 * approved calls included (docs/quota-and-audit-accounting.md). Real PostgreSQL store and target.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { periodStart } from '../src/limits/plans.ts';
import { verifies } from './requirements.ts';
import { approvalsWorld, decide, entryId, FLAGGED, holdInsert, type ApprovalsWorld } from './support/approvals.ts';
import { api, onboard, tokenFor } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('accounting.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; the suite is skipped');

const ITEMS = 'query_postgresql_items';
/** Valid JSON for the tool's schema, refused by the SQL guard (two statements): it never reaches the database. */
const GUARD_REFUSED = 'SELECT 1; SELECT 2';

describe.skipIf(!hasPg)('what counts and what the audit says', () => {
  let w: ApprovalsWorld;
  beforeAll(async () => {
    w = await approvalsWorld('tg_acct');
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  }, 60_000);

  const counter = async (orgId: string): Promise<number> => {
    await Promise.all([w.g1.deps.usage.flush(), w.g2.deps.usage.flush()]);
    const rows = await w.store`SELECT tool_calls FROM usage_counters WHERE org_id = ${orgId} AND period_start = ${periodStart(new Date())}`;
    return rows.length ? Number(rows[0]!.tool_calls) : 0;
  };

  test('held calls are audited held; refused SQL is not counted; usage by connector adds up to the total, approved calls included', async () => {
    verifies('AUDIT-HELD-OUTCOME', 'USAGE-COUNTED-CALLS');
    const key = { apiKey: w.org.apiKey };
    // 3 immediate calls that run, 1 the guard refuses.
    for (const g of [w.g1, w.g2, w.g1]) expect((await callTool(g, w.org.slug, key, ITEMS, { sql: 'SELECT name FROM items' })).body.result.isError).toBeFalsy();
    const refused = await callTool(w.g2, w.org.slug, key, ITEMS, { sql: GUARD_REFUSED });
    expect(refused.body.result.isError).toBe(true);
    expect(await counter(w.org.orgId)).toBe(3);
    // 4 held calls: 2 run once approved, 1 reaches the database and fails there (counted), 1 the guard refuses (not).
    const ok = [entryId(), entryId()];
    const held = [...ok.map((id) => holdInsert(w, id)), holdInsert(w, -entryId())];
    const heldResults = await Promise.all(held);
    const guardHeld = await callTool(w.g1, w.org.slug, key, FLAGGED, { sql: GUARD_REFUSED });
    const approvals = [...heldResults.map((r) => r.structuredContent.approvalId), guardHeld.body.result.structuredContent.approvalId];
    expect(await counter(w.org.orgId)).toBe(3);
    const decided = [];
    for (const id of approvals) decided.push(await decide(w, w.g2, id, 'approve'));
    expect(decided.map((d) => d.data?.status ?? (d.error as any)?.body?.status ?? d.response.status)).toEqual(['executed', 'executed', 'failed', 'failed']);
    expect(await counter(w.org.orgId)).toBe(6);

    const usage = await sdk.getUsage({ client: sdkFor(w.g1, w.manage).client });
    expect(usage.response.status).toBe(200);
    expect(usage.data!.tool_calls).toBe(6);
    expect(usage.data!.by_connector).toEqual([{ connector_id: w.connectorId, connector_name: 'ledger', tool_calls: 6 }]);
    expect(usage.data!.by_connector.reduce((sum, c) => sum + c.tool_calls, 0)).toBe(usage.data!.tool_calls);

    // The audit: held calls are `held` (not success), each with its decision and execution rows.
    await Promise.all([w.g1.deps.audit.drain(), w.g2.deps.audit.drain()]);
    const listed = await api(w.g1, 'GET', '/api/audit?limit=200&action=tool.called', w.manage);
    const calls = ((await listed.json()) as any).events as any[];
    const flaggedCalls = calls.filter((e) => e.target_id === FLAGGED);
    expect(flaggedCalls.length).toBe(4);
    for (const e of flaggedCalls) expect(e).toMatchObject({ outcome: 'held', details: { held_for_approval: true, counted: false, outcome: 'held' } });
    const guardCall = calls.find((e) => e.target_id === ITEMS && e.outcome === 'refused');
    expect(guardCall.details.counted).toBe(false);
    expect(calls.filter((e) => e.target_id === ITEMS && e.outcome === 'success').length).toBe(3);
    const executions = ((await (await api(w.g1, 'GET', '/api/audit?limit=200&action=approval.', w.manage)).json()) as any).events as any[];
    const ran = executions.filter((e) => e.action === 'approval.executed' || e.action === 'approval.failed');
    expect(ran.map((e) => e.details.counted).sort()).toEqual([false, true, true, true]);
  });

  test('at quota-1, refused SQL and valid calls at once on two instances: at most one runs, the counter never passes the quota, refunds come back', async () => {
    verifies('USAGE-COUNTED-CALLS', 'LIMIT-QUOTA-NO-OVERSHOOT');
    const org = await onboard(w.g1, undefined, 'growth');
    const token = await tokenFor(w.g1, org.clientId, org.clientSecret);
    await createConnector(w.g1, token, { name: 'items', type: 'postgresql', config: w.targets.pgConfig });
    const key = { apiKey: org.apiKey };
    // Below the quota a refused statement leaves the counter as it was (limited plan: the store's counter).
    expect((await callTool(w.g1, org.slug, key, ITEMS, { sql: 'SELECT name FROM items' })).body.result.isError).toBeFalsy();
    expect((await callTool(w.g2, org.slug, key, ITEMS, { sql: GUARD_REFUSED })).body.result.isError).toBe(true);
    expect(await counter(org.orgId)).toBe(1);

    const quota = 50_000;
    await w.store`UPDATE usage_counters SET tool_calls = ${quota - 1} WHERE org_id = ${org.orgId} AND period_start = ${periodStart(new Date())}`;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        callTool(i % 2 ? w.g2 : w.g1, org.slug, key, ITEMS, { sql: i % 3 === 0 ? 'SELECT name FROM items' : GUARD_REFUSED }),
      ),
    );
    const valid = answers.filter((_, i) => i % 3 === 0);
    const ranValid = valid.filter((a) => a.body.result && !a.body.result.isError).length;
    expect(ranValid).toBeLessThanOrEqual(1);
    for (const a of answers) if (!a.body.result) expectRpcError(a, -32000);
    expect(await counter(org.orgId)).toBe(quota - 1 + ranValid);
    // Refused statements gave their units back: the last unit is still there for a call that runs, and only one.
    if (ranValid === 0) expect((await callTool(w.g1, org.slug, key, ITEMS, { sql: 'SELECT name FROM items' })).body.result.isError).toBeFalsy();
    expect(await counter(org.orgId)).toBe(quota);
    expectRpcError(await callTool(w.g2, org.slug, key, ITEMS, { sql: 'SELECT name FROM items' }), -32000);
    expect(await counter(org.orgId)).toBe(quota);
  });
});
