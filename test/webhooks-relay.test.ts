/**
 * tool.called without any webhook write on the hot path (issue 11, last item): the tool call's audit row is the outbox
 * record; webhooks/relay.ts turns sealed rows into events and deliveries. Real stores (PGlite and PostgreSQL), the
 * gateway's real recorder and sealer, real HTTP receivers on 127.0.0.1, real tools/call against a real PostgreSQL
 * target.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { rowsOf } from '../src/store/db.ts';
import { relayToolCalled } from '../src/webhooks/relay.ts';
import { verifies } from './requirements.ts';
import { freshDatabase, onboard, startTestGateway, tokenFor, type Onboarded, type StoreKind, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { hmac, startReceiver, toHex, until, type Receiver } from './support/webhooks.ts';

setDefaultTimeout(90_000);
const hasPg = await serviceAvailable('postgres');
const FAST = { TOOLGATE_WEBHOOK_POLL_MS: '30', TOOLGATE_WEBHOOK_RETRY_BASE_MS: '300', TOOLGATE_WEBHOOK_TIMEOUT_MS: '1500', TOOLGATE_WEBHOOK_LEASE_MS: '2500' };
const TOOL = 'query_postgresql_items';

async function subscribe(
  g: TestGateway,
  token: string,
  url: string,
  events: sdk.WebhookEventType[] = ['tool.called'],
): Promise<{ id: string; secret: string }> {
  const { data, response } = await sdk.createWebhook({ client: sdkFor(g, token).client, body: { url, events } });
  expect(response.status).toBe(201);
  return data as { id: string; secret: string };
}

const q = async <T>(g: TestGateway, query: ReturnType<typeof sql>) => rowsOf<T>(await g.deps.store.db.execute(query));

/** The outbox rows of an org: event id, body and the endpoint each delivery goes to. */
const outboxOf = (g: TestGateway, orgId: string) =>
  q<{ id: string; body: string; webhook_id: string }>(
    g,
    sql`SELECT e.id, e.body, d.webhook_id FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.org_id = ${orgId} ORDER BY e.created_at, e.id`,
  );

/** The org's tools/call audit rows of calls that ran a connector tool (the ones that are tool.called events). */
const calledRows = (g: TestGateway, orgId: string) =>
  q<{ id: string }>(g, sql`SELECT id FROM audit_events WHERE org_id = ${orgId} AND action = 'tool.called' AND details->>'counted' = 'true' ORDER BY seq`);

for (const kind of ['pglite', 'postgres'] as StoreKind[]) {
  describe.skipIf(kind === 'postgres' && !hasPg)(`the tool.called relay (${kind})`, () => {
    let g: TestGateway;
    let org: Onboarded;
    let token: string;
    let hook: { id: string };
    let receiver: Receiver;
    const connectorId = crypto.randomUUID();

    /** A tools/call's audit row as the tool runtime writes it (runtime.ts), through the gateway's recorder; sealed. */
    async function call(orgId: string, details: Record<string, unknown> = {}): Promise<void> {
      await g.deps.audit.toolCall({
        orgId,
        action: 'tool.called',
        actor: { type: 'api_key', id: 'key-1' },
        targetType: 'tool',
        targetId: TOOL,
        outcome: 'success',
        details: {
          tool_name: TOOL,
          connector_id: connectorId,
          connector_type: 'postgresql',
          outcome: 'success',
          duration_ms: 3.6,
          row_count: 2,
          counted: true,
          arguments_sha256: 'a'.repeat(64),
          ...details,
        },
      });
      await g.deps.audit.drain();
    }

    beforeAll(async () => {
      // No worker (and so no relay) in the process: the test runs the relay itself and reads the outbox.
      receiver = startReceiver();
      g = await startTestGateway(kind, { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, TOOLGATE_WEBHOOK_WORKER: '0' });
      org = await onboard(g);
      token = await tokenFor(g, org.clientId, org.clientSecret);
      hook = await subscribe(g, token, receiver.url('/hook'));
    });
    afterAll(async () => {
      await g?.close();
      receiver?.stop();
    });

    test('a sealed call becomes one event (evt_<audit row id>, the documented data) and one delivery; relaying again adds nothing', async () => {
      verifies('WEBHOOK-TOOL-CALLED-RELAY');
      const before = (await outboxOf(g, org.orgId)).length;
      await call(org.orgId);
      await call(org.orgId, { outcome: 'error', duration_ms: 0.4 });
      // Not events: a call held for approval (not counted) and a built-in tool (no connector).
      await call(org.orgId, { counted: false, held_for_approval: true });
      await call(org.orgId, { connector_id: null, connector_type: null, tool_name: 'check_approval_status', counted: true });
      expect(await relayToolCalled(g.deps.store.db)).toBe(2);
      const rows = (await outboxOf(g, org.orgId)).slice(before);
      const audit = (await calledRows(g, org.orgId)).filter((r) => rows.some((o) => o.id === `evt_${r.id}`));
      expect(rows.map((r) => r.id)).toEqual(audit.map((r) => `evt_${r.id}`));
      expect(rows.every((r) => r.webhook_id === hook.id)).toBe(true);
      const bodies = rows.map((r) => JSON.parse(r.body));
      for (const [i, body] of bodies.entries()) {
        expect(body).toEqual({ id: rows[i]!.id, type: 'tool.called', org_id: org.orgId, created_at: expect.any(String), data: expect.any(Object) });
        expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
      }
      // Exactly the ToolCalledData of openapi.yaml: these keys, duration_ms an integer.
      expect(bodies.map((b) => b.data)).toEqual([
        { tool_name: TOOL, connector_id: connectorId, connector_type: 'postgresql', is_error: false, duration_ms: 4, caller: { type: 'api_key', id: 'key-1' } },
        { tool_name: TOOL, connector_id: connectorId, connector_type: 'postgresql', is_error: true, duration_ms: 0, caller: { type: 'api_key', id: 'key-1' } },
      ]);
      expect(await relayToolCalled(g.deps.store.db)).toBe(0);
      expect((await outboxOf(g, org.orgId)).length).toBe(before + 2);
    });

    test('all or nothing: a relay transaction that fails writes no event and keeps its cursor; the retry writes the same id once', async () => {
      verifies('WEBHOOK-TOOL-CALLED-RELAY');
      const cursor = async () =>
        Number((await q<{ after_seq: string }>(g, sql`SELECT after_seq FROM webhook_relay_cursors WHERE webhook_id = ${hook.id}`))[0]!.after_seq);
      const at = await cursor();
      const before = (await outboxOf(g, org.orgId)).length;
      await call(org.orgId);
      // The delivery insert (the relay's last write before the cursor) fails for this endpoint.
      await g.deps.store.db.execute(
        sql.raw(`CREATE FUNCTION tg_refuse_delivery() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`),
      );
      await g.deps.store.db.execute(
        sql.raw(
          `CREATE TRIGGER tg_refuse_delivery BEFORE INSERT ON webhook_deliveries FOR EACH ROW WHEN (NEW.webhook_id = '${hook.id}') EXECUTE FUNCTION tg_refuse_delivery()`,
        ),
      );
      try {
        await expect(relayToolCalled(g.deps.store.db)).rejects.toThrow();
        expect((await outboxOf(g, org.orgId)).length).toBe(before);
        const events = await q(
          g,
          sql`SELECT id FROM webhook_events e WHERE org_id = ${org.orgId} AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`,
        );
        expect(events).toEqual([]);
        expect(await cursor()).toBe(at);
      } finally {
        await g.deps.store.db.execute(sql.raw(`DROP TRIGGER tg_refuse_delivery ON webhook_deliveries`));
        await g.deps.store.db.execute(sql.raw(`DROP FUNCTION tg_refuse_delivery()`));
      }
      expect(await relayToolCalled(g.deps.store.db)).toBe(1);
      const rows = (await outboxOf(g, org.orgId)).slice(before);
      const [last] = (await calledRows(g, org.orgId)).slice(-1);
      expect(rows.map((r) => r.id)).toEqual([`evt_${last!.id}`]);
      expect(await cursor()).toBeGreaterThan(at);
    });

    test('no backfill: an endpoint gets the calls after it starts taking tool.called; a disabled one gets none; another org none', async () => {
      verifies('WEBHOOK-TOOL-CALLED-RELAY');
      await call(org.orgId);
      // Committed and sealed before the second endpoint exists: only the first endpoint gets it.
      const late = await subscribe(g, token, receiver.url('/late'));
      await relayToolCalled(g.deps.store.db);
      const forLate = async () => (await outboxOf(g, org.orgId)).filter((r) => r.webhook_id === late.id);
      expect(await forLate()).toEqual([]);
      await call(org.orgId);
      await relayToolCalled(g.deps.store.db);
      expect((await forLate()).length).toBe(1);
      // Disabled: nothing while off, and nothing of that period once on again.
      const patch = (enabled: boolean) =>
        sdk.updateWebhook({ client: sdkFor(g, token).client, throwOnError: true, path: { webhookId: late.id }, body: { enabled } });
      await patch(false);
      await call(org.orgId);
      await relayToolCalled(g.deps.store.db);
      await patch(true);
      await relayToolCalled(g.deps.store.db);
      expect((await forLate()).length).toBe(1);
      await call(org.orgId);
      await relayToolCalled(g.deps.store.db);
      expect((await forLate()).length).toBe(2);
      // An approval-only endpoint and an org without webhooks: no tool.called rows.
      const other = await onboard(g);
      await subscribe(g, await tokenFor(g, other.clientId, other.clientSecret), receiver.url('/other'), ['approval.requested']);
      await call(other.orgId);
      await relayToolCalled(g.deps.store.db);
      expect(await outboxOf(g, other.orgId)).toEqual([]);
      // A deleted endpoint takes its cursor with it.
      await sdk.deleteWebhook({ client: sdkFor(g, token).client, throwOnError: true, path: { webhookId: late.id } });
      expect(await q(g, sql`SELECT 1 FROM webhook_relay_cursors WHERE webhook_id = ${late.id}`)).toEqual([]);
    });
  });
}

describe.skipIf(!hasPg)('tool.called end to end: real tools/call, receivers, restarts and two instances', () => {
  let targets: Targets;
  beforeAll(async () => {
    targets = await createTargets('tg_relay', 'pg');
  });
  afterAll(async () => targets?.drop());

  async function orgWithTool(g: TestGateway): Promise<Onboarded & { token: string }> {
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    await createConnector(g, token, { name: 'items', type: 'postgresql', config: targets.pgConfig });
    return { ...org, token };
  }
  const run = async (g: TestGateway, org: Onboarded) => {
    const res = await callTool(g, org.slug, { apiKey: org.apiKey }, TOOL, { sql: 'SELECT id FROM items' });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('"isError":true');
  };

  test("a subscribed org's call is delivered once, with the documented body and a signature an independent HMAC verifies", async () => {
    verifies('WEBHOOK-TOOL-CALLED-RELAY', 'WEBHOOK-TOOL-CALLED', 'WEBHOOK-SIGNATURE');
    const receiver: Receiver = startReceiver();
    const g = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST });
    try {
      const org = await orgWithTool(g);
      const hook = await subscribe(g, org.token, receiver.url());
      await run(g, org);
      await until(() => receiver.received.length === 1, 15_000, 'the tool.called delivery');
      await Bun.sleep(300);
      expect(receiver.received.length).toBe(1);
      const { headers, body } = receiver.received[0]!;
      const [row] = await calledRows(g, org.orgId);
      const connector = (await q<{ id: string }>(g, sql`SELECT id FROM connectors WHERE org_id = ${org.orgId}`))[0]!;
      const parsed = JSON.parse(body);
      expect(parsed).toEqual({
        id: `evt_${row!.id}`,
        type: 'tool.called',
        org_id: org.orgId,
        created_at: expect.any(String),
        data: {
          tool_name: TOOL,
          connector_id: connector.id,
          connector_type: 'postgresql',
          is_error: false,
          duration_ms: expect.any(Number),
          caller: { type: 'api_key', id: expect.any(String) },
          // Every table the statement read (decision 0300): the names, never the statement.
          tables: ['public.items'],
        },
      });
      expect(Number.isInteger(parsed.data.duration_ms)).toBe(true);
      expect(body).not.toContain('SELECT');
      expect(headers['x-service-event']).toBe('tool.called');
      expect(headers['webhook-id']).toBe(parsed.id);
      const expected = toHex(await hmac(new TextEncoder().encode(hook.secret), `${headers['x-service-timestamp']}.${body}`));
      expect(headers['x-service-signature']).toBe(`sha256=${expected}`);
    } finally {
      await g.close();
      receiver.stop();
    }
  });

  test("the hot path writes nothing for webhooks: a subscribed org's answered call has its audit row and no outbox row until the relay runs", async () => {
    verifies('WEBHOOK-TOOL-CALLED-RELAY');
    const receiver = startReceiver();
    const g = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, TOOLGATE_WEBHOOK_WORKER: '0' });
    try {
      const org = await orgWithTool(g);
      await subscribe(g, org.token, receiver.url());
      await run(g, org);
      await g.deps.audit.drain();
      expect((await calledRows(g, org.orgId)).length).toBe(1);
      expect(await outboxOf(g, org.orgId)).toEqual([]);
      expect(await relayToolCalled(g.deps.store.db)).toBe(1);
      expect((await outboxOf(g, org.orgId)).length).toBe(1);
    } finally {
      await g.close();
      receiver.stop();
    }
  });

  test('crash safety: calls committed while no relay runs are delivered once an instance with the relay starts', async () => {
    verifies('WEBHOOK-TOOL-CALLED-RELAY', 'WEBHOOK-OUTBOX');
    const db = await freshDatabase();
    const receiver = startReceiver();
    const env = { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST };
    const writer = await startTestGateway('postgres', { ...env, TOOLGATE_WEBHOOK_WORKER: '0' }, db.url);
    let restarted: TestGateway | null = null;
    try {
      const org = await orgWithTool(writer);
      await subscribe(writer, org.token, receiver.url());
      for (let i = 0; i < 5; i++) await run(writer, org);
      await writer.close();
      expect(receiver.received.length).toBe(0);
      restarted = await startTestGateway('postgres', env, db.url);
      await until(() => receiver.received.length === 5, 20_000, 'five deliveries after the restart');
      await Bun.sleep(300);
      const ids = (await calledRows(restarted, org.orgId)).map((r) => `evt_${r.id}`);
      expect(receiver.ids().sort()).toEqual(ids.sort());
    } finally {
      await restarted?.close();
      receiver.stop();
      await db.drop();
    }
  });

  test("two instances with relays, N calls: each tool.called delivered exactly once, with its audit row's id", async () => {
    verifies('WEBHOOK-TOOL-CALLED-RELAY', 'WEBHOOK-OUTBOX');
    const db = await freshDatabase();
    const receiver = startReceiver();
    const env = { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST, TOOLGATE_WEBHOOK_ENDPOINT_CONCURRENCY: '8' };
    const one = await startTestGateway('postgres', env, db.url);
    const two = await startTestGateway('postgres', env, db.url);
    try {
      const org = await orgWithTool(one);
      await subscribe(one, org.token, receiver.url());
      const N = 40;
      await Promise.all(Array.from({ length: N }, (_, i) => run(i % 2 ? one : two, org)));
      await until(() => receiver.received.length >= N, 30_000, 'all deliveries');
      await Bun.sleep(500);
      expect(receiver.received.length).toBe(N);
      const ids = (await calledRows(one, org.orgId)).map((r) => `evt_${r.id}`);
      expect(ids.length).toBe(N);
      expect(receiver.ids().sort()).toEqual(ids.sort());
    } finally {
      await one.close();
      await two.close();
      receiver.stop();
      await db.drop();
    }
  });
});
