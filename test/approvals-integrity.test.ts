// What makes approvals trustworthy, on real PostgreSQL with two gateway instances sharing one store: exactly-once
// execution under simultaneous approves, crash recovery that never re-runs, the digest binding the held call, the
// policy re-check at execution, and the quota rules of approved executions.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { ApprovalService, STALE_EXECUTION_REASON } from '../src/approvals/service.ts';
import { executeTool } from '../src/tools/runtime.ts';
import { verifies } from './requirements.ts';
import * as sdk from '../sdk/index.ts';
import { onboard, tokenFor } from './support/gateway.ts';
import {
  approvalsWorld,
  checkStatus,
  decide,
  DIGEST_KEY,
  entryId,
  FLAGGED,
  holdInsert,
  ledgerRows,
  managePrincipal,
  usedCalls,
  type ApprovalsWorld,
} from './support/approvals.ts';
import { callTool, createConnector, restTools } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
let w: ApprovalsWorld;

beforeAll(async () => {
  if (available) w = await approvalsWorld('tg_appr_int');
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const statusOf = async (approvalId: string) => (await w.store`SELECT status, status_reason FROM approvals WHERE id = ${approvalId}`)[0]!;

describe.skipIf(!available)('exactly once across instances', () => {
  test('two approves at the same moment on two instances: the call runs once, one gets the result, the other 409', async () => {
    verifies('APPROVAL-EXACTLY-ONCE');
    for (let round = 0; round < 8; round++) {
      const id = entryId();
      const { approvalId } = (await holdInsert(w, id)).structuredContent;
      const before = await usedCalls(w);
      const answers = await Promise.all([decide(w, w.g1, approvalId, 'approve'), decide(w, w.g2, approvalId, 'approve')]);
      const statuses = answers.map((r) => r.response.status).sort();
      expect({ round, statuses }).toEqual({ round, statuses: [200, 409] });
      const winner = answers.find((r) => r.response.status === 200)!.data;
      expect(winner).toMatchObject({ ok: true, status: 'executed', result: { structuredContent: { rowCount: 1 } } });
      expect(answers.find((r) => r.response.status === 409)!.error?.error).toBe('approval_not_pending');
      expect(await ledgerRows(w, id)).toBe(1);
      expect(await usedCalls(w)).toBe(before + 1);
      const audit = await w.store`SELECT count(*)::int AS n FROM audit_events WHERE target_id = ${approvalId} AND action = 'approval.approved'`;
      expect(audit[0]!.n).toBe(1);
    }
  });

  test('approve and reject at the same moment: exactly one decision wins, and the call ran only if approve won', async () => {
    verifies('APPROVAL-EXACTLY-ONCE');
    for (let round = 0; round < 6; round++) {
      const id = entryId();
      const { approvalId } = (await holdInsert(w, id)).structuredContent;
      const [approve, reject] = await Promise.all([decide(w, w.g1, approvalId, 'approve'), decide(w, w.g2, approvalId, 'reject')]);
      expect([approve.response.status, reject.response.status].sort()).toEqual([200, 409]);
      const { status } = await statusOf(approvalId);
      expect(status).toBe(approve.response.status === 200 ? 'executed' : 'rejected');
      expect(await ledgerRows(w, id)).toBe(approve.response.status === 200 ? 1 : 0);
    }
  });
});

describe.skipIf(!available)('crash between executing and executed', () => {
  test('an orphaned execution is marked failed by the recovery sweep, never re-run, and a late outcome does not overwrite it', async () => {
    verifies('APPROVAL-CRASH-RECOVERY');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    // "Instance 1" runs the call for real and then stops before recording the outcome, as a killed process would
    // (a real kill cannot happen inside the test runner). It shares the store and the digest key with the gateways.
    let release!: () => void;
    const stopped = new Promise<void>((resolve) => (release = resolve));
    let ran = 0;
    const crashing = new ApprovalService({
      db: w.g1.deps.store.db,
      events: w.g1.deps.events,
      log: w.g1.deps.log,
      digestKey: DIGEST_KEY,
      catalog: w.g1.deps.catalog,
      runTool: async (org, tool, input) => {
        const result = await executeTool(w.g1.deps, org, tool, input);
        ran++;
        await stopped;
        return result;
      },
      executionStaleMs: 600_000,
    });
    const approving = crashing.approve(w.org.orgId, managePrincipal(w), approvalId);
    for (let i = 0; i < 200 && ran === 0; i++) await Bun.sleep(10);
    expect(ran).toBe(1);
    expect((await statusOf(approvalId)).status).toBe('executing');
    expect(await ledgerRows(w, id)).toBe(1);
    // While executing: polled as pending, and no second decision is possible.
    expect((await checkStatus(w, approvalId, undefined, w.g2)).structuredContent.status).toBe('pending');
    expect((await decide(w, w.g2, approvalId, 'approve')).response.status).toBe(409);
    // A sweep inside the stale window leaves a running execution alone.
    await w.g2.deps.approvals.sweep();
    expect((await statusOf(approvalId)).status).toBe('executing');

    // Instance 2 recovers once the execution is older than the stale window: failed, with the documented reason.
    const later = new Date(Date.now() + 3_600_000);
    const recovery = new ApprovalService({
      db: w.g2.deps.store.db,
      events: w.g2.deps.events,
      log: w.g2.deps.log,
      digestKey: DIGEST_KEY,
      catalog: w.g2.deps.catalog,
      runTool: () => Promise.reject(new Error('recovery must never run a call')),
      executionStaleMs: 600_000,
      now: () => later,
    });
    expect((await recovery.sweep()).failed).toBe(1);
    expect(await statusOf(approvalId)).toEqual({ status: 'failed', status_reason: STALE_EXECUTION_REASON });
    const polled = await checkStatus(w, approvalId);
    expect(polled.structuredContent).toMatchObject({ status: 'failed', reason: STALE_EXECUTION_REASON });
    expect((await decide(w, w.g1, approvalId, 'approve')).response.status).toBe(409);
    const audit =
      await w.store`SELECT action, details FROM audit_events WHERE target_id = ${approvalId} AND action <> 'approval.requested' ORDER BY created_at`;
    expect(audit.map((r) => r.action)).toEqual(['approval.approved', 'approval.failed']);

    // The stopped instance "comes back": its late outcome must not turn the recovered approval into executed.
    release();
    const late = await approving;
    expect(late).toMatchObject({ ok: false, status: 'failed', reason: STALE_EXECUTION_REASON });
    expect((await statusOf(approvalId)).status).toBe('failed');
    expect(await ledgerRows(w, id)).toBe(1);
    expect((await recovery.sweep()).failed).toBe(0);
  });
});

describe.skipIf(!available)('bound to what was asked', () => {
  test("a held call altered in the store (arguments, or another row's arguments with their digest) fails closed; nothing runs", async () => {
    verifies('APPROVAL-DIGEST');
    const [a, b] = [entryId(), entryId()];
    const held = (await holdInsert(w, a)).structuredContent.approvalId;
    const other = (await holdInsert(w, b)).structuredContent.approvalId;
    const before = await usedCalls(w);
    const evil = entryId();
    await w.store`UPDATE approvals SET arguments_json = replace(arguments_json, ${String(a)}, ${String(evil)}) WHERE id = ${held}`;
    const res = await decide(w, w.g1, held, 'approve');
    expect(res.response.status).toBe(200);
    const body = res.data;
    expect(body).toMatchObject({ ok: false, status: 'failed' });
    expect(body.reason).toContain('digest');
    // A valid (arguments, digest) pair copied from another approval does not verify on this row either.
    const third = (await holdInsert(w, entryId())).structuredContent.approvalId;
    await w.store`UPDATE approvals t SET arguments_json = o.arguments_json, arguments_digest = o.arguments_digest FROM approvals o WHERE t.id = ${third} AND o.id = ${other}`;
    expect((await decide(w, w.g2, third, 'approve')).data.reason).toContain('digest');
    expect([await ledgerRows(w, a), await ledgerRows(w, evil), await ledgerRows(w, b)]).toEqual([0, 0, 0]);
    expect(await usedCalls(w)).toBe(before);
    // The untouched approval still runs, with exactly its own arguments.
    expect((await decide(w, w.g1, other, 'approve')).data.status).toBe('executed');
    expect(await ledgerRows(w, b)).toBe(1);
  });

  test('policy is re-checked at execution: a disabled tool, a revoked requesting key, an archived connector fail closed with a reason', async () => {
    verifies('APPROVAL-POLICY-RECHECK');
    const client = sdkFor(w.g1, w.manage).client;
    const patchTool = (toolId: string, body: sdk.UpdateToolRequest) => sdk.updateToolMetadata({ client, path: { orgId: w.org.orgId, toolId }, body });
    const before = await usedCalls(w);

    const disabledId = entryId();
    const disabled = (await holdInsert(w, disabledId)).structuredContent.approvalId;
    expect((await patchTool(w.flaggedToolId, { enabled: false })).response.status).toBe(200);
    const disabledAnswer = (await decide(w, w.g2, disabled, 'approve')).data;
    expect(disabledAnswer).toMatchObject({ ok: false, status: 'failed' });
    expect(disabledAnswer.reason).toContain('disabled');
    expect((await patchTool(w.flaggedToolId, { enabled: true })).response.status).toBe(200);

    // A second key of the org requests, then is revoked.
    const created = (await sdk.createApiKey({ client, throwOnError: true, body: { name: 'short-lived' } })).data;
    const revokedId = entryId();
    const byRevoked = (await holdInsert(w, revokedId, { apiKey: created.key })).structuredContent.approvalId;
    expect((await sdk.revokeApiKey({ client, path: { keyId: created.id } })).response.status).toBe(200);
    const revokedAnswer = (await decide(w, w.g1, byRevoked, 'approve')).data;
    expect(revokedAnswer).toMatchObject({ ok: false, status: 'failed' });
    expect(revokedAnswer.reason).toContain('revoked');

    // Its own connector, flagged, then archived.
    const connector = await createConnector(w.g1, w.manage, { name: 'doomed', type: 'postgresql', config: w.targets.pgConfig, allow_write: true });
    const doomedTool = (await restTools(w.g1, w.manage, w.org.orgId, connector.id)).find((t) => t.tool_name.includes('ledger'))!;
    expect((await patchTool(doomedTool.id, { requires_approval: true })).response.status).toBe(200);
    const archivedId = entryId();
    const held = await callTool(w.g1, w.org.slug, { apiKey: w.org.apiKey }, doomedTool.name, { sql: `INSERT INTO ledger VALUES (${archivedId}, 'x')` });
    const onArchived = held.body.result.structuredContent.approvalId;
    expect((await sdk.archiveConnector({ client, path: { connectorId: connector.id } })).response.status).toBe(200);
    const archivedAnswer = (await decide(w, w.g2, onArchived, 'approve')).data;
    expect(archivedAnswer).toMatchObject({ ok: false, status: 'failed' });
    expect(archivedAnswer.reason).toContain('archived');

    for (const [approvalId, reason] of [
      [disabled, 'disabled'],
      [byRevoked, 'revoked'],
      [onArchived, 'archived'],
    ] as const) {
      expect((await checkStatus(w, approvalId)).structuredContent).toMatchObject({ status: 'failed', reason: expect.stringContaining(reason) });
    }
    expect([await ledgerRows(w, disabledId), await ledgerRows(w, revokedId), await ledgerRows(w, archivedId)]).toEqual([0, 0, 0]);
    expect(await usedCalls(w)).toBe(before);
  });
});

describe.skipIf(!available)('quota', () => {
  test('holding never counts; the approved execution counts once; with the quota used up the approval fails and nothing runs', async () => {
    verifies('APPROVAL-QUOTA');
    // A starter org: its quota is counted exactly in the store.
    const starter = await onboard(w.g1, undefined, 'starter');
    const manage = await tokenFor(w.g1, starter.clientId, starter.clientSecret);
    const connector = await createConnector(w.g1, manage, { name: 'ledger', type: 'postgresql', config: w.targets.pgConfig, allow_write: true });
    const tool = (await restTools(w.g1, manage, starter.orgId, connector.id)).find((t) => t.name === FLAGGED)!;
    await sdk.updateToolMetadata({
      client: sdkFor(w.g1, manage).client,
      throwOnError: true,
      path: { orgId: starter.orgId, toolId: tool.id },
      body: { requires_approval: true },
    });
    const counted = async () => Number((await w.store`SELECT coalesce(sum(tool_calls), 0) AS n FROM usage_counters WHERE org_id = ${starter.orgId}`)[0]!.n);
    const hold = async (id: number) =>
      (await callTool(w.g1, starter.slug, { apiKey: starter.apiKey }, FLAGGED, { sql: `INSERT INTO ledger VALUES (${id}, 'q')` })).body.result.structuredContent
        .approvalId as string;
    const [first, second] = [entryId(), entryId()];
    const a = await hold(first);
    expect(await counted()).toBe(0);
    expect((await decide(w, w.g2, a, 'approve', manage)).data.status).toBe('executed');
    expect(await counted()).toBe(1);
    // Use the month's quota up (20,000 on starter), then approve a held call.
    await w.store`UPDATE usage_counters SET tool_calls = 20000 WHERE org_id = ${starter.orgId}`;
    const b = await hold(second);
    const answer = (await decide(w, w.g1, b, 'approve', manage)).data;
    expect(answer).toMatchObject({ ok: false, status: 'failed' });
    expect(answer.reason).toContain('quota');
    expect([await ledgerRows(w, first), await ledgerRows(w, second)]).toEqual([1, 0]);
    expect(await counted()).toBe(20000);
  });
});
