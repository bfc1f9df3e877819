/**
 * Issue 10, the audit trail: every tools/call and every refusal recorded (once), the tool-call row committed before
 * the result is answered (a failing audit write fails the call), the per-org hash chain and its verifier (also the
 * CLI), listing with filters and a cursor, the streamed export with redaction, retention with a checkpoint, the
 * bounded refusal queue, and org isolation. All on real PostgreSQL (store and connector target).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { exportAuditEvents, listAuditEvents } from '../sdk/index.ts';
import { AuditRecorder } from '../src/audit/recorder.ts';
import { appendAudit, pruneAudit } from '../src/audit/repository.ts';
import { verifyChain } from '../src/audit/verify.ts';
import { DomainEvents } from '../src/events/index.ts';
import { rowsOf } from '../src/store/db.ts';
import { createLogger } from '../src/util/log.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, expectRpcError, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('audit.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; the suite is skipped');

const ITEMS = 'query_postgresql_items';
const PLANTED_SQL = "SELECT name FROM items WHERE name <> 'secret-needle-4711'";

let g: TestGateway;
let t: Targets;
let a: Onboarded;
let b: Onboarded;
let tokenA: string;
let tokenB: string;
/** The SDK's client for a bearer on the suite's gateway. */
const as = (token: string) => sdkFor(g, token).client;

async function rows(orgId: string, action?: string): Promise<any[]> {
  await g.deps.audit.drain();
  const result = await g.deps.store.db.execute(
    action
      ? sql`SELECT * FROM audit_events WHERE org_id = ${orgId} AND action = ${action} ORDER BY seq`
      : sql`SELECT * FROM audit_events WHERE org_id = ${orgId} ORDER BY seq`,
  );
  return rowsOf<any>(result);
}

async function verifyCli(slug: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn([process.execPath, 'src/cli.ts', 'audit', 'verify', '--org', slug], {
    cwd: `${import.meta.dir}/..`,
    env: { ...process.env, DATABASE_URL: g.databaseUrl!, TOOLGATE_SECRET_KEY: 'a'.repeat(64), TOOLGATE_LOG_LEVEL: 'silent' },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
  return { code: await proc.exited, out };
}

describe.skipIf(!hasPg)('audit trail', () => {
  beforeAll(async () => {
    t = await createTargets('tg_audit', 'pg');
    // A webhook receiver address that is never called (no delivery worker): only the outbox rows matter here.
    g = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: '127.0.0.1:9', TOOLGATE_WEBHOOK_WORKER: '0' });
    a = await onboard(g);
    b = await onboard(g);
    tokenA = await tokenFor(g, a.clientId, a.clientSecret);
    tokenB = await tokenFor(g, b.clientId, b.clientSecret);
    await createConnector(g, tokenA, { name: 'pg items', type: 'postgresql', config: t.pgConfig });
    await createConnector(g, tokenB, { name: 'pg items', type: 'postgresql', config: t.pgConfig });
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 60_000);

  test('each tools/call is recorded exactly once, with tool, connector, credential, outcome, duration and rows, never the SQL', async () => {
    verifies('AUDIT-TOOL-CALL');
    const before = (await rows(a.orgId, 'tool.called')).length;
    const answers = await Promise.all(Array.from({ length: 12 }, () => callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: PLANTED_SQL })));
    for (const answer of answers) expect(answer.body.result.isError).toBeFalsy();
    const failing = await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: 'DELETE FROM items' });
    expect(failing.body.result.isError).toBe(true);
    const called = (await rows(a.orgId, 'tool.called')).slice(before);
    expect(called.length).toBe(13);
    const ok = called.filter((r) => r.outcome === 'success');
    expect(ok.length).toBe(12);
    // Issue 41: the guard's refusal is `refused` (not `error`), with its class; the statement only as its fingerprint.
    const refused = called.filter((r) => r.outcome === 'refused');
    expect(refused.map((r) => [r.details.reason_class, r.details.fingerprint, r.details.statement])).toEqual([['write', 'delete from items', undefined]]);
    const [first] = ok;
    expect(first.actor_type).toBe('api_key');
    expect(first.target_id).toBe(ITEMS);
    expect(first.details).toMatchObject({ tool_name: ITEMS, connector_type: 'postgresql', row_count: 3, counted: true });
    expect(typeof first.details.duration_ms).toBe('number');
    expect(first.details.arguments_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(called)).not.toContain('secret-needle-4711');
    expect(JSON.stringify(called)).not.toContain('DELETE FROM'); // the fingerprint is normalised: `delete from items`
  });

  test('no result without its row: when the audit write fails, the call fails and its result is withheld', async () => {
    verifies('AUDIT-DURABLE-BEFORE-RESULT');
    // A real failure of the store, not a mock: a trigger refuses tool-call rows of org A.
    await g.deps.store.db.execute(
      sql.raw(`CREATE OR REPLACE FUNCTION tg_refuse_audit() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'audit store down'; END $$ LANGUAGE plpgsql`),
    );
    await g.deps.store.db.execute(
      sql.raw(
        `CREATE TRIGGER tg_refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW WHEN (NEW.org_id = '${a.orgId}' AND NEW.action = 'tool.called') EXECUTE FUNCTION tg_refuse_audit()`,
      ),
    );
    try {
      const refused = await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: 'SELECT name FROM items WHERE id = 2' });
      expectRpcError(refused, -32603, 'audit record could not be written');
      expect(refused.text).not.toContain('pear');
      // Another org's calls in the meantime are unaffected.
      const other = await callTool(g, b.slug, { apiKey: b.apiKey }, ITEMS, { sql: 'SELECT name FROM items WHERE id = 2' });
      expect(other.text).toContain('pear');
    } finally {
      await g.deps.store.db.execute(sql.raw('DROP TRIGGER tg_refuse_audit ON audit_events'));
    }
    const after = await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: 'SELECT name FROM items WHERE id = 2' });
    expect(after.text).toContain('pear');
    expect((await verifyChain(g.deps.store.db, a.orgId)).ok).toBe(true);
  });

  test('refusals on the MCP endpoint and /api are recorded with reason and key prefix, never the secret', async () => {
    verifies('AUDIT-REFUSALS');
    const wrongKey = `${a.apiKey.slice(0, 20)}${'x'.repeat(a.apiKey.length - 20)}`;
    expect((await rpc(g, a.slug, { apiKey: wrongKey }, 'tools/list')).status).toBe(401);
    const noManage = await tokenFor(g, a.clientId, a.clientSecret, 'mcp:call');
    expect((await sdk.listConnectors({ client: as(noManage) })).response.status).toBe(403);
    const scoped = (await sdk.createApiKey({ client: as(tokenA), throwOnError: true, body: { name: 'scoped', connector_ids: [] } })).data.key;
    expectRpcError(await callTool(g, a.slug, { apiKey: scoped }, ITEMS, { sql: 'SELECT 1 AS x FROM items' }), -32003);

    const auth = await rows(a.orgId, 'auth.refused');
    const mcp401 = auth.find((r) => r.details.status === 401);
    expect(mcp401.details).toMatchObject({ code: 'unauthenticated', credential: 'api_key', key_prefix: wrongKey.slice(0, 12) });
    expect(mcp401.target_id).toBe(`/mcp/${a.slug}`);
    const api403 = auth.find((r) => r.details.status === 403);
    expect(api403.details).toMatchObject({ code: 'insufficient_scope', credential: 'bearer', claimed_subject: a.clientId });
    const refusedCall = (await rows(a.orgId, 'tool.call_refused')).find((r) => r.details.code === -32003);
    expect(refusedCall).toBeDefined();
    const all = JSON.stringify(await rows(a.orgId));
    expect(all).not.toContain(wrongKey);
    expect(all).not.toContain(scoped);
    expect(all).not.toContain(noManage);
  });

  test('429 and the monthly quota (-32000) are recorded as refusals', async () => {
    verifies('AUDIT-REFUSALS');
    const starter = await onboard(g, undefined, 'starter');
    const token = await tokenFor(g, starter.clientId, starter.clientSecret);
    await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    await g.deps.store.db.execute(
      sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${starter.orgId}, ${`${new Date().toISOString().slice(0, 8)}01`}, 20000)`,
    );
    expectRpcError(await callTool(g, starter.slug, { apiKey: starter.apiKey }, ITEMS, { sql: 'SELECT 1 AS x FROM items' }), -32000);
    const burst = await Promise.all(Array.from({ length: 30 }, () => rpc(g, starter.slug, { apiKey: starter.apiKey }, 'ping')));
    const limited = burst.filter((r) => r.status === 429).length;
    expect(limited).toBeGreaterThan(0);
    expect((await rows(starter.orgId, 'tool.call_refused')).filter((r) => r.details.code === -32000).length).toBe(1);
    expect((await rows(starter.orgId, 'rate_limit.refused')).length).toBe(limited);
  });

  test('the hash chain verifies, and editing, deleting or truncating rows is detected and named (library and CLI)', async () => {
    verifies('AUDIT-CHAIN');
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    for (const name of ['k1', 'k2', 'k3']) expect((await sdk.createApiKey({ client: as(token), body: { name } })).response.status).toBe(201);
    const all = await rows(org.orgId);
    expect(all.length).toBeGreaterThanOrEqual(5);
    expect((await verifyChain(g.deps.store.db, org.orgId)).ok).toBe(true);
    const intact = await verifyCli(org.slug);
    expect(intact.code).toBe(0);
    expect(intact.out).toContain('intact');

    const victim = all[2];
    await g.deps.store.db.execute(sql`UPDATE audit_events SET details = '{"forged":true}'::jsonb WHERE id = ${victim.id}`);
    const edited = await verifyChain(g.deps.store.db, org.orgId);
    expect(edited).toMatchObject({ ok: false, broken: { seq: Number(victim.seq), id: victim.id } });
    const cli = await verifyCli(org.slug);
    expect(cli.code).toBe(1);
    expect(cli.out).toContain(`BROKEN at row ${victim.seq}`);

    await g.deps.store.db.execute(sql`DELETE FROM audit_events WHERE id = ${victim.id}`);
    expect(await verifyChain(g.deps.store.db, org.orgId)).toMatchObject({ ok: false, broken: { seq: Number(victim.seq) } });

    // Deleting the newest rows is caught by the chain head.
    const fresh = await onboard(g);
    const last = (await rows(fresh.orgId)).at(-1);
    await g.deps.store.db.execute(sql`DELETE FROM audit_events WHERE id = ${last.id}`);
    expect((await verifyChain(g.deps.store.db, fresh.orgId)).ok).toBe(false);
    // A row slipped in beside the chain, dated before the sealing delay, is caught too; a recent unsealed row is pending.
    const other = await onboard(g);
    await g.deps.store.db.execute(sql`INSERT INTO audit_events (org_id, action, actor_type) VALUES (${other.orgId}, 'connector.created', 'system')`);
    expect(await verifyChain(g.deps.store.db, other.orgId)).toMatchObject({ ok: true, pending: 1 });
    await g.deps.store.db.execute(sql`UPDATE audit_events SET created_at = now() - interval '10 minutes' WHERE org_id = ${other.orgId} AND seq IS NULL`);
    expect(await verifyChain(g.deps.store.db, other.orgId)).toMatchObject({ ok: false, broken: { reason: expect.stringContaining('outside the chain') } });
  });

  test('GET /api/audit: newest first, limit, exact and prefix action, days, and a cursor through every page', async () => {
    verifies('AUDIT-LIST');
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    for (let i = 0; i < 7; i++) expect((await sdk.createApiKey({ client: as(token), body: { name: `k${i}` } })).response.status).toBe(201);
    const seen: any[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const answer = await listAuditEvents({ client: as(token), query: { limit: 3, action: 'api_key.', ...(cursor ? { cursor } : {}) } });
      expect(answer.response.status).toBe(200);
      seen.push(...answer.data!.events);
      if (!answer.data!.next_cursor) break;
      cursor = answer.data!.next_cursor;
    }
    expect(seen.length).toBe(7);
    expect(new Set(seen.map((e) => e.id)).size).toBe(7);
    const seqs = seen.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => y - x));
    const exact = await listAuditEvents({ client: as(token), query: { action: 'org.created' } });
    expect(exact.data!.events.map((e) => e.action)).toEqual(['org.created']);
    const prefixOnly = await listAuditEvents({ client: as(token), query: { action: 'api_key' } });
    expect(prefixOnly.data!.events).toEqual([]);
    const defaults = await listAuditEvents({ client: as(token), query: { days: 1 } });
    expect(defaults.data!.events.map((e) => e.id)).toEqual((await rows(org.orgId)).map((r) => r.id).reverse());
    expect((await listAuditEvents({ client: as(token), query: { limit: 201 } })).response.status).toBe(400);
    expect((await listAuditEvents({ client: as(token), query: { limit: 0 } })).response.status).toBe(400);
  });

  test("cross-org rows never appear in another org's list or export", async () => {
    verifies('AUDIT-ORG-ISOLATION');
    await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: 'SELECT name FROM items' });
    const listed = await listAuditEvents({ client: as(tokenB), query: { limit: 200 } });
    const exported = JSON.stringify((await exportAuditEvents({ client: as(tokenB), throwOnError: true })).data);
    const aIds = new Set((await rows(a.orgId)).map((r) => r.id));
    expect(listed.data!.events.length).toBeGreaterThan(0);
    for (const event of listed.data!.events) expect(aIds.has(event.id)).toBe(false);
    for (const id of aIds) expect(exported).not.toContain(id);
    expect(exported).not.toContain(a.orgId);
  });

  test('export-json streams the whole log in chain order; redact=true leaves no SQL, digests, secrets, e-mail or IP addresses', async () => {
    verifies('AUDIT-EXPORT-REDACT');
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    // Planted: an e-mail address and an IP address in a connector name, a SQL text in a call, a key prefix in a refusal.
    await createConnector(g, token, { name: 'owner alice@example.com at 10.20.30.40', type: 'postgresql', config: t.pgConfig });
    await callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: PLANTED_SQL });
    await rpc(g, org.slug, { apiKey: `${org.apiKey.slice(0, 12)}nope` }, 'ping');
    await g.deps.audit.drain();
    // Many rows, so the export spans several pages of the stream.
    await appendAudit(
      g.deps.store.db,
      Array.from({ length: 1200 }, (_, i) => ({ orgId: org.orgId, action: 'test.filler', actor: { type: 'system' as const, id: null }, details: { i } })),
    );

    const plain = await exportAuditEvents({ client: as(token) });
    expect(plain.response.status).toBe(200);
    const events = plain.data!.events;
    expect(events.length).toBe((await rows(org.orgId)).length);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const plainText = JSON.stringify(plain.data);
    expect(plainText).toContain('alice@example.com');
    expect(plainText).toContain('arguments_sha256');

    const doc = (await exportAuditEvents({ client: as(token), throwOnError: true, query: { redact: true } })).data as any;
    const redacted = JSON.stringify(doc);
    expect(doc.redacted).toBe(true);
    expect(doc.events.length).toBe(events.length);
    for (const needle of ['alice@example.com', '10.20.30.40', 'secret-needle-4711', 'arguments_sha256', org.apiKey, 'key_prefix'])
      expect(redacted).not.toContain(needle);
    expect(redacted).toContain('tool.called');

    const filtered = await exportAuditEvents({ client: as(token), query: { action: 'connector.' } });
    expect(new Set(filtered.data!.events.map((e) => e.action.split('.')[0]))).toEqual(new Set(['connector']));
  });

  test('retention removes old rows with a checkpoint, and the rest of the chain still verifies', async () => {
    verifies('AUDIT-RETENTION');
    const org = await onboard(g);
    const old = new Date(Date.now() - 400 * 86_400_000);
    // Backdated rows are appended by the repository itself (the hash covers created_at, so they cannot be edited).
    await g.deps.store.db.execute(sql`DELETE FROM audit_events WHERE org_id = ${org.orgId}`);
    await g.deps.store.db.execute(sql`DELETE FROM audit_chains WHERE org_id = ${org.orgId}`);
    await appendAudit(
      g.deps.store.db,
      Array.from({ length: 5 }, () => ({ orgId: org.orgId, action: 'test.old', actor: { type: 'system' as const, id: null } })),
      old,
    );
    await appendAudit(g.deps.store.db, [{ orgId: org.orgId, action: 'test.new', actor: { type: 'system', id: null } }]);
    expect((await verifyChain(g.deps.store.db, org.orgId)).ok).toBe(true);
    const removed = await pruneAudit(g.deps.store.db, org.orgId, new Date(Date.now() - 365 * 86_400_000));
    expect(removed).toBe(5);
    const left = await rows(org.orgId);
    expect(left.map((r) => r.action)).toEqual(['test.new', 'audit.pruned']);
    expect(left[1].details).toMatchObject({ through_seq: 5, deleted: 5 });
    expect(await verifyChain(g.deps.store.db, org.orgId)).toEqual({ ok: true, checked: 2 });
    expect(await pruneAudit(g.deps.store.db, org.orgId, new Date(Date.now() - 365 * 86_400_000))).toBe(0);
  });

  test('approval.requested events become audit rows in the emitter transaction', async () => {
    verifies('AUDIT-APPROVALS');
    const event = DomainEvents.create('approval.requested', a.orgId, { approval_id: 'apr_test', tool_name: ITEMS, requested_by: 'key' });
    await g.deps.store.db.transaction((tx) => g.deps.events.emit(tx, [event]));
    const [row] = await rows(a.orgId, 'approval.requested');
    expect(row).toMatchObject({ target_id: 'apr_test', details: { event_id: event.id, tool_name: ITEMS } });
    // Rolled back with its transaction.
    const rolled = DomainEvents.create('approval.requested', a.orgId, { approval_id: 'apr_rolled', tool_name: ITEMS, requested_by: 'key' });
    await g.deps.store.db
      .transaction(async (tx) => {
        await g.deps.events.emit(tx, [rolled]);
        tx.rollback();
      })
      .catch(() => {});
    expect((await rows(a.orgId, 'approval.requested')).length).toBe(1);
  });
});

describe.skipIf(!hasPg)('refusal flood and the bounded queue', () => {
  beforeAll(async () => {
    g = await startTestGateway('postgres');
    a = await onboard(g);
  }, 60_000);
  afterAll(async () => g?.close(), 30_000);

  test('a full refusal queue counts instead of queueing; tool calls in the flood are written and not held up', async () => {
    verifies('AUDIT-FLOOD');
    const recorder = new AuditRecorder({ db: g.deps.store.db, log: createLogger('silent'), queueMax: 50 });
    const refusal = { orgId: a.orgId, action: 'auth.refused', actor: { type: 'anonymous' as const, id: null }, outcome: 'denied' as const };
    for (let i = 0; i < 5000; i++) recorder.denial(refusal);
    const started = performance.now();
    await recorder.toolCall({ orgId: a.orgId, action: 'tool.called', actor: { type: 'api_key', id: 'k' } });
    const waited = performance.now() - started;
    await recorder.drain();
    const written = await g.deps.store.db.execute(
      sql`SELECT action, details FROM audit_events WHERE org_id = ${a.orgId} AND action IN ('auth.refused', 'audit.denials_dropped', 'tool.called')`,
    );
    const byAction = rowsOf<any>(written);
    expect(byAction.filter((r) => r.action === 'tool.called').length).toBe(1);
    expect(byAction.filter((r) => r.action === 'auth.refused').length).toBe(50);
    const dropped = byAction.filter((r) => r.action === 'audit.denials_dropped');
    expect(dropped.length).toBe(1);
    expect(dropped[0].details.count).toBe(4950);
    // The tool call waited for one batch, not for 5000 refusals: generous bound for a shared 2-core machine.
    expect(waited).toBeLessThan(2000);
    expect((await verifyChain(g.deps.store.db, a.orgId)).ok).toBe(true);
  });

  test('while the tool-call queue is full, new calls are refused before they run', async () => {
    verifies('AUDIT-FLOOD');
    const recorder = new AuditRecorder({ db: g.deps.store.db, log: createLogger('silent'), queueMax: 10 });
    const pending = Array.from({ length: 10 }, () => recorder.toolCall({ orgId: a.orgId, action: 'tool.called', actor: { type: 'system', id: null } }));
    expect(recorder.accepting()).toBe(false);
    await Promise.all(pending);
    expect(recorder.accepting()).toBe(true);
  });
});
