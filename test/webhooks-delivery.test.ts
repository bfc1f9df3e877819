/**
 * Webhook delivery (issue 11) against real HTTP receivers on 127.0.0.1 and real PostgreSQL: signatures checked with
 * WebCrypto, retries with backoff, 3xx not followed, 410 disables, a crashed process's delivery re-sent after
 * restart with the same id, two instances delivering each event once, a hanging receiver isolated.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { resolve } from 'node:path';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { freshDatabase, onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { deliveryStatuses, emitEvent, hmac, startReceiver, toHex, until, type Receiver } from './support/webhooks.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
const ROOT = resolve(import.meta.dir, '..');
const FAST = { TOOLGATE_WEBHOOK_POLL_MS: '30', TOOLGATE_WEBHOOK_RETRY_BASE_MS: '300', TOOLGATE_WEBHOOK_TIMEOUT_MS: '1500', TOOLGATE_WEBHOOK_LEASE_MS: '2500' };

async function subscribe(
  gateway: TestGateway,
  token: string,
  url: string,
  events: sdk.WebhookEventType[] = ['approval.requested'],
): Promise<{ id: string; secret: string }> {
  const { data, error, response } = await sdk.createWebhook({ client: sdkFor(gateway, token).client, body: { url, events } });
  if (response.status !== 201) throw new Error(`webhook creation failed: ${response.status} ${JSON.stringify(error)}`);
  return data as { id: string; secret: string };
}
/** A webhook's delivery attempts, newest first, read through the SDK. */
const deliveriesOf = async (gateway: TestGateway, token: string, webhookId: string) =>
  (await sdk.listWebhookDeliveries({ client: sdkFor(gateway, token).client, throwOnError: true, path: { webhookId } })).data.deliveries as any[];
const unsubscribe = (gateway: TestGateway, token: string, webhookId: string) =>
  sdk.deleteWebhook({ client: sdkFor(gateway, token).client, throwOnError: true, path: { webhookId } });
const webhook = async (gateway: TestGateway, token: string, webhookId: string) =>
  (await sdk.listWebhooks({ client: sdkFor(gateway, token).client, throwOnError: true })).data.webhooks.find((w) => w.id === webhookId)!;

const requested = { approval_id: 'ap_1', tool_name: 'query_postgresql_orders', requested_by: 'key-1', expires_at: '2026-01-01T00:00:00.000Z' };

describe.skipIf(!hasPg)('webhook delivery', () => {
  let receiver: Receiver;
  let behaviour: (n: number, path: string) => Response | Promise<Response> = () => new Response('ok');
  let gateway: TestGateway;
  let token: string;
  let orgId: string;

  beforeAll(async () => {
    receiver = startReceiver((n, r) => behaviour(n, r.headers['x-test-path'] ?? ''));
    gateway = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST });
    const org = await onboard(gateway);
    orgId = org.orgId;
    token = await tokenFor(gateway, org.clientId, org.clientSecret);
  });
  afterAll(async () => {
    await gateway?.close();
    receiver?.stop();
  });

  test('body and both signature header sets verify with an independent HMAC', async () => {
    verifies('WEBHOOK-SIGNATURE');
    receiver.received.length = 0;
    behaviour = () => new Response('ok');
    const hook = await subscribe(gateway, token, receiver.url('/sig'));
    const eventId = await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(() => receiver.received.length === 1);
    const { headers, body } = receiver.received[0]!;
    const parsed = JSON.parse(body);
    expect(parsed).toEqual({ id: eventId, type: 'approval.requested', org_id: orgId, created_at: expect.any(String), data: requested });
    expect(eventId).toMatch(/^evt_[0-9a-f-]{36}$/);
    expect(new Date(parsed.created_at).toISOString()).toBe(parsed.created_at);
    expect(headers['x-service-event']).toBe('approval.requested');
    const timestamp = headers['x-service-timestamp']!;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(30);
    const expected = toHex(await hmac(new TextEncoder().encode(hook.secret), `${timestamp}.${body}`));
    expect(headers['x-service-signature']).toBe(`sha256=${expected}`);
    // Standard Webhooks: key = base64 decode of the part after whsec_, over "<id>.<timestamp>.<body>".
    const key = Uint8Array.from(atob(hook.secret.slice(6)), (c) => c.charCodeAt(0));
    const standard = btoa(String.fromCharCode(...(await hmac(key, `${eventId}.${headers['webhook-timestamp']}.${body}`))));
    expect(headers['webhook-id']).toBe(eventId);
    expect(headers['webhook-signature']).toBe(`v1,${standard}`);
    // A tampered body does not verify.
    expect(toHex(await hmac(new TextEncoder().encode(hook.secret), `${timestamp}.${body.replace('ap_1', 'ap_2')}`))).not.toBe(expected);
    await unsubscribe(gateway, token, hook.id);
  });

  test('500 then 200: retried after the backoff with the same id; the attempts are listed', async () => {
    verifies('WEBHOOK-RETRY', 'WEBHOOK-DELIVERIES');
    receiver.received.length = 0;
    behaviour = (n) => new Response('no', { status: n === 0 ? 500 : 200 });
    const hook = await subscribe(gateway, token, receiver.url('/retry'));
    const eventId = await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(() => receiver.received.length === 2, 15_000, 'the retry');
    expect(receiver.ids()).toEqual([eventId, eventId]);
    const gap = receiver.received[1]!.at - receiver.received[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(300 * 0.8 - 20);
    await until(async () => (await deliveryStatuses(gateway, hook.id))[0] === 'delivered');
    const deliveries = await deliveriesOf(gateway, token, hook.id);
    expect(deliveries.map((d: any) => [d.attempt, d.status_code])).toEqual([
      [2, 200],
      [1, 500],
    ]);
    expect(deliveries[1].error).toContain('500');
    await unsubscribe(gateway, token, hook.id);
  });

  test('each attempt keeps what it sent and what came back: headers, body, status, the response capped at 4 KB', async () => {
    receiver.received.length = 0;
    // 3000 two-byte characters (6000 bytes): the kept body is cut at 4096 bytes, on a character boundary.
    const long = 'é'.repeat(3000);
    behaviour = (n) =>
      n === 0
        ? new Response(long, { status: 500, headers: { 'x-receiver': 'busy', 'set-cookie': 'session=receiver-secret' } })
        : new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json', 'x-long': 'v'.repeat(600) } });
    const hook = await subscribe(gateway, token, receiver.url('/exchange'));
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(() => receiver.received.length === 2, 15_000, 'the retry');
    await until(async () => (await deliveryStatuses(gateway, hook.id))[0] === 'delivered');
    // Paged one by one through the SDK: each page carries the exchange of its attempt.
    const client = sdkFor(gateway, token).client;
    const first = (await sdk.listWebhookDeliveries({ client, throwOnError: true, path: { webhookId: hook.id }, query: { limit: 1 } })).data;
    expect(first.next_cursor).toBeString();
    const second = (
      await sdk.listWebhookDeliveries({ client, throwOnError: true, path: { webhookId: hook.id }, query: { limit: 1, cursor: first.next_cursor! } })
    ).data;
    const [ok, failed] = [first.deliveries[0]!, second.deliveries[0]!];
    expect([ok.attempt, failed.attempt]).toEqual([2, 1]);
    for (const [attempt, sent] of [
      [failed, receiver.received[0]!],
      [ok, receiver.received[1]!],
    ] as const) {
      expect(attempt.request_body).toBe(sent.body);
      // Every header it sent, as the receiver got it (the receiver's server adds host and content-length of its own).
      for (const [name, value] of Object.entries(attempt.request_headers!)) expect(sent.headers[name]).toBe(value);
      expect(Object.keys(attempt.request_headers!).sort()).toEqual(
        [
          'content-type',
          'user-agent',
          'webhook-id',
          'webhook-signature',
          'webhook-timestamp',
          'x-service-event',
          'x-service-signature',
          'x-service-timestamp',
        ].sort(),
      );
      expect(JSON.stringify(attempt)).not.toContain(hook.secret);
    }
    expect(ok).toMatchObject({ status_code: 200, response_body: '{"ok":true}', response_truncated: false });
    expect(ok.response_headers!['content-type']).toBe('application/json');
    expect(ok.response_headers!['x-long']).toBe(`${'v'.repeat(512)}…`);
    expect(failed).toMatchObject({ status_code: 500, response_truncated: true });
    expect(failed.response_body).toBe('é'.repeat(2048));
    expect(failed.response_headers!['x-receiver']).toBe('busy');
    expect(failed.response_headers!['set-cookie']).toBe('[withheld]');
    await unsubscribe(gateway, token, hook.id);
  });

  test('an attempt that got no answer keeps its request and no response', async () => {
    receiver.received.length = 0;
    const hook = await subscribe(gateway, token, receiver.url('/too-much'));
    behaviour = () => new Response('x'.repeat(200_000));
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(async () => (await deliveriesOf(gateway, token, hook.id)).length >= 1, 15_000, 'the first attempt');
    const [attempt] = await deliveriesOf(gateway, token, hook.id);
    expect(attempt).toMatchObject({ status_code: null, response_headers: null, response_body: null, response_truncated: false });
    expect(attempt.error).toContain('exceeds');
    expect(attempt.request_headers['x-service-event']).toBe('approval.requested');
    await unsubscribe(gateway, token, hook.id);
  });

  test('a redirect is not followed and counts as a failure', async () => {
    verifies('WEBHOOK-RETRY', 'OUTBOUND-REDIRECT');
    receiver.received.length = 0;
    behaviour = (n) => (n === 0 ? new Response(null, { status: 302, headers: { location: receiver.url('/elsewhere') } }) : new Response('ok'));
    const hook = await subscribe(gateway, token, receiver.url('/redirect'));
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(() => receiver.received.length === 2, 15_000, 'the retry after the redirect');
    expect(receiver.received.every((r) => r.headers['x-service-event'] === 'approval.requested')).toBe(true);
    const deliveries = await deliveriesOf(gateway, token, hook.id);
    const first = deliveries.find((d: any) => d.attempt === 1);
    expect(first.error).toContain('redirect');
    expect(first.status_code).toBe(302);
    // Two requests, both POSTs of the event to the hook path: the Location was never fetched (a GET would have no body).
    expect(receiver.received.every((r) => r.body.includes('"approval.requested"'))).toBe(true);
    await unsubscribe(gateway, token, hook.id);
  });

  test('410 Gone disables the endpoint; later events are not sent to it', async () => {
    verifies('WEBHOOK-RETRY');
    receiver.received.length = 0;
    behaviour = () => new Response('gone', { status: 410 });
    const hook = await subscribe(gateway, token, receiver.url('/gone'));
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(async () => (await webhook(gateway, token, hook.id)).enabled === false);
    const listed = await webhook(gateway, token, hook.id);
    expect(listed.disabled_reason).toBe('gone');
    expect(await deliveryStatuses(gateway, hook.id)).toEqual(['failed']);
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await Bun.sleep(400);
    expect(receiver.received.length).toBe(1);
    await unsubscribe(gateway, token, hook.id);
  });

  test('a receiver that answers too much, or hangs, fails the attempt (size cap, timeout) and is retried', async () => {
    verifies('WEBHOOK-RETRY', 'OUTBOUND-TIMEOUT-SIZE');
    receiver.received.length = 0;
    behaviour = (n) => (n === 0 ? new Response('x'.repeat(200_000)) : n === 1 ? new Promise<Response>(() => undefined) : new Response('ok'));
    const hook = await subscribe(gateway, token, receiver.url('/big'));
    await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(async () => (await deliveryStatuses(gateway, hook.id))[0] === 'delivered', 20_000, 'delivery after the big and the hanging answer');
    const deliveries = await deliveriesOf(gateway, token, hook.id);
    const byAttempt = Object.fromEntries(deliveries.map((d: any) => [d.attempt, d]));
    expect(byAttempt[1].error).toContain('exceeds 65536 bytes');
    expect(byAttempt[2].error).toContain('timed out after 1500 ms');
    expect(byAttempt[2].latency_ms).toBeGreaterThanOrEqual(1400);
    expect(byAttempt[3].status_code).toBe(200);
    await unsubscribe(gateway, token, hook.id);
  });

  test('a hanging receiver does not stall another endpoint', async () => {
    verifies('WEBHOOK-ISOLATION', 'OUTBOUND-TIMEOUT-SIZE');
    const hanging = startReceiver(() => new Promise<Response>(() => undefined));
    const slow = await startTestGateway('postgres', {
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${hanging.hostPort},${receiver.hostPort}`,
      ...FAST,
      TOOLGATE_WEBHOOK_TIMEOUT_MS: '3000',
      TOOLGATE_WEBHOOK_LEASE_MS: '5000',
    });
    try {
      const a = await onboard(slow);
      const b = await onboard(slow);
      await subscribe(slow, await tokenFor(slow, a.clientId, a.clientSecret), hanging.url());
      await subscribe(slow, await tokenFor(slow, b.clientId, b.clientSecret), receiver.url('/fast'));
      receiver.received.length = 0;
      behaviour = () => new Response('ok');
      for (let i = 0; i < 40; i++) await emitEvent(slow, 'approval.requested', a.orgId, requested);
      await until(() => hanging.received.length >= 1, 5000, 'the hanging receiver to be called');
      const started = Date.now();
      await emitEvent(slow, 'approval.requested', b.orgId, requested);
      await until(() => receiver.received.length === 1, 2500, 'the other org delivery');
      expect(Date.now() - started).toBeLessThan(2500);
      // The hanging endpoint holds at most its per-endpoint share of requests.
      expect(hanging.received.length).toBeLessThanOrEqual(slow.config.webhookEndpointConcurrency);
    } finally {
      hanging.stop();
      await slow.close();
    }
  });
  test('deliveries are paged newest first: next_cursor walks every attempt once, a foreign cursor is refused', async () => {
    verifies('WEBHOOK-DELIVERIES');
    behaviour = () => new Response('ok');
    const hook = await subscribe(gateway, token, receiver.url('/paged'));
    for (let i = 0; i < 5; i++) await emitEvent(gateway, 'approval.requested', orgId, requested);
    await until(async () => (await deliveriesOf(gateway, token, hook.id)).length === 5);
    const client = sdkFor(gateway, token).client;
    const all = await deliveriesOf(gateway, token, hook.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const { data } = await sdk.listWebhookDeliveries({
        client,
        throwOnError: true,
        path: { webhookId: hook.id },
        query: { limit: 2, ...(cursor ? { cursor } : {}) },
      });
      seen.push(...data.deliveries.map((d) => d.id));
      if (data.next_cursor === null) break;
      expect(data.deliveries).toHaveLength(2);
      cursor = data.next_cursor;
    }
    expect(seen).toEqual(all.map((d) => d.id));
    const times = all.map((d) => Date.parse(d.attempted_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // The SDK's iterator follows the cursor to the same list.
    const iterated: string[] = [];
    for await (const attempt of sdkFor(gateway, token).webhookDeliveries(hook.id, { limit: 2 })) iterated.push(attempt.id);
    expect(iterated).toEqual(seen);
    const other = await subscribe(gateway, token, receiver.url('/other'));
    const refused = await sdk.listWebhookDeliveries({ client, path: { webhookId: other.id }, query: { cursor: all[0].id } });
    expect(refused.response.status).toBe(400);
    expect((refused.error as { error: string }).error).toBe('invalid_cursor');
    expect((await sdk.listWebhookDeliveries({ client, path: { webhookId: hook.id }, query: { cursor: 'nope' } })).response.status).toBe(400);
    await unsubscribe(gateway, token, hook.id);
    await unsubscribe(gateway, token, other.id);
  });
});

describe.skipIf(!hasPg)('webhook outbox across processes and instances', () => {
  test('crash mid-flight: the killed process recorded nothing; after restart the same id is delivered and recorded once', async () => {
    verifies('WEBHOOK-OUTBOX');
    const db = await freshDatabase();
    let answered = false;
    let firstSeen: () => void = () => undefined;
    const seen = new Promise<void>((r) => (firstSeen = r));
    const receiver = startReceiver((n) => {
      if (n === 0) {
        firstSeen();
        return new Promise<Response>(() => undefined); // hangs until its sender dies
      }
      answered = true;
      return new Response('ok');
    });
    const env = { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST, TOOLGATE_WEBHOOK_TIMEOUT_MS: '4000', TOOLGATE_WEBHOOK_LEASE_MS: '5000' };
    // 1. An instance without a worker commits the event (the outbox row) and stops: nothing was sent.
    const writer = await startTestGateway('postgres', { ...env, TOOLGATE_WEBHOOK_WORKER: '0' }, db.url);
    const org = await onboard(writer);
    const hook = await subscribe(writer, await tokenFor(writer, org.clientId, org.clientSecret), receiver.url());
    const eventId = await emitEvent(writer, 'approval.requested', org.orgId, requested);
    await writer.close();
    expect(receiver.received.length).toBe(0);
    // 2. A real gateway process claims and sends it; it is killed (SIGKILL) while the receiver holds the request.
    const proc = Bun.spawn([process.execPath, 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        TOOLGATE_SECRET_KEY: 'a'.repeat(64),
        TOOLGATE_DEMO: '0',
        TOOLGATE_LOG_LEVEL: 'silent',
        ...env,
      },
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'ignore',
    });
    try {
      await Promise.race([
        seen,
        Bun.sleep(20_000).then(() => {
          throw new Error('the process never sent the event');
        }),
      ]);
      proc.kill('SIGKILL');
      await proc.exited;
    } finally {
      proc.kill('SIGKILL');
    }
    // 3. A restarted instance (short lease) takes the delivery over once the dead worker's lease ends.
    const restarted = await startTestGateway('postgres', { ...env, TOOLGATE_WEBHOOK_TIMEOUT_MS: '1500', TOOLGATE_WEBHOOK_LEASE_MS: '2500' }, db.url);
    try {
      await until(() => answered, 40_000, 'the delivery after restart');
      await until(async () => (await deliveryStatuses(restarted, hook.id))[0] === 'delivered');
      expect(receiver.ids()).toEqual([eventId, eventId]);
      expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
      const list = await deliveriesOf(restarted, await tokenFor(restarted, org.clientId, org.clientSecret), hook.id);
      // The killed attempt left no row; the one recorded is the second.
      expect(list.map((d: any) => [d.attempt, d.status_code])).toEqual([[2, 200]]);
    } finally {
      await restarted.close();
      receiver.stop();
      await db.drop();
    }
  });

  test('two instances, N events: each delivered exactly once', async () => {
    verifies('WEBHOOK-OUTBOX');
    const db = await freshDatabase();
    const receiver = startReceiver(() => Bun.sleep(5).then(() => new Response('ok')));
    const env = { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST, TOOLGATE_WEBHOOK_ENDPOINT_CONCURRENCY: '8' };
    const one = await startTestGateway('postgres', env, db.url);
    const two = await startTestGateway('postgres', env, db.url);
    try {
      const org = await onboard(one);
      const hook = await subscribe(one, await tokenFor(one, org.clientId, org.clientSecret), receiver.url());
      const N = 60;
      const ids = await Promise.all(Array.from({ length: N }, (_, i) => emitEvent(i % 2 ? one : two, 'approval.requested', org.orgId, requested)));
      await until(async () => (await deliveryStatuses(one, hook.id)).filter((s) => s === 'delivered').length === N, 30_000, 'all deliveries');
      await Bun.sleep(300);
      expect(receiver.received.length).toBe(N);
      expect(new Set(receiver.ids())).toEqual(new Set(ids));
    } finally {
      await one.close();
      await two.close();
      receiver.stop();
      await db.drop();
    }
  });
});

describe.skipIf(!hasPg)('tool.called', () => {
  test('a tools/call of an org with a tool.called webhook is delivered; an org without one writes no outbox row', async () => {
    verifies('WEBHOOK-TOOL-CALLED');
    const { createTargets } = await import('./support/targets.ts');
    const { callTool, createConnector } = await import('./support/mcp.ts');
    const { sql } = await import('drizzle-orm');
    const { rowsOf } = await import('../src/store/db.ts');
    const targets = await createTargets('tg_hooks', 'pg');
    const receiver = startReceiver();
    const gateway = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST });
    try {
      const subscribed = await onboard(gateway);
      const quiet = await onboard(gateway);
      for (const org of [subscribed, quiet]) {
        await createConnector(gateway, await tokenFor(gateway, org.clientId, org.clientSecret), {
          name: 'items',
          type: 'postgresql',
          config: targets.pgConfig,
        });
      }
      // Called once before subscribing: the cached "no webhook" answer must not outlive the webhook's creation.
      expect((await callTool(gateway, subscribed.slug, { apiKey: subscribed.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' })).status).toBe(
        200,
      );
      await subscribe(gateway, await tokenFor(gateway, subscribed.clientId, subscribed.clientSecret), receiver.url(), ['tool.called']);
      const answer = await callTool(gateway, subscribed.slug, { apiKey: subscribed.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' });
      expect(answer.status).toBe(200);
      await callTool(gateway, quiet.slug, { apiKey: quiet.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' });
      await until(() => receiver.received.length === 1, 10_000, 'the tool.called delivery');
      const body = JSON.parse(receiver.received[0]!.body);
      expect(body).toMatchObject({
        type: 'tool.called',
        org_id: subscribed.orgId,
        data: { tool_name: 'query_postgresql_items', connector_type: 'postgresql', is_error: false, caller: { type: 'api_key' } },
      });
      expect(JSON.stringify(body)).not.toContain('SELECT');
      const quietRows = rowsOf(await gateway.deps.store.db.execute(sql`SELECT id FROM webhook_events WHERE org_id = ${quiet.orgId}`));
      expect(quietRows.length).toBe(0);
      await Bun.sleep(200);
      expect(receiver.received.length).toBe(1);
    } finally {
      await gateway.close();
      receiver.stop();
      await targets.drop();
    }
  });
});

describe.skipIf(!hasPg)('approval events (approvals merged)', () => {
  test('holding a flagged call and approving it deliver approval.requested then approval.decided, without the arguments', async () => {
    verifies('WEBHOOK-APPROVAL-EVENTS');
    const { createTargets } = await import('./support/targets.ts');
    const { callTool, createConnector, restTools } = await import('./support/mcp.ts');
    const targets = await createTargets('tg_hookappr', 'pg');
    await targets.pg('CREATE TABLE ledger (id integer, body text)');
    const receiver = startReceiver();
    const gateway = await startTestGateway('postgres', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, ...FAST });
    try {
      const org = await onboard(gateway);
      const manage = await tokenFor(gateway, org.clientId, org.clientSecret);
      await createConnector(gateway, manage, { name: 'ledger', type: 'postgresql', config: targets.pgConfig, allow_write: true });
      const tool = (await restTools(gateway, manage, org.orgId)).find((t) => t.name === 'query_postgresql_ledger')!;
      const client = sdkFor(gateway, manage).client;
      const flagged = await sdk.updateToolMetadata({
        client,
        path: { orgId: org.orgId, toolId: tool.id },
        body: { requires_approval: true, approval_emails: ['ops@example.com'] },
      });
      expect(flagged.response.status).toBe(200);
      await subscribe(gateway, manage, receiver.url(), ['approval.requested', 'approval.decided']);
      const held = await callTool(gateway, org.slug, { apiKey: org.apiKey }, 'query_postgresql_ledger', {
        sql: "INSERT INTO ledger VALUES (7, 'secret-argument')",
      });
      const approvalId = held.body.result.structuredContent.approvalId as string;
      await until(() => receiver.received.length === 1, 10_000, 'approval.requested');
      expect((await sdk.approveApproval({ client, path: { approvalId } })).response.status).toBe(200);
      await until(() => receiver.received.length === 2, 10_000, 'approval.decided');
      const [requestedEvent, decidedEvent] = receiver.received.map((r) => JSON.parse(r.body));
      expect(requestedEvent).toMatchObject({
        type: 'approval.requested',
        org_id: org.orgId,
        data: { approval_id: approvalId, tool_name: 'query_postgresql_ledger' },
      });
      expect(decidedEvent).toMatchObject({ type: 'approval.decided', data: { approval_id: approvalId, decision: 'approved' } });
      expect(receiver.received.map((r) => r.headers['x-service-event'])).toEqual(['approval.requested', 'approval.decided']);
      expect(receiver.received.some((r) => r.body.includes('secret-argument'))).toBe(false);
    } finally {
      await gateway.close();
      receiver.stop();
      await targets.drop();
    }
  });
});
