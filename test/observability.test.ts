// Issue 15: /metrics (guarded, bounded labels), one log line per request, OTLP spans with their parent/child
// structure, and /readyz; against the real app on PostgreSQL (store and tool target) and Redis.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { periodStart } from '../src/limits/plans.ts';
import { requestIdOf } from '../src/observability/requests.ts';
import { verifies } from './requirements.ts';
import { OPERATOR_TOKEN, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, rpc } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { REDIS_URL, serviceAvailable } from './support/services.ts';
import { createTargets, deadPort, type Targets } from './support/targets.ts';
import { deliveryStatuses, emitEvent, startReceiver, until } from './support/webhooks.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
const hasRedis = await serviceAvailable('redis');

const ITEMS = 'query_postgresql_items';
const NEEDLE_SQL = "SELECT name FROM items WHERE name <> 'needle-5521'";

/** Log lines captured from the gateway's logger (one JSON object per write). */
function capture(): { lines: Record<string, any>[]; write(line: string): void } {
  const lines: Record<string, any>[] = [];
  return { lines, write: (line) => void lines.push(JSON.parse(line)) };
}

/** The value of one series in Prometheus text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const FALLBACK_ID = 'client-req-77';

/** The request id the gateway takes from these headers (X-Request-Id is the fallback an ignored traceparent leaves). */
function idFrom(traceparent: string | string[]): string {
  const headers = new Headers({ 'x-request-id': FALLBACK_ID });
  for (const value of [traceparent].flat()) headers.append('traceparent', value);
  return requestIdOf(new Request('http://localhost/', { headers }));
}

describe('traceparent follows W3C Trace Context', () => {
  // One case per rule of the Recommendation (section 3.2 and its versioning rules).
  test.each([
    ['version 00, sampled', `00-${TRACE}-${PARENT}-01`],
    ['version 00, not sampled', `00-${TRACE}-${PARENT}-00`],
    ['trace-flags bits this version does not define are ignored, not refused', `00-${TRACE}-${PARENT}-ff`],
    ['a higher version of exactly 55 characters', `cc-${TRACE}-${PARENT}-01`],
    ['a higher version with more fields after a dash', `cc-${TRACE}-${PARENT}-01-what-the-future-will-be-like`],
  ])('adopted: %s', (_rule, value) => {
    verifies('OPS-TRACEPARENT-W3C');
    expect(idFrom(value)).toBe(TRACE);
  });

  test.each([
    ['version ff is forbidden', `ff-${TRACE}-${PARENT}-01`],
    ['version 00 with anything after the flags', `00-${TRACE}-${PARENT}-01-extra`],
    ['version 00 with a trailing character', `00-${TRACE}-${PARENT}-010`],
    ['shorter than 55 characters', `00-${TRACE}-${PARENT}-1`],
    ['a higher version shorter than 55 characters', `cc-${TRACE}-${PARENT.slice(1)}-01`],
    ['a higher version whose flags are followed by something other than a dash', `cc-${TRACE}-${PARENT}-01.what`],
    ['a version of one character', `0-${TRACE}-${PARENT}-01x`],
    ['a version of three characters', `000-${TRACE}-${PARENT}-01`],
    ['a version that is not hex', `.0-${TRACE}-${PARENT}-01`],
    ['an uppercase version', `0A-${TRACE}-${PARENT}-01`],
    ['an uppercase trace-id', `00-${TRACE.toUpperCase()}-${PARENT}-01`],
    ['an uppercase parent-id', `00-${TRACE}-${PARENT.toUpperCase()}-01`],
    ['uppercase trace-flags', `00-${TRACE}-${PARENT}-0A`],
    ['a trace-id that is not hex', `00-${TRACE.slice(0, 31)}g-${PARENT}-01`],
    ['a parent-id that is not hex', `00-${TRACE}-${PARENT.slice(0, 15)}z-01`],
    ['trace-flags that are not hex', `00-${TRACE}-${PARENT}-.0`],
    ['an all-zero trace-id', `00-${'0'.repeat(32)}-${PARENT}-01`],
    ['an all-zero parent-id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['an all-zero trace-id in a higher version', `cc-${'0'.repeat(32)}-${PARENT}-01`],
    ['a delimiter other than a dash', `00_${TRACE}_${PARENT}_01`],
    ['fields shifted by one (31-character trace-id, 17-character parent-id)', `00-${TRACE.slice(1)}-${PARENT}0-01`],
    ['two traceparent headers', [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`]],
  ] as [string, string | string[]][])('ignored: %s', (_rule, value) => {
    verifies('OPS-TRACEPARENT-W3C');
    expect(idFrom(value)).toBe(FALLBACK_ID);
  });

  test('an ignored traceparent and no usable X-Request-Id: a fresh id', () => {
    verifies('OPS-TRACEPARENT-W3C');
    const id = requestIdOf(new Request('http://localhost/', { headers: { traceparent: `ff-${TRACE}-${PARENT}-01` } }));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe.skipIf(!hasPg)('metrics, request logs and readiness', () => {
  let g: TestGateway;
  let t: Targets;
  let a: Onboarded;
  let token: string;
  const log = capture();
  const metrics = async () => {
    const { data, response } = await sdk.getMetrics({ client: sdkFor(g, OPERATOR_TOKEN).client, parseAs: 'text' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    return data as unknown as string;
  };

  beforeAll(async () => {
    t = await createTargets('tg_obs', 'pg');
    g = await startTestGateway('postgres', { TOOLGATE_LOG_LEVEL: 'info', TOOLGATE_WEBHOOK_WORKER: '0' }, undefined, { logDestination: log });
    a = await onboard(g);
    token = await tokenFor(g, a.clientId, a.clientSecret);
    await createConnector(g, token, { name: 'pg items', type: 'postgresql', config: t.pgConfig });
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 60_000);

  test('/metrics needs the operator token: none, an org token and a wrong token get 401', async () => {
    verifies('OPS-METRICS-GUARD');
    for (const bearer of [null, token, 'x'.repeat(40)]) {
      const { response } = await sdk.getMetrics({ client: sdkFor(g, bearer ?? {}).client, parseAs: 'text' });
      expect(response.status).toBe(401);
    }
  });

  test('tools/call, guard refusals and HTTP requests are counted, by type and outcome, with a latency histogram', async () => {
    verifies('OPS-METRICS');
    const before = await metrics();
    for (let i = 0; i < 3; i++) expect((await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: NEEDLE_SQL })).body.result.isError).toBeFalsy();
    const refused = await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: 'DROP TABLE items' });
    expect(refused.body.result.isError).toBe(true);
    await rpc(g, a.slug, { apiKey: a.apiKey }, 'tools/list');
    const after = await metrics();
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('toolgate_tool_calls_total', { tool_type: 'postgresql', outcome: 'success' })).toBe(3);
    // Issue 41: a statement the guard refuses is outcome `refused`, not `error` (decision 0320).
    expect(delta('toolgate_tool_calls_total', { tool_type: 'postgresql', outcome: 'refused' })).toBe(1);
    expect(delta('toolgate_tool_calls_total', { tool_type: 'postgresql', outcome: 'error' })).toBe(0);
    expect(delta('toolgate_tool_call_duration_seconds_count', { tool_type: 'postgresql' })).toBe(4);
    expect(delta('toolgate_guard_refusals_total', { dialect: 'postgresql', reason: 'statement' })).toBe(1);
    expect(delta('toolgate_mcp_requests_total', { method: 'tools/call', outcome: 'ok' })).toBe(4);
    expect(delta('toolgate_mcp_requests_total', { method: 'tools/list', outcome: 'ok' })).toBe(1);
    expect(delta('toolgate_http_requests_total', { route: '/mcp/{orgSlug}', method: 'POST', status: '200' })).toBe(5);
    // Every call that reached its connector's admission (the refused DROP may too: the driver takes the slot first).
    expect(delta('toolgate_connector_queue_wait_seconds_count', { connector_type: 'postgresql' })).toBeGreaterThanOrEqual(3);
    expect(sample(after, 'toolgate_connector_pool_usage', { connector_type: 'postgresql', state: 'pools' })).toBeGreaterThanOrEqual(1);
    // Process memory and event-loop lag come with the default collectors.
    expect(sample(after, 'toolgate_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(after).toContain('toolgate_nodejs_eventloop_lag_seconds');
    expect(after).toContain('toolgate_audit_queue_depth{queue="calls"}');
    expect(after).toContain('toolgate_redis_fallback 0');
    expect(after).toContain('toolgate_webhook_outbox_depth');
  });

  test('burst and quota refusals are counted: every 429 and every -32000 once', async () => {
    verifies('OPS-METRICS');
    const starter = await onboard(g, undefined, 'starter');
    const starterToken = await tokenFor(g, starter.clientId, starter.clientSecret);
    await createConnector(g, starterToken, { name: 'pg items', type: 'postgresql', config: t.pgConfig });
    const before = await metrics();
    // 40 at once against 20/s: whatever the window split, each 429 is one count.
    const answers = await Promise.all(Array.from({ length: 40 }, () => rpc(g, starter.slug, { apiKey: starter.apiKey }, 'tools/list')));
    const limited = answers.filter((a) => a.status === 429).length;
    expect(limited).toBeGreaterThan(0);
    await Bun.sleep(1100);
    await g.deps.store.db.execute(
      sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${starter.orgId}, ${periodStart(new Date())}, 20000)`,
    );
    const refused = await callTool(g, starter.slug, { apiKey: starter.apiKey }, ITEMS, { sql: NEEDLE_SQL });
    expect(refused.body.error.code).toBe(-32000);
    const after = await metrics();
    const delta = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('toolgate_limit_refusals_total', { limit: 'burst_local' })).toBe(limited);
    expect(delta('toolgate_limit_refusals_total', { limit: 'quota' })).toBe(1);
    expect(delta('toolgate_tool_calls_total', { tool_type: 'postgresql', outcome: 'refused' })).toBe(1);
  });

  test('no label carries an org id, slug, tool name, key or SQL: the series stay bounded', async () => {
    verifies('OPS-METRICS-CARDINALITY');
    await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: NEEDLE_SQL });
    await rpc(g, 'no-such-org-7731', { apiKey: a.apiKey }, 'tools/list');
    await rpc(g, a.slug, { apiKey: a.apiKey }, 'made/up-method-8812');
    const text = await metrics();
    for (const leak of [a.orgId, a.slug, ITEMS, a.apiKey.slice(0, 12), 'needle-5521', 'no-such-org-7731', 'made/up-method-8812'])
      expect(text).not.toContain(leak);
    expect(sample(text, 'toolgate_mcp_requests_total', { method: 'unknown', outcome: 'rpc_error' })).toBeGreaterThanOrEqual(1);
    // Every label value of the gateway's own series is from a fixed set.
    const labelValues = new Set(
      [...text.matchAll(/^toolgate_(?:http|mcp|tool|connector|guard|limit|webhook)[a-z_]*\{([^}]*)\}/gm)].flatMap((m) =>
        [...m[1]!.matchAll(/="([^"]*)"/g)].map((v) => v[1]!),
      ),
    );
    for (const value of labelValues) expect(value).toMatch(/^(?:[A-Z]+|[a-z_/]+|\d{3}|\+Inf|[\d.e-]+|\/[a-z/{}A-Z._-]*)$/);
  });

  test('one JSON line per request: request id from traceparent or X-Request-Id, org, caller kind and prefix, outcome, duration; no secret, SQL or argument', async () => {
    verifies('OPS-LOG-LINE', 'OPS-LOG-NO-SECRETS');
    log.lines.length = 0;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traced = await callTool(g, a.slug, { apiKey: a.apiKey }, ITEMS, { sql: NEEDLE_SQL }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(traced.status).toBe(200);
    const named = await rpc(g, a.slug, { token }, 'tools/list', undefined, { 'x-request-id': 'client-req-42' });
    expect(named.status).toBe(200);
    const forged = await rpc(g, a.slug, { apiKey: 'tgk_wrongwrongwrongwrong' }, 'tools/list', undefined, { 'x-request-id': 'bad id", "level":"error' });
    expect(forged.status).toBe(401);
    const requests = log.lines.filter((l) => l.message === 'request');
    expect(requests.length).toBe(3);
    const [first, second, third] = requests;
    expect(first).toMatchObject({
      level: 'info',
      request_id: traceId,
      method: 'POST',
      route: '/mcp/{orgSlug}',
      mcp_method: 'tools/call',
      status: 200,
      outcome: 'ok',
      org_id: a.orgId,
      caller_kind: 'api_key',
      caller_prefix: a.apiKey.slice(0, 12),
    });
    expect(typeof first!.duration_ms).toBe('number');
    expect(typeof first!.time).toBe('string');
    expect(second).toMatchObject({
      request_id: 'client-req-42',
      mcp_method: 'tools/list',
      org_id: a.orgId,
      caller_kind: 'oauth_client',
      caller_prefix: a.clientId,
    });
    // A request id that could forge a log field is replaced by a fresh one; the refused request is still logged.
    expect(third!.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(third).toMatchObject({ status: 401, outcome: 'refused', org_id: null, caller_kind: null });
    const all = JSON.stringify(log.lines);
    for (const secret of [a.apiKey, token, 'needle-5521', 'SELECT name', 'tgk_wrongwrongwrongwrong']) expect(all).not.toContain(secret);
    // The response carries the id the line has.
    expect(named.headers.get('x-request-id')).toBe('client-req-42');
  });

  test('/readyz: ready with the store migrated; Redis reported as not configured; 503 while shutting down', async () => {
    verifies('OPS-READYZ');
    const ready = await sdk.getReady({ client: sdkFor(g, {}).client });
    expect(ready.response.status).toBe(200);
    expect(ready.data).toEqual({ status: 'ready', store: 'ok', migrations: 'done', redis: 'not_configured' });
    // Probes come by pod address: any Host is answered, like /healthz.
    const byAddress = await g.handle(new Request('http://10.1.2.3:8080/readyz'));
    expect(byAddress.status).toBe(200);
    g.deps.lifecycle.shuttingDown = true;
    try {
      const draining = await sdk.getReady({ client: sdkFor(g, {}).client });
      expect(draining.response.status).toBe(503);
      expect((draining.error as unknown as sdk.ToolgateError).body).toMatchObject({ status: 'shutting_down' });
    } finally {
      g.deps.lifecycle.shuttingDown = false;
    }
  });
});

describe.skipIf(!hasPg || !hasRedis)('readiness with Redis', () => {
  test('Redis up: redis ok; Redis unreachable: still ready, redis fallback, and the fallback gauge is 1', async () => {
    verifies('OPS-READYZ');
    const up = await startTestGateway('pglite', { REDIS_URL });
    try {
      // The client connects in the background; wait for it.
      for (let i = 0; i < 50 && up.deps.limiter.mode?.() !== 'shared'; i++) await Bun.sleep(100);
      const ready = await sdk.getReady({ client: sdkFor(up, {}).client });
      expect(ready.data).toMatchObject({ status: 'ready', redis: 'ok' });
    } finally {
      await up.close();
    }
    const down = await startTestGateway('pglite', { REDIS_URL: `redis://127.0.0.1:${await deadPort()}` });
    try {
      const ready = await sdk.getReady({ client: sdkFor(down, {}).client });
      expect(ready.response.status).toBe(200);
      expect(ready.data).toMatchObject({ status: 'ready', redis: 'fallback' });
      const { data } = await sdk.getMetrics({ client: sdkFor(down, OPERATOR_TOKEN).client, parseAs: 'text' });
      expect(data as unknown as string).toContain('toolgate_redis_fallback 1');
    } finally {
      await down.close();
    }
  });
});

/** A real OTLP/HTTP receiver: accepts the JSON export on /v1/traces and keeps every span it gets. */
function otlpReceiver() {
  const spans: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: Record<string, unknown> }[] = [];
  const resources: Record<string, unknown>[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      if (request.method !== 'POST' || new URL(request.url).pathname !== '/v1/traces') return new Response('not found', { status: 404 });
      if (!(request.headers.get('content-type') ?? '').includes('application/json')) return new Response('unsupported', { status: 415 });
      const body = (await request.json()) as any;
      for (const rs of body.resourceSpans ?? []) {
        resources.push(Object.fromEntries((rs.resource?.attributes ?? []).map((a: any) => [a.key, Object.values(a.value ?? {})[0]])));
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({ ...s, attributes: Object.fromEntries((s.attributes ?? []).map((a: any) => [a.key, Object.values(a.value ?? {})[0]])) });
      }
      return Response.json({});
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, spans, resources, stop: () => server.stop(true) };
}

describe.skipIf(!hasPg)('traces over OTLP', () => {
  test('a tools/call under a caller traceparent: request, authentication, MCP method, driver and guard spans arrive with the right parents', async () => {
    verifies('OPS-TRACE-OTLP', 'OPS-TRACEPARENT-W3C');
    const receiver = otlpReceiver();
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const [forbiddenTrace, forbiddenParent] = ['1af7651916cd43dd8448eb211c80319c', 'c7ad6b7169203331'];
    const [futureTrace, futureParent] = ['2af7651916cd43dd8448eb211c80319c', 'd7ad6b7169203331'];
    const t = await createTargets('tg_otlp', 'pg');
    const g = await startTestGateway('postgres', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'toolgate-test',
      TOOLGATE_WEBHOOK_WORKER: '0',
    });
    try {
      const org = await onboard(g);
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      await createConnector(g, token, { name: 'pg items', type: 'postgresql', config: t.pgConfig });
      const answer = await callTool(g, org.slug, { apiKey: org.apiKey }, ITEMS, { sql: NEEDLE_SQL }, { traceparent: `00-${traceId}-${callerSpan}-01` });
      expect(answer.body.result.isError).toBeFalsy();
      // A traceparent the spec forbids (version ff) is no parent either; a higher version is read forward-compatibly.
      expect((await rpc(g, org.slug, { apiKey: org.apiKey }, 'tools/list', {}, { traceparent: `ff-${forbiddenTrace}-${forbiddenParent}-01` })).status).toBe(
        200,
      );
      expect(
        (await rpc(g, org.slug, { apiKey: org.apiKey }, 'tools/list', {}, { traceparent: `cc-${futureTrace}-${futureParent}-01-later-fields` })).status,
      ).toBe(200);
    } finally {
      await g.close(); // flushes the exporter
      await t.drop();
    }
    try {
      const trace = receiver.spans.filter((s) => s.traceId === traceId);
      const byName = (name: string) => {
        const found = trace.filter((s) => s.name === name);
        expect(found.length).toBe(1);
        return found[0]!;
      };
      const request = byName('POST /mcp/{orgSlug}');
      expect(request.parentSpanId).toBe(callerSpan);
      expect(request.kind).toBe(2); // SERVER
      expect(request.attributes['http.response.status_code']).toBe(200);
      expect(byName('authenticate').parentSpanId).toBe(request.spanId);
      const method = byName('mcp tools/call');
      expect(method.parentSpanId).toBe(request.spanId);
      const driver = byName('driver postgresql');
      expect(driver.parentSpanId).toBe(method.spanId);
      expect(driver.attributes['toolgate.connector.type']).toBe('postgresql');
      expect(byName('guard postgresql').parentSpanId).toBe(driver.spanId);
      expect(receiver.resources.some((r) => r['service.name'] === 'toolgate-test')).toBe(true);
      // Span data holds no SQL, argument or key.
      expect(JSON.stringify(receiver.spans)).not.toContain('needle-5521');
      expect(receiver.spans.filter((s) => s.traceId === forbiddenTrace || s.parentSpanId === forbiddenParent)).toEqual([]);
      const future = receiver.spans.filter((s) => s.traceId === futureTrace && s.name === 'POST /mcp/{orgSlug}');
      expect(future.map((s) => s.parentSpanId)).toEqual([futureParent]);
    } finally {
      receiver.stop();
    }
  });
});

describe.skipIf(!hasPg)('webhook delivery metrics', () => {
  test('a 500 then a 200: one retry and one delivered attempt counted; the outbox depth goes back to 0', async () => {
    verifies('OPS-METRICS');
    const receiver = startReceiver((n) => new Response('x', { status: n === 0 ? 500 : 200 }));
    const g = await startTestGateway('postgres', {
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort,
      TOOLGATE_WEBHOOK_POLL_MS: '30',
      TOOLGATE_WEBHOOK_RETRY_BASE_MS: '200',
      TOOLGATE_WEBHOOK_TIMEOUT_MS: '1500',
      TOOLGATE_WEBHOOK_LEASE_MS: '2500',
    });
    try {
      const text = async () => (await sdk.getMetrics({ client: sdkFor(g, OPERATOR_TOKEN).client, parseAs: 'text' })).data as unknown as string;
      const org = await onboard(g);
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      const { data: hook } = await sdk.createWebhook({
        client: sdkFor(g, token).client,
        throwOnError: true,
        body: { url: receiver.url('/m'), events: ['approval.requested'] },
      });
      const before = await text();
      await emitEvent(g, 'approval.requested', org.orgId, {
        approval_id: 'ap_metrics',
        tool_name: 'query_postgresql_orders',
        requested_by: 'key-1',
        expires_at: '2026-01-01T00:00:00.000Z',
      });
      await until(async () => (await deliveryStatuses(g, hook.id))[0] === 'delivered', 15_000, 'the delivery');
      const after = await text();
      const delta = (outcome: string) =>
        sample(after, 'toolgate_webhook_deliveries_total', { outcome }) - sample(before, 'toolgate_webhook_deliveries_total', { outcome });
      expect(delta('retry')).toBe(1);
      expect(delta('delivered')).toBe(1);
      expect(sample(after, 'toolgate_webhook_outbox_depth')).toBe(0);
    } finally {
      await g.close();
      receiver.stop();
    }
  });
});
