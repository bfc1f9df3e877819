/**
 * Webhook management (issue 11): admin-only CRUD, the secret shown once and sealed at rest, the URL guard at save
 * (allow-list off) and at send (DNS answer changed after save), delivery list and re-send. Real PostgreSQL, real
 * HTTP receivers on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.ts';
import { createGateway, type Gateway } from '../src/gateway.ts';
import { rowsOf } from '../src/store/db.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { api, BASE, freshDatabase, onboard, OPERATOR_TOKEN, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { contractChecked } from './support/contract.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { emitEvent, startReceiver, until, type Receiver } from './support/webhooks.ts';

setDefaultTimeout(30_000);
const hasPg = await serviceAvailable('postgres');
/** A webhook's delivery attempts, newest first, read through the SDK. */
const deliveriesOf = async (client: sdk.Client, webhookId: string) =>
  (await sdk.listWebhookDeliveries({ client, throwOnError: true, path: { webhookId } })).data.deliveries as any[];

describe.skipIf(!hasPg)('webhook management', () => {
  let gateway: TestGateway;
  let receiver: Receiver;
  let token: string;
  let orgId: string;
  let client: sdk.Client;

  beforeAll(async () => {
    receiver = startReceiver();
    gateway = await startTestGateway('postgres', {
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort,
      TOOLGATE_WEBHOOK_POLL_MS: '50',
      TOOLGATE_WEBHOOK_RETRY_BASE_MS: '100',
    });
    const org = await onboard(gateway);
    orgId = org.orgId;
    token = await tokenFor(gateway, org.clientId, org.clientSecret);
    client = sdkFor(gateway, token).client;
  });
  afterAll(async () => {
    await gateway?.close();
    receiver?.stop();
  });

  test('create returns the secret once; list and patch never show it; it is sealed at rest', async () => {
    verifies('WEBHOOK-CRUD', 'WEBHOOK-SECRET-ONCE');
    const created = await sdk.createWebhook({ client, body: { url: receiver.url(), events: ['approval.requested', 'approval.requested'] } });
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get('cache-control')).toBe('no-store');
    const body = created.data as any;
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(body).toMatchObject({ url: receiver.url(), events: ['approval.requested'], enabled: true, disabled_reason: null });

    const listed = (await sdk.listWebhooks({ client, throwOnError: true })).data;
    expect(listed.webhooks.map((w: any) => w.id)).toContain(body.id);
    expect(JSON.stringify(listed)).not.toContain(body.secret);

    const stored = rowsOf<{ secret_sealed: string }>(await gateway.deps.store.db.execute(sql`SELECT secret_sealed FROM webhooks WHERE id = ${body.id}`));
    expect(stored[0]!.secret_sealed).not.toContain(body.secret.slice(6, 20));
    expect(gateway.deps.box.decrypt(stored[0]!.secret_sealed, `webhook_secret:${body.id}`)).toBe(body.secret);

    const patched = await sdk.updateWebhook({ client, path: { webhookId: body.id }, body: { events: ['tool.called'], enabled: false } });
    expect(patched.response.status).toBe(200);
    const after = patched.data as any;
    expect(after).toMatchObject({ events: ['tool.called'], enabled: false });
    expect(after.secret).toBeUndefined();

    expect((await sdk.deleteWebhook({ client, path: { webhookId: body.id } })).response.status).toBe(200);
    expect((await sdk.deleteWebhook({ client, path: { webhookId: body.id } })).response.status).toBe(404);
    expect((await sdk.updateWebhook({ client, path: { webhookId: body.id }, body: { enabled: true } })).response.status).toBe(404);
  });

  test('bad input: unknown event type, empty events, no fields, non-uuid id', async () => {
    verifies('WEBHOOK-CRUD');
    // Raw HTTP: an event type outside the contract's enum, which the typed SDK cannot send.
    expect((await api(gateway, 'POST', '/api/org/webhooks', token, { url: receiver.url(), events: ['tool.exploded'] })).status).toBe(400);
    expect((await sdk.createWebhook({ client, body: { url: receiver.url(), events: [] } })).response.status).toBe(400);
    expect((await sdk.createWebhook({ client, body: { url: 'not a url', events: ['tool.called'] } })).response.status).toBe(400);
    expect((await sdk.updateWebhook({ client, path: { webhookId: crypto.randomUUID() }, body: {} })).response.status).toBe(400);
    expect((await sdk.listWebhookDeliveries({ client, path: { webhookId: 'nope' } })).response.status).toBe(400);
  });

  test("another org's webhook is 404 on every route", async () => {
    verifies('WEBHOOK-CRUD');
    const created = (await sdk.createWebhook({ client, throwOnError: true, body: { url: receiver.url(), events: ['tool.called'] } })).data;
    const other = await onboard(gateway);
    const theirs = sdkFor(gateway, await tokenFor(gateway, other.clientId, other.clientSecret)).client;
    const path = { webhookId: created.id };
    expect((await sdk.updateWebhook({ client: theirs, path, body: { enabled: false } })).response.status).toBe(404);
    expect((await sdk.deleteWebhook({ client: theirs, path })).response.status).toBe(404);
    expect((await sdk.listWebhookDeliveries({ client: theirs, path })).response.status).toBe(404);
    const listed = (await sdk.listWebhooks({ client: theirs, throwOnError: true })).data;
    expect(listed.webhooks).toEqual([]);
  });

  test('deliveries list the attempts; re-send delivers the same event id again', async () => {
    verifies('WEBHOOK-DELIVERIES', 'WEBHOOK-RESEND');
    const created = (await sdk.createWebhook({ client, throwOnError: true, body: { url: receiver.url('/resend'), events: ['approval.decided'] } })).data;
    const eventId = await emitEvent(gateway, 'approval.decided', orgId, { approval_id: 'a1', tool_name: 't', decision: 'approved', decided_by: null });
    const onPath = () => receiver.received.filter((r) => JSON.parse(r.body).id === eventId);
    await until(() => onPath().length === 1, 10_000, 'first delivery');
    await until(async () => (await deliveriesOf(client, created.id)).length === 1);
    const list = await deliveriesOf(client, created.id);
    expect(list[0]).toMatchObject({
      event_id: eventId,
      event_type: 'approval.decided',
      attempt: 1,
      status_code: 200,
      error: null,
      delivery_status: 'delivered',
    });
    expect(list[0].latency_ms).toBeGreaterThanOrEqual(0);

    const resend = (id: string) => sdk.resendWebhookEvent({ client, path: { webhookId: created.id, eventId: id } });
    const resent = await resend(eventId);
    expect(resent.response.status).toBe(202);
    await until(() => onPath().length === 2, 10_000, 'second delivery');
    expect(new Set(onPath().map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
    expect(onPath()[1]!.body).toBe(onPath()[0]!.body);

    const unknown = `evt_${crypto.randomUUID()}`;
    expect((await resend(unknown)).response.status).toBe(404);
    await sdk.updateWebhook({ client, throwOnError: true, path: { webhookId: created.id }, body: { enabled: false } });
    expect((await resend(eventId)).response.status).toBe(409);
  });
});

describe.skipIf(!hasPg)('webhook URL guard (allow-list off)', () => {
  const dns = new Map<string, string[]>();
  let gateway: Gateway;
  let handle: (r: Request) => Promise<Response>;
  let drop: () => Promise<void>;
  let receiver: Receiver;
  let token: string;
  let orgId: string;

  beforeAll(async () => {
    receiver = startReceiver();
    const db = await freshDatabase();
    drop = db.drop;
    const config = loadConfig({
      TOOLGATE_PUBLIC_URL: BASE,
      TOOLGATE_OPERATOR_TOKEN: OPERATOR_TOKEN,
      TOOLGATE_LOG_LEVEL: 'silent',
      TOOLGATE_DEMO: '0',
      DATABASE_URL: db.url,
      TOOLGATE_SECRET_KEY: 'a'.repeat(64),
      TOOLGATE_WEBHOOK_POLL_MS: '50',
      TOOLGATE_WEBHOOK_RETRY_BASE_MS: '60000',
    });
    expect(config.outboundAllowHosts).toEqual([]);
    gateway = await createGateway(config, { inMemory: true, resolve: async (host) => dns.get(host) ?? [] });
    handle = contractChecked((r) => gateway.app.handle(r));
    const org = await onboard({ ...gateway, handle });
    orgId = org.orgId;
    token = await tokenFor({ ...gateway, handle }, org.clientId, org.clientSecret);
  });
  afterAll(async () => {
    await gateway?.close();
    await drop?.();
    receiver?.stop();
  });

  const rest = () => sdkFor({ ...gateway, handle }, token).client;
  const save = (url: string) => sdk.createWebhook({ client: rest(), body: { url, events: ['approval.requested'] } });

  test('refused at save: http, loopback and private literals in any spelling, metadata, a name resolving to 127.0.0.1', async () => {
    verifies('WEBHOOK-URL-GUARD');
    dns.set('hooks.example.com', ['93.184.216.34']);
    dns.set('rebind.example.com', ['93.184.216.34', '127.0.0.1']);
    dns.set('loop.example.com', ['127.0.0.1']);
    const refused = [
      'http://hooks.example.com/h', // public, but not https
      receiver.url(), // the test receiver itself, not allow-listed here
      'https://127.0.0.1/h',
      'https://2130706433/h',
      'https://0x7f.1/h',
      'https://[::1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://10.1.2.3/h',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/h',
      'https://loop.example.com/h',
      'https://rebind.example.com/h',
      'https://user:pw@hooks.example.com/h',
    ];
    for (const url of refused) {
      const res = await save(url);
      expect({ url, status: res.response.status }).toEqual({ url, status: 422 });
      expect(res.error?.error).toBe('webhook_url_refused');
    }
    expect(receiver.received.length).toBe(0);
  });

  test('refused at send: a name that resolved to a public address at save and to 127.0.0.1 at send is never contacted', async () => {
    verifies('WEBHOOK-URL-GUARD');
    dns.set('turncoat.example.com', ['93.184.216.34']);
    // The port is the receiver's, so a guard that let the request through would reach it.
    const url = `https://turncoat.example.com:${receiver.hostPort.split(':')[1]}/h`;
    const created = await save(url);
    expect(created.response.status).toBe(201);
    const { id } = created.data!;
    dns.set('turncoat.example.com', ['127.0.0.1']);
    await emitEvent(gateway, 'approval.requested', orgId, { approval_id: 'x', tool_name: 't', requested_by: null, expires_at: new Date().toISOString() });
    await until(async () => (await deliveriesOf(rest(), id)).length > 0);
    const list = await deliveriesOf(rest(), id);
    expect(list[0]).toMatchObject({ status_code: null, delivery_status: 'pending' });
    expect(list[0].error).toContain('private, loopback or reserved');
    expect(receiver.received.length).toBe(0);
  });
});

describe('embedded store (PGlite)', () => {
  test('the outbox, the claim query and the outcome writes run on PGlite too', async () => {
    verifies('WEBHOOK-OUTBOX');
    const receiver = startReceiver((n) => new Response(null, { status: n === 0 ? 503 : 204 }));
    const gateway = await startTestGateway('pglite', {
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort,
      TOOLGATE_WEBHOOK_POLL_MS: '30',
      TOOLGATE_WEBHOOK_RETRY_BASE_MS: '50',
    });
    try {
      const org = await onboard(gateway);
      const token = await tokenFor(gateway, org.clientId, org.clientSecret);
      const client = sdkFor(gateway, token).client;
      const hook = (await sdk.createWebhook({ client, throwOnError: true, body: { url: receiver.url(), events: ['approval.requested'] } })).data;
      const eventId = await emitEvent(gateway, 'approval.requested', org.orgId, {
        approval_id: 'p',
        tool_name: 't',
        requested_by: null,
        expires_at: new Date().toISOString(),
      });
      await until(() => receiver.received.length === 2, 10_000, 'the retry on PGlite');
      expect(receiver.ids()).toEqual([eventId, eventId]);
      await until(async () => (await deliveriesOf(client, hook.id)).length === 2);
      const list = await deliveriesOf(client, hook.id);
      expect(list.map((d: any) => d.status_code)).toEqual([204, 503]);
    } finally {
      await gateway.close();
      receiver.stop();
    }
  });
});

describe('retry schedule (unit)', () => {
  test('exponential with jitter, capped at 8 h, spanning more than a day even at the low end of the jitter', async () => {
    verifies('WEBHOOK-RETRY');
    const { MAX_ATTEMPTS, retryDelayMs } = await import('../src/webhooks/worker.ts');
    const base = loadConfig({}).webhookRetryBaseMs;
    const total = (random: () => number) =>
      Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => retryDelayMs(i + 1, base, () => random())).reduce((a, b) => a + b, 0);
    expect(total(() => 0)).toBeGreaterThan(24 * 3600_000);
    expect(total(() => 1)).toBeLessThan(40 * 3600_000);
    expect(retryDelayMs(1, base, () => 0.5)).toBe(30_000);
    expect(retryDelayMs(2, base, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(20, base, () => 0.5)).toBe(8 * 3600_000);
    // Jitter spreads retries of many deliveries that failed together.
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, base)));
    expect(spread.size).toBeGreaterThan(10);
    for (let i = 0; i < 200; i++) {
      const d = retryDelayMs(3, base);
      expect(d).toBeGreaterThanOrEqual(96_000);
      expect(d).toBeLessThanOrEqual(144_000);
    }
  });
});
