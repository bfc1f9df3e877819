// Approvals end to end over REST and the MCP endpoint, on real PostgreSQL (the gateway's store and the connector's
// target): held calls, the state machine, the inbox, expiry, 404/409 paths, and who may decide (IdP user tokens).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import * as rpcSchema from '../generated/validators/jsonrpc.ts';
import { ApprovalService } from '../src/approvals/service.ts';
import { verifies } from './requirements.ts';
import * as sdk from '../sdk/index.ts';
import { api, onboard, tokenFor } from './support/gateway.ts';
import {
  APPROVER,
  approvalsWorld,
  checkStatus,
  decide,
  DIGEST_KEY,
  FLAGGED,
  holdInsert,
  managePrincipal,
  ledgerRows,
  entryId,
  usedCalls,
  userToken,
  type ApprovalsWorld,
} from './support/approvals.ts';
import { callTool } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
/** Validates against a definition of jsonrpc-schema.json (the contract of these results). */
const conforms = (def: 'ToolsCallResult' | 'PendingApprovalContent' | 'ApprovalStatusContent', value: unknown) =>
  (rpcSchema as unknown as Record<string, (v: unknown) => boolean>)[def]!(value);
const available = await serviceAvailable('postgres');
let w: ApprovalsWorld;

beforeAll(async () => {
  if (available) w = await approvalsWorld('tg_appr');
}, 120_000);
afterAll(async () => {
  await w?.close();
}, 60_000);

const list = async (query: sdk.ListApprovalsData['query'] = {}, token = w.manage) => {
  const { data, response } = await sdk.listApprovals({ client: sdkFor(w.g1, token).client, query });
  expect(response.status).toBe(200);
  return data!.approvals as any[];
};
const auditRows = (approvalId: string) =>
  // The decision's rows; the request's own `approval.requested` row (issue 10) is checked in audit.test.ts.
  w.store`SELECT action, actor_type, actor_id FROM audit_events WHERE org_id = ${w.org.orgId} AND target_id = ${approvalId} AND action <> 'approval.requested' ORDER BY created_at`;

describe.skipIf(!available)('held calls and the state machine', () => {
  test('a flagged call is held: the spec shape, a pending row with the spec fields, nothing ran and nothing counted', async () => {
    verifies('APPROVAL-HELD-RESULT', 'APPROVAL-ROW-FIELDS', 'APPROVAL-QUOTA');
    const id = entryId();
    const before = await usedCalls(w);
    const result = await holdInsert(w, id);
    expect(result.isError).toBe(false);
    expect(Object.keys(result.structuredContent).sort()).toEqual(['approvalId', 'status']);
    expect(result.structuredContent.status).toBe('pending_approval');
    expect(result.content).toHaveLength(1);
    expect(result.content[0]!.text).toContain('check_approval_status');
    expect(result.content[0]!.text).toContain(result.structuredContent.approvalId);
    expect(conforms('ToolsCallResult', result) && conforms('PendingApprovalContent', result.structuredContent)).toBe(true);
    expect(await ledgerRows(w, id)).toBe(0);
    expect(await usedCalls(w)).toBe(before);

    const row = (await list()).find((a) => a.id === result.structuredContent.approvalId);
    expect(Object.keys(row).sort()).toEqual(
      ['approver_emails', 'arguments', 'created_at', 'decided_at', 'decided_by', 'expires_at', 'id', 'reason', 'requested_by', 'status', 'tool_name'].sort(),
    );
    expect(row).toMatchObject({
      tool_name: FLAGGED,
      status: 'pending',
      // The held arguments as they will run: the schema's default limit is filled in.
      arguments: { sql: `INSERT INTO ledger VALUES (${id}, 'held ${id}')`, limit: 100 },
      requested_by: `api_key:${w.apiKeyId}`,
      decided_by: null,
      decided_at: null,
      approver_emails: [APPROVER, 'second@example.com'],
      reason: null,
    });
    expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(600_000);
    const polled = await checkStatus(w, row.id);
    expect(polled.structuredContent).toEqual({ status: 'pending', approvalId: row.id });
    expect(polled.isError).toBeFalsy();
    const requested = w.events.find((e) => e.type === 'approval.requested' && e.data.approval_id === row.id);
    expect(requested).toMatchObject({ orgId: w.org.orgId, data: { tool_name: FLAGGED, requested_by: `api_key:${w.apiKeyId}` } });
    expect(requested!.id).toMatch(/^evt_[0-9a-f-]{36}$/);
    expect(JSON.stringify(requested!.data)).not.toContain('INSERT');
  });

  test('approve runs the held call once, server-side, and answers executed with its result; the agent polls it', async () => {
    verifies('APPROVAL-APPROVE-EXECUTES', 'APPROVAL-POLL-STATUS', 'APPROVAL-AUDIT-EVENTS', 'APPROVAL-QUOTA', 'APPROVAL-409-NOT-PENDING');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    const before = await usedCalls(w);
    const res = await decide(w, w.g1, approvalId, 'approve');
    expect(res.response.status).toBe(200);
    const body = res.data;
    expect(body).toMatchObject({ ok: true, status: 'executed', result: { structuredContent: { rowCount: 1 } } });
    expect(body.result.isError).toBeFalsy();
    expect(await ledgerRows(w, id)).toBe(1);
    expect(await usedCalls(w)).toBe(before + 1);

    const row = (await list({ status: 'executed' })).find((a) => a.id === approvalId);
    expect(row).toMatchObject({ status: 'executed', decided_by: `oauth_client:${w.org.clientId}` });
    expect(Math.abs(Date.parse(row.decided_at) - Date.now())).toBeLessThan(30_000);
    const polled = await checkStatus(w, approvalId);
    expect(polled.structuredContent).toMatchObject({ status: 'executed', approvalId, result: { structuredContent: { rowCount: 1 } } });
    expect(polled.content[0].text).toContain('executed');
    expect(polled.content.slice(1)).toEqual(body.result.content);
    expect(conforms('ToolsCallResult', polled) && conforms('ApprovalStatusContent', polled.structuredContent)).toBe(true);

    expect((await auditRows(approvalId)).map((r) => [r.action, r.actor_type, r.actor_id])).toEqual([
      ['approval.approved', 'oauth_client', w.org.clientId],
      ['approval.executed', 'system', null],
    ]);
    expect(w.events.filter((e) => e.type === 'approval.decided' && e.data.approval_id === approvalId).map((e) => e.data)).toEqual([
      { approval_id: approvalId, tool_name: FLAGGED, decision: 'approved', decided_by: `oauth_client:${w.org.clientId}` },
    ]);
    // Executed is final: a second approve or a reject is 409 and nothing runs again.
    for (const decision of ['approve', 'reject'] as const) {
      const again = await decide(w, w.g2, approvalId, decision);
      expect(again.response.status).toBe(409);
      expect(again.error?.error).toBe('approval_not_pending');
    }
    expect(await usedCalls(w)).toBe(before + 1);
  });

  test('reject: the call never runs, decided_by/decided_at are recorded, and it is final', async () => {
    verifies('APPROVAL-REJECT', 'APPROVAL-409-NOT-PENDING', 'APPROVAL-AUDIT-EVENTS', 'APPROVAL-POLL-STATUS');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    const before = await usedCalls(w);
    const res = await decide(w, w.g1, approvalId, 'reject');
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ ok: true, status: 'rejected' });
    expect((await checkStatus(w, approvalId)).structuredContent).toEqual({ status: 'rejected', approvalId });
    const row = (await list({ status: 'rejected' })).find((a) => a.id === approvalId);
    expect(row).toMatchObject({ decided_by: `oauth_client:${w.org.clientId}` });
    expect(row.decided_at).not.toBeNull();
    expect((await auditRows(approvalId)).map((r) => r.action)).toEqual(['approval.rejected']);
    expect(w.events.some((e) => e.type === 'approval.decided' && e.data.approval_id === approvalId && e.data.decision === 'rejected')).toBe(true);
    for (const decision of ['approve', 'reject'] as const) expect((await decide(w, w.g2, approvalId, decision)).response.status).toBe(409);
    expect(await ledgerRows(w, id)).toBe(0);
    expect(await usedCalls(w)).toBe(before);
  });

  test('the decision, its audit row and its event commit together: a failing subscriber leaves the approval pending and unexecuted', async () => {
    verifies('APPROVAL-AUDIT-EVENTS');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    w.failEvents.on = true;
    try {
      const res = await decide(w, w.g1, approvalId, 'approve');
      expect(res.response.status).toBe(500);
      expect(JSON.stringify(res.error?.body)).not.toContain('subscriber failure');
    } finally {
      w.failEvents.on = false;
    }
    expect((await checkStatus(w, approvalId)).structuredContent.status).toBe('pending');
    expect(await auditRows(approvalId)).toHaveLength(0);
    expect(await ledgerRows(w, id)).toBe(0);
    expect((await decide(w, w.g1, approvalId, 'reject')).response.status).toBe(200);
  });

  test('an approved call whose tool reports an error ends failed, with the reason in the answer and in the poll', async () => {
    verifies('APPROVAL-EXECUTION-FAILED', 'APPROVAL-POLL-STATUS');
    // A negative id violates the ledger's CHECK on the target database.
    const { approvalId } = (await holdInsert(w, -1)).structuredContent;
    const res = await decide(w, w.g1, approvalId, 'approve');
    expect(res.response.status).toBe(200);
    const body = res.data;
    expect(body).toMatchObject({ ok: false, status: 'failed', result: { isError: true } });
    expect(body.reason).toMatch(/check constraint|violates/i);
    const polled = await checkStatus(w, approvalId);
    expect(polled.structuredContent).toMatchObject({ status: 'failed', approvalId, reason: body.reason });
    expect(conforms('ApprovalStatusContent', polled.structuredContent)).toBe(true);
    expect(polled.content[0].text).toContain('failed');
    expect((await auditRows(approvalId)).map((r) => r.action)).toEqual(['approval.approved', 'approval.failed']);
    expect((await decide(w, w.g1, approvalId, 'approve')).response.status).toBe(409);
  });
});

describe.skipIf(!available)('not found, other orgs, other credentials', () => {
  test("unknown ids and another org's approvals are 404 / not_found and never listed", async () => {
    verifies('APPROVAL-404', 'APPROVAL-POLL-STATUS', 'REST-BOLA');
    const { approvalId } = (await holdInsert(w, entryId())).structuredContent;
    const other = await onboard(w.g1);
    const otherManage = await tokenFor(w.g1, other.clientId, other.clientSecret);
    for (const decision of ['approve', 'reject'] as const) {
      const unknown = await decide(w, w.g1, randomUUID(), decision);
      expect(unknown.response.status).toBe(404);
      expect(unknown.error?.error).toBe('approval_not_found');
      const foreign = await decide(w, w.g2, approvalId, decision, otherManage);
      expect(foreign.response.status).toBe(404);
      expect(JSON.stringify(foreign.error?.body)).not.toContain(FLAGGED);
    }
    expect(await list({}, otherManage)).toEqual([]);
    // The other org's agent polling this org's id (at its own endpoint): not_found, like an unknown id.
    const polled = await callTool(w.g1, other.slug, { apiKey: other.apiKey }, 'check_approval_status', { approvalId });
    expect(polled.body.result.structuredContent).toEqual({ status: 'not_found', approvalId });
    for (const id of [randomUUID(), 'not-a-uuid', "x' OR 1=1 --"]) {
      expect((await checkStatus(w, id)).structuredContent).toEqual({ status: 'not_found', approvalId: id });
    }
    expect((await decide(w, w.g1, 'not-a-uuid', 'approve')).response.status).toBe(400);
    expect((await checkStatus(w, approvalId)).structuredContent.status).toBe('pending');
  });

  test('a credential that could not call the tool polls not_found; one that could sees the status', async () => {
    verifies('APPROVAL-POLL-STATUS');
    const { approvalId } = (await holdInsert(w, entryId())).structuredContent;
    // A key limited to a second connector cannot call the flagged tool, so it cannot see its approvals.
    const client = sdkFor(w.g1, w.manage).client;
    const secondId = (await sdk.createConnector({ client, throwOnError: true, body: { name: 'second', type: 'postgresql', config: w.targets.pgConfig } })).data
      .id;
    await w.g1.deps.jobs.idle();
    const scoped = (await sdk.createApiKey({ client, throwOnError: true, body: { name: 'scoped', connector_ids: [secondId] } })).data.key;
    expect((await checkStatus(w, approvalId, { apiKey: scoped })).structuredContent).toEqual({ status: 'not_found', approvalId });
    const oauthClient = (await sdk.createOAuthClient({ client, throwOnError: true, body: { name: 'scoped', scopes: [`mcp:call:${secondId}`] } })).data;
    const scopedToken = await tokenFor(w.g1, oauthClient.client_id, oauthClient.client_secret);
    expect((await checkStatus(w, approvalId, { token: scopedToken })).structuredContent.status).toBe('not_found');
    const anyToken = await tokenFor(w.g1, w.org.clientId, w.org.clientSecret, 'mcp:call');
    expect((await checkStatus(w, approvalId, { token: anyToken }, w.g2)).structuredContent.status).toBe('pending');
    await sdk.archiveConnector({ client, throwOnError: true, path: { connectorId: secondId } });
  });
});

describe.skipIf(!available)('who may approve or reject', () => {
  test('user tokens: a listed approver may decide (e-mail case-insensitive); others, unverified e-mails and non-contributors may not', async () => {
    verifies('APPROVAL-APPROVER-CHECK');
    const { approvalId } = (await holdInsert(w, entryId())).structuredContent;
    const refused: [string, Record<string, unknown>, number, string][] = [
      ['unlisted contributor', { sub: 'u-other', role: 'contributor', email: 'someone@example.com' }, 403, 'not_an_approver'],
      ['listed, e-mail unverified', { sub: 'u-unverified', role: 'contributor', email: APPROVER, email_verified: false }, 403, 'not_an_approver'],
      ['listed, no e-mail claim', { sub: 'u-none', role: 'admin' }, 403, 'not_an_approver'],
      ['listed, finance only', { sub: 'u-fin', role: 'finance', email: APPROVER }, 403, 'insufficient_role'],
      ['listed, no role', { sub: 'u-norole', email: APPROVER }, 403, 'insufficient_role'],
    ];
    for (const [label, claims, status, code] of refused) {
      const token = await userToken(w, claims);
      for (const decision of ['approve', 'reject'] as const) {
        const res = await decide(w, w.g1, approvalId, decision, token);
        expect({ label, decision, status: res.response.status, code: res.error?.error }).toEqual({ label, decision, status, code });
      }
    }
    expect((await checkStatus(w, approvalId)).structuredContent.status).toBe('pending');
    // The finance user cannot read the inbox (arguments are for contributors) either.
    expect((await sdk.listApprovals({ client: sdkFor(w.g1, await userToken(w, { role: 'finance', email: APPROVER })).client })).response.status).toBe(403);
    const approver = await userToken(w, { sub: 'u-approver', role: 'contributor', email: 'Approver@Example.COM' });
    const res = await decide(w, w.g2, approvalId, 'reject', approver);
    expect(res.response.status).toBe(200);
    const row = (await list({ status: 'rejected' })).find((a) => a.id === approvalId);
    expect(row.decided_by).toBe('user:approver@example.com');
    expect((await auditRows(approvalId)).map((r) => [r.action, r.actor_type, r.actor_id.toLowerCase()])).toEqual([
      ['approval.rejected', 'user', 'approver@example.com'],
    ]);
  });

  test('a listed approver user can approve, and the call runs; one removed from the tool since the hold cannot', async () => {
    verifies('APPROVAL-APPROVER-CHECK', 'APPROVAL-APPROVE-EXECUTES');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    const admin = await userToken(w, { sub: 'u-second', role: 'admin', email: 'second@example.com' });
    const setApprovers = (emails: string[]) =>
      sdk.updateToolMetadata({
        client: sdkFor(w.g1, w.manage).client,
        path: { orgId: w.org.orgId, toolId: w.flaggedToolId },
        body: { approval_emails: emails },
      });
    expect((await setApprovers([APPROVER])).response.status).toBe(200);
    const removed = await decide(w, w.g1, approvalId, 'approve', admin);
    expect({ status: removed.response.status, error: removed.error?.error }).toEqual({ status: 403, error: 'not_an_approver' });
    // Listed on the tool now but not on the approval (added after the hold): not an approver of this call either.
    const { approvalId: earlier } = (await holdInsert(w, entryId())).structuredContent;
    expect((await setApprovers([APPROVER, 'second@example.com'])).response.status).toBe(200);
    expect((await decide(w, w.g1, earlier, 'reject', admin)).response.status).toBe(403);
    expect((await decide(w, w.g1, earlier, 'reject')).response.status).toBe(200);
    const res = await decide(w, w.g1, approvalId, 'approve', admin);
    expect(res.data.status).toBe('executed');
    expect(await ledgerRows(w, id)).toBe(1);
  });

  test("an agent's own credential can never decide: API key, MCP-only token, or the very credential that requested the call", async () => {
    verifies('APPROVAL-NO-SELF-APPROVAL');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    const mcpOnly = await tokenFor(w.g1, w.org.clientId, w.org.clientSecret, 'mcp:call');
    for (const decision of ['approve', 'reject'] as const) {
      expect((await decide(w, w.g1, approvalId, decision, w.org.apiKey)).response.status).toBe(401);
      // Raw HTTP: the SDK sends only the declared bearer, never an X-API-Key on the REST interface.
      const viaHeader = await api(w.g1, 'POST', `/api/org/approvals/${approvalId}/${decision}`, null, undefined, { 'x-api-key': w.org.apiKey });
      expect(viaHeader.status).toBe(401);
      expect((await decide(w, w.g1, approvalId, decision, mcpOnly)).response.status).toBe(403);
    }
    // The onboarding client holds mcp:call and org:manage: as the requester of a call it may not decide it.
    const { approvalId: own } = (await holdInsert(w, entryId(), { token: w.manage })).structuredContent;
    for (const decision of ['approve', 'reject'] as const) {
      const res = await decide(w, w.g1, own, decision);
      expect(res.response.status).toBe(403);
      expect(res.error?.error).toBe('self_approval_forbidden');
    }
    // Nor may a user approve a call they requested themselves with their IdP token, though listed as an approver.
    const user = await userToken(w, { sub: 'u-approver', role: 'contributor', email: APPROVER });
    const { approvalId: mine } = (await holdInsert(w, entryId(), { token: user })).structuredContent;
    expect((await decide(w, w.g1, mine, 'approve', user)).error?.error).toBe('self_approval_forbidden');
    for (const approval of [approvalId, own, mine]) expect((await checkStatus(w, approval, { token: mcpOnly })).structuredContent.status).toBe('pending');
    expect(await ledgerRows(w, id)).toBe(0);
  });
});

describe.skipIf(!available)('expiry', () => {
  test('expiry at the boundary: approvable a millisecond before expires_at, expired (409) at it', async () => {
    verifies('APPROVAL-EXPIRY', 'APPROVAL-409-NOT-PENDING');
    let clock = new Date();
    // The real service on the real store, with a clock this test moves (the gateway's reads the system clock).
    const service = new ApprovalService({
      db: w.g1.deps.store.db,
      events: w.g1.deps.events,
      log: w.g1.deps.log,
      digestKey: DIGEST_KEY,
      catalog: w.g1.deps.catalog,
      runTool: () => Promise.reject(new Error('nothing may run in this test')),
      executionStaleMs: 600_000,
      now: () => clock,
    });
    const [a, b] = [(await holdInsert(w, entryId())).structuredContent.approvalId, (await holdInsert(w, entryId())).structuredContent.approvalId];
    const [rowA] = await w.store`SELECT expires_at FROM approvals WHERE id = ${a}`;
    const expiresAt = new Date(rowA!.expires_at);
    clock = new Date(expiresAt.getTime() - 1);
    const agent = { orgId: w.org.orgId, kind: 'api_key' as const, actorId: w.apiKeyId, email: null, roles: [], orgLevel: false, connectorIds: null };
    expect((await service.status(w.org.orgId, agent, a)).structuredContent!.status).toBe('pending');
    clock = expiresAt;
    expect((await service.status(w.org.orgId, agent, a)).structuredContent).toMatchObject({ status: 'expired', reason: expect.stringContaining('expired') });
    await expect(service.approve(w.org.orgId, managePrincipal(w), a)).rejects.toMatchObject({ status: 409, code: 'approval_not_pending' });
    // Over REST as well, on the other instance.
    expect((await decide(w, w.g2, a, 'approve')).response.status).toBe(409);
    // The sweeper expires what nobody reads.
    const [rowB] = await w.store`SELECT expires_at FROM approvals WHERE id = ${b}`;
    clock = new Date(new Date(rowB!.expires_at).getTime() + 1);
    expect((await service.sweep()).expired).toBeGreaterThanOrEqual(1);
    const [swept] = await w.store`SELECT status, decided_by FROM approvals WHERE id = ${b}`;
    expect(swept).toMatchObject({ status: 'expired', decided_by: null });
    expect((await decide(w, w.g1, b, 'reject')).response.status).toBe(409);
  });

  test('the sweeper runs on its own timer and stops with the service', async () => {
    verifies('APPROVAL-EXPIRY');
    const { approvalId } = (await holdInsert(w, entryId())).structuredContent;
    const later = new Date(Date.now() + 3_600_000);
    const service = new ApprovalService({
      db: w.g2.deps.store.db,
      events: w.g2.deps.events,
      log: w.g2.deps.log,
      digestKey: DIGEST_KEY,
      catalog: w.g2.deps.catalog,
      runTool: () => Promise.reject(new Error('nothing may run in this test')),
      executionStaleMs: 600_000,
      now: () => later,
    });
    service.startSweeper(20);
    try {
      for (let i = 0; i < 100 && (await w.store`SELECT status FROM approvals WHERE id = ${approvalId}`)[0]!.status === 'pending'; i++) await Bun.sleep(20);
    } finally {
      await service.stopSweeper();
    }
    expect((await w.store`SELECT status FROM approvals WHERE id = ${approvalId}`)[0]!.status).toBe('expired');
  });

  test('a pending approval past expires_at reads as expired everywhere, without waiting for the sweeper', async () => {
    verifies('APPROVAL-EXPIRY', 'APPROVAL-POLL-STATUS');
    const id = entryId();
    const { approvalId } = (await holdInsert(w, id)).structuredContent;
    await w.store`UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = ${approvalId}`;
    expect((await list({ status: 'pending' })).map((a) => a.id)).not.toContain(approvalId);
    expect((await list({ status: 'expired' })).map((a) => a.id)).toContain(approvalId);
    expect((await checkStatus(w, approvalId)).structuredContent).toMatchObject({ status: 'expired', approvalId });
    expect((await decide(w, w.g1, approvalId, 'approve')).response.status).toBe(409);
    expect(await ledgerRows(w, id)).toBe(0);
  });
});

describe.skipIf(!available)('the inbox', () => {
  test('status filter, newest first, limit default 200 and max 500', async () => {
    verifies('APPROVAL-LIST');
    const catalog = await w.g1.deps.catalog.get(
      w.org.orgId,
      Number((await w.store`SELECT catalog_version FROM orgs WHERE id = ${w.org.orgId}`)[0]!.catalog_version),
    );
    const tool = catalog.tools.find((t) => t.name === FLAGGED)!;
    const agent = { orgId: w.org.orgId, kind: 'api_key' as const, actorId: w.apiKeyId, email: null, roles: [], orgLevel: false, connectorIds: null };
    // Held through the service directly: 205 calls over the MCP endpoint would meet the starter plan's burst limit.
    for (let i = 0; i < 205; i++) await w.g1.deps.approvals.hold(w.org.orgId, agent, tool, { sql: `SELECT ${i}`, limit: 100 });
    const all = await list();
    expect(all).toHaveLength(200);
    const times = all.map((a) => Date.parse(a.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(all[0].arguments.sql).toBe('SELECT 204');
    expect(await list({ limit: 2 })).toHaveLength(2);
    expect((await list({ limit: 500 })).length).toBeGreaterThan(205);
    // Raw HTTP: out-of-contract queries the typed SDK cannot send.
    for (const bad of ['?limit=501', '?limit=0', '?limit=x', '?status=done']) {
      const res = await api(w.g1, 'GET', `/api/org/approvals${bad}`, w.manage);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
    }
    const pending = await list({ status: 'pending', limit: 500 });
    expect(pending.every((a) => a.status === 'pending')).toBe(true);
    expect((await list({ status: 'executed', limit: 500 })).every((a) => a.status === 'executed')).toBe(true);
  });
});
