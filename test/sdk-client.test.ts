// The hand-written layer of @toolgate/client (packages/client/src: toolgate.ts, retry.ts, paginate.ts, error.ts),
// imported as the gateway's tests do (sdk/index.ts), against a real gateway: the client-credentials token is fetched
// once, shared by concurrent requests and renewed before it expires; a token provider is asked per request; 429 and
// idempotent 5xx are retried within bounds, honouring Retry-After; timeouts and aborts end requests; cursor-paged
// lists iterate; every error is a ToolgateError, a gateway that is down included (status 0, `network_error`).
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test';
import net from 'node:net';
import { createApiKey, getOrg, listAuditEvents, listConnectors, mcpEndpoint, setIdpConfig, Toolgate, ToolgateError } from '../sdk/index.ts';
import { BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { emitEvent, startReceiver, type Receiver } from './support/webhooks.ts';

let g: TestGateway;
let org: Onboarded;
let receiver: Receiver;
const tokenRequests: string[] = [];

beforeAll(async () => {
  receiver = startReceiver();
  g = await startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, TOOLGATE_WEBHOOK_POLL_MS: '30' });
  org = await onboard(g);
}, 60_000);
afterAll(async () => {
  setSystemTime();
  receiver?.stop();
  await g?.close();
});

/** A client on the test gateway that records every token request it makes. */
function signedIn(clientSecret = org.clientSecret): Toolgate {
  return new Toolgate({
    baseUrl: BASE,
    clientId: org.clientId,
    clientSecret,
    fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      if (new URL(request.url).pathname === '/oauth/token') tokenRequests.push(request.url);
      return g.handle(request);
    }) as typeof fetch,
  });
}

describe('Toolgate', () => {
  test('signs in with client credentials once; concurrent requests share the token', async () => {
    tokenRequests.length = 0;
    const tg = signedIn();
    const [a, b, c] = await Promise.all([getOrg({ client: tg.client }), getOrg({ client: tg.client }), listConnectors({ client: tg.client })]);
    expect(a.response.status).toBe(200);
    expect(a.data!.id).toBe(org.orgId);
    expect(b.data!.id).toBe(org.orgId);
    expect(c.data!.connectors).toEqual([]);
    expect(tokenRequests).toHaveLength(1);
    await getOrg({ client: tg.client, throwOnError: true });
    expect(tokenRequests).toHaveLength(1);
  });

  test('renews the token before it expires (within the last 30 s of its hour)', async () => {
    tokenRequests.length = 0;
    const tg = signedIn();
    const start = Date.now();
    try {
      setSystemTime(new Date(start));
      await getOrg({ client: tg.client, throwOnError: true });
      setSystemTime(new Date(start + 3_500_000)); // 58 min 20 s: still valid for long enough
      await getOrg({ client: tg.client, throwOnError: true });
      expect(tokenRequests).toHaveLength(1);
      setSystemTime(new Date(start + 3_580_000)); // 59 min 40 s: renewed rather than sent about to lapse
      await getOrg({ client: tg.client, throwOnError: true });
      expect(tokenRequests).toHaveLength(2);
    } finally {
      setSystemTime();
    }
  });

  test('a refused sign-in is a ToolgateError carrying the OAuth error', async () => {
    const tg = signedIn('not-the-secret');
    const failure = await getOrg({ client: tg.client, throwOnError: true }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ToolgateError);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  test('error bodies are ToolgateErrors both thrown and returned, with the REST {error, message}', async () => {
    const tg = new Toolgate({
      baseUrl: BASE,
      token: 'tg_not_a_real_token',
      fetch: ((i: RequestInfo | URL, init?: RequestInit) => g.handle(new Request(i, init))) as typeof fetch,
    });
    const returned = await getOrg({ client: tg.client });
    expect(returned.response.status).toBe(401);
    expect(returned.error).toBeInstanceOf(ToolgateError);
    const error = returned.error as unknown as ToolgateError;
    expect(error.status).toBe(401);
    expect(error.error).toBe((error.body as { error: string }).error);
    expect(error.message).toBe((error.body as { message: string }).message);
    expect(error.message.length).toBeGreaterThan(0);
    const thrown = await getOrg({ client: tg.client, throwOnError: true }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ToolgateError);
    expect(thrown).toMatchObject({ status: 401, error: error.error, message: error.message });
  });

  test('clientId without clientSecret is refused at construction', () => {
    expect(() => new Toolgate({ clientId: 'tgc_x' })).toThrow(TypeError);
  });
});

describe('SDK suites stay contract tests', () => {
  test('a response that departs from openapi.yaml throws a ContractViolation through the SDK, with or without throwOnError', async () => {
    const { sdkFor } = await import('./support/sdk.ts');
    const { ContractViolation } = await import('./support/contract.ts');
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const client = sdkFor(g, token).client;
    const real = g.app;
    // An app whose GET /api/org drops a required field: the contract check in g.handle must refuse it.
    g.app = {
      handle: async (request: Request) => (new URL(request.url).pathname === '/api/org' ? Response.json({ id: org.orgId }) : real.handle(request)),
    } as typeof g.app;
    try {
      expect(await getOrg({ client }).catch((e: unknown) => e)).toBeInstanceOf(ContractViolation);
      expect(await getOrg({ client, throwOnError: true }).catch((e: unknown) => e)).toBeInstanceOf(ContractViolation);
    } finally {
      g.app = real;
    }
    expect((await getOrg({ client })).data!.id).toBe(org.orgId);
  });
});

test("without a base URL, the SDK talks to the gateway's default address", async () => {
  const { client, DEFAULT_BASE_URL } = await import('../sdk/index.ts');
  expect(DEFAULT_BASE_URL).toBe('http://localhost:8080');
  expect(client.getConfig().baseUrl).toBe(DEFAULT_BASE_URL);
  expect(new Toolgate().client.getConfig().baseUrl).toBe(DEFAULT_BASE_URL);
  expect(new Toolgate({ baseUrl: 'https://gw.example/' }).client.getConfig().baseUrl).toBe('https://gw.example');
});

/** A fetch to the test gateway that lets `intercept` answer first (a fault), recording every request it sees. */
function faulty(intercept: (request: Request, n: number) => Response | Promise<Response> | undefined) {
  const seen: { method: string; path: string; status: number; at: number }[] = [];
  const send = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    const response = (await intercept(request.clone(), seen.length)) ?? (await g.handle(request));
    seen.push({ method: request.method, path, status: response.status, at: Date.now() });
    return response;
  }) as typeof fetch;
  return { seen, send };
}
const unavailable = (retryAfter?: string) =>
  Response.json({ error: 'unavailable', message: 'Try again.' }, { status: 503, headers: retryAfter ? { 'retry-after': retryAfter } : {} });

describe('credentials', () => {
  test('a token provider (an OAuth sign-in flow, say) is asked before every request and its bearer is sent', async () => {
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    let asked = 0;
    const tg = new Toolgate({
      baseUrl: BASE,
      token: async () => {
        asked++;
        return token;
      },
      fetch: ((i: RequestInfo | URL, init?: RequestInit) => g.handle(new Request(i, init))) as typeof fetch,
    });
    expect((await getOrg({ client: tg.client, throwOnError: true })).data.id).toBe(org.orgId);
    await listConnectors({ client: tg.client, throwOnError: true });
    expect(asked).toBe(2);
    // A provider with nothing to give sends no Authorization: the gateway's 401.
    const none = new Toolgate({
      baseUrl: BASE,
      token: () => undefined,
      fetch: ((i: RequestInfo | URL, init?: RequestInit) => g.handle(new Request(i, init))) as typeof fetch,
    });
    expect(await getOrg({ client: none.client, throwOnError: true }).catch((e: unknown) => e)).toMatchObject({ status: 401 });
  });

  test('an API key goes as X-API-Key to the MCP endpoint, never as a bearer', async () => {
    const headers: (string | null)[][] = [];
    const tg = new Toolgate({
      baseUrl: BASE,
      apiKey: org.apiKey,
      fetch: ((i: RequestInfo | URL, init?: RequestInit) => {
        const request = new Request(i, init);
        headers.push([request.headers.get('x-api-key'), request.headers.get('authorization')]);
        return g.handle(request);
      }) as typeof fetch,
    });
    const answer = await mcpEndpoint({
      client: tg.client,
      throwOnError: true,
      path: { orgSlug: org.slug },
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'ping' },
    });
    expect(answer.data).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(headers).toEqual([[org.apiKey, null]]);
  });
});

describe('retries', () => {
  test('a real 429 of the burst limit is retried after its Retry-After, POST included, until every call passes', async () => {
    const limited = await onboard(g, undefined, 'starter', 2);
    const { seen, send } = faulty(() => undefined);
    const tg = new Toolgate({ baseUrl: BASE, apiKey: limited.apiKey, fetch: send, retry: { attempts: 5 } });
    const ping = (id: number) =>
      mcpEndpoint({
        client: tg.client,
        throwOnError: true,
        path: { orgSlug: limited.slug },
        headers: { accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id, method: 'ping' },
      });
    const started = Date.now();
    const answers = await Promise.all([1, 2, 3, 4, 5].map(ping));
    expect(answers.map((a) => a.data)).toEqual([1, 2, 3, 4, 5].map((id) => ({ jsonrpc: '2.0', id, result: {} })));
    const refused = seen.filter((s) => s.status === 429);
    // Two calls a second: at least three of the five met the limit, and the retries waited the second it asked for.
    expect(refused.length).toBeGreaterThanOrEqual(3);
    expect(seen.filter((s) => s.status === 200)).toHaveLength(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    // Without retries, the same burst leaves 429s: the retries above did the work.
    const once = new Toolgate({ baseUrl: BASE, apiKey: limited.apiKey, fetch: send, retry: false });
    await Bun.sleep(1000 - (Date.now() % 1000));
    const bare = await Promise.all(
      [1, 2, 3, 4, 5].map((id) =>
        mcpEndpoint({
          client: once.client,
          path: { orgSlug: limited.slug },
          headers: { accept: 'application/json, text/event-stream' },
          body: { jsonrpc: '2.0', id, method: 'ping' },
        }),
      ),
    );
    expect(bare.filter((a) => a.response.status === 429).length).toBeGreaterThanOrEqual(3);
    expect(bare.find((a) => a.response.status === 429)!.error).toBeInstanceOf(ToolgateError);
  }, 30_000);

  test('a GET meeting 5xx is retried (bounded: 3 attempts by default), backing off when no Retry-After is given', async () => {
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const twice = faulty((_, n) => (n < 2 ? unavailable() : undefined));
    const tg = new Toolgate({ baseUrl: BASE, token, fetch: twice.send, retry: { baseDelayMs: 20 } });
    expect((await getOrg({ client: tg.client, throwOnError: true })).data.id).toBe(org.orgId);
    expect(twice.seen.map((s) => s.status)).toEqual([503, 503, 200]);

    const always = faulty(() => unavailable('1'));
    const bounded = new Toolgate({ baseUrl: BASE, token, fetch: always.send, retry: { attempts: 2 } });
    const failure = await getOrg({ client: bounded.client, throwOnError: true }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ToolgateError);
    expect(failure).toMatchObject({ status: 503, error: 'unavailable' });
    expect(always.seen).toHaveLength(2);
    // Retry-After: 1 was honoured between the two attempts.
    expect(always.seen[1]!.at - always.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  test('a POST meeting 5xx is not retried (it may have taken effect); a Retry-After beyond maxDelayMs is not waited for', async () => {
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const posts = faulty(() => unavailable());
    const tg = new Toolgate({ baseUrl: BASE, token, fetch: posts.send, retry: { baseDelayMs: 1 } });
    const created = await mcpEndpoint({ client: tg.client, path: { orgSlug: org.slug }, body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    expect(created.response.status).toBe(503);
    expect(posts.seen).toHaveLength(1);

    const far = faulty(() => Response.json({ error: 'rate_limited', message: 'Later.' }, { status: 429, headers: { 'retry-after': '3600' } }));
    const patient = new Toolgate({ baseUrl: BASE, token, fetch: far.send, retry: { maxDelayMs: 5_000 } });
    const started = Date.now();
    const refused = await getOrg({ client: patient.client, throwOnError: true }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 429, error: 'rate_limited' });
    expect(far.seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  test('a retried request is sent again whole: the sign-in form after a 429, a PUT body after a 503', async () => {
    tokenRequests.length = 0;
    const form = faulty((request, n) =>
      n === 0 && new URL(request.url).pathname === '/oauth/token'
        ? Response.json({ error: 'rate_limited', message: 'Slow down.' }, { status: 429, headers: { 'retry-after': '1' } })
        : undefined,
    );
    const tg = new Toolgate({ baseUrl: BASE, clientId: org.clientId, clientSecret: org.clientSecret, fetch: form.send });
    expect((await getOrg({ client: tg.client, throwOnError: true })).data.id).toBe(org.orgId);
    expect(form.seen.map((s) => `${s.path} ${s.status}`)).toEqual(['/oauth/token 429', '/oauth/token 200', '/api/org 200']);

    // The gateway's PUT /api/org/idp needs a reachable IdP; what matters here is the body each attempt carries.
    const bodies: string[] = [];
    const put = faulty(async (request) => {
      bodies.push(await request.text());
      return bodies.length === 1 ? unavailable() : Response.json({ error: 'validation_error', message: 'stop here' }, { status: 400 });
    });
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const idp = new Toolgate({ baseUrl: BASE, token, fetch: put.send, retry: { baseDelayMs: 1 } });
    const body = { issuer: 'https://idp.example', jwks_uri: 'https://idp.example/jwks', audience: 'toolgate' };
    const answer = await setIdpConfig({ client: idp.client, body });
    expect(answer.response.status).toBe(400);
    expect(bodies.map((b) => JSON.parse(b))).toEqual([body, body]);
  });
});

describe('timeouts and aborts', () => {
  /** A fetch that never answers, ending only when its request is aborted. */
  const hanging = (count: { n: number }) =>
    ((input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      count.n++;
      return new Promise<Response>((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));
    }) as typeof fetch;

  test('no answer within timeoutMs ends the attempt with a ToolgateError `timeout` (status 0); timeouts are not retried', async () => {
    const count = { n: 0 };
    const tg = new Toolgate({ baseUrl: BASE, token: 'tg_x', fetch: hanging(count), timeoutMs: 200 });
    const started = Date.now();
    const failure = await getOrg({ client: tg.client, throwOnError: true }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ToolgateError);
    expect(failure).toMatchObject({ status: 0, error: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(count.n).toBe(1);
    // Returned, not thrown, without throwOnError.
    expect((await getOrg({ client: tg.client })).error).toMatchObject({ status: 0, error: 'timeout' });
  });

  test("the caller's signal aborts a request in flight, and a wait between retries", async () => {
    const count = { n: 0 };
    const tg = new Toolgate({ baseUrl: BASE, token: 'tg_x', fetch: hanging(count), timeoutMs: 10_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await getOrg({ client: tg.client, throwOnError: true, signal: controller.signal }).catch((e: unknown) => e);
    expect(aborted).toMatchObject({ name: 'AbortError' });

    const waiting = faulty(() => unavailable('30'));
    const retrying = new Toolgate({ baseUrl: BASE, token: 'tg_x', fetch: waiting.send, retry: { maxDelayMs: 60_000 } });
    const stop = new AbortController();
    const started = Date.now();
    setTimeout(() => stop.abort(), 100);
    const stopped = await getOrg({ client: retrying.client, throwOnError: true, signal: stop.signal }).catch((e: unknown) => e);
    expect(stopped).toMatchObject({ name: 'AbortError' });
    expect(waiting.seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

/** A port on 127.0.0.1 that nothing listens on (taken from the OS, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('the gateway down (issue 43 item 4, decision 0311)', () => {
  /** The runtime's real fetch against a closed port, counting attempts. */
  async function down(options: Partial<ConstructorParameters<typeof Toolgate>[0]> = {}) {
    const base = `http://127.0.0.1:${await closedPort()}`;
    const attempts: string[] = [];
    const send = ((input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      attempts.push(`${request.method} ${new URL(request.url).pathname}`);
      return globalThis.fetch(request);
    }) as typeof fetch;
    return { base, attempts, tg: new Toolgate({ baseUrl: base, token: 'tg_x', fetch: send, retry: { baseDelayMs: 5 }, ...options }) };
  }

  test('resolves { data, error } with a ToolgateError of status 0, `network_error`, the runtime error as its cause', async () => {
    const { base, attempts, tg } = await down();
    const result = await getOrg({ client: tg.client });
    expect(result.data).toBeUndefined();
    expect(result.response).toBeUndefined();
    const error = result.error as unknown as ToolgateError;
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, error: 'network_error', name: 'ToolgateError' });
    expect(error.message).toStartWith(`No response from the gateway at ${base}: `);
    expect(error.cause).toBeInstanceOf(TypeError);
    // A GET is retried (3 attempts by default) before it is reported.
    expect(attempts).toEqual(['GET /api/org', 'GET /api/org', 'GET /api/org']);
  });

  test('throws that ToolgateError with throwOnError; a POST is sent once', async () => {
    const { attempts, tg } = await down();
    const thrown = await createApiKey({ client: tg.client, throwOnError: true, body: { name: 'agent' } }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ToolgateError);
    expect(thrown).toMatchObject({ status: 0, error: 'network_error' });
    expect(attempts).toEqual(['POST /api/org/api-keys']);
  });

  test('with client credentials the failed sign-in is the call error too, returned or thrown as asked', async () => {
    const { attempts, tg } = await down({ token: undefined, clientId: 'tgc_x', clientSecret: 'secret', retry: false });
    const returned = await getOrg({ client: tg.client });
    expect(returned.error).toBeInstanceOf(ToolgateError);
    expect(returned.error).toMatchObject({ status: 0, error: 'network_error' });
    const thrown = await getOrg({ client: tg.client, throwOnError: true }).catch((e: unknown) => e);
    expect(thrown).toMatchObject({ status: 0, error: 'network_error' });
    // Only the token requests went out; the parked failure never reaches the network.
    expect(attempts).toEqual(['POST /oauth/token', 'POST /oauth/token']);
  });

  test('a refused sign-in is returned without throwOnError (401 invalid_client), not thrown', async () => {
    const returned = await getOrg({ client: signedIn('not-the-secret').client });
    expect(returned.error).toBeInstanceOf(ToolgateError);
    expect(returned.error).toMatchObject({ status: 401, error: 'invalid_client' });
  });

  test("an abort rejects with the signal's reason, with or without throwOnError", async () => {
    const { tg } = await down();
    const controller = new AbortController();
    const reason = new Error('stopped by the caller');
    controller.abort(reason);
    expect(await getOrg({ client: tg.client, signal: controller.signal }).catch((e: unknown) => e)).toBe(reason);
    expect(await getOrg({ client: tg.client, signal: controller.signal, throwOnError: true }).catch((e: unknown) => e)).toBe(reason);
  });
});

describe('paged lists', () => {
  test('auditEvents() follows next_cursor through every page and yields exactly the events of one big page', async () => {
    for (let i = 0; i < 4; i++) await tokenFor(g, org.clientId, org.clientSecret); // each issued token is audited
    const { seen, send } = faulty(() => undefined);
    const tg = new Toolgate({ baseUrl: BASE, clientId: org.clientId, clientSecret: org.clientSecret, fetch: send });
    const all = (await listAuditEvents({ client: tg.client, throwOnError: true, query: { limit: 200 } })).data;
    expect(all.next_cursor).toBeNull();
    expect(all.events.length).toBeGreaterThanOrEqual(5);
    const iterated = [];
    for await (const event of tg.auditEvents({ limit: 2 })) iterated.push(event);
    // The big page was read before iterating: the iteration may see the sign-in it caused, never fewer events.
    const ids = iterated.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(all.events.map((e) => e.id)));
    const pages = seen.filter((s) => s.path === '/api/audit').length - 1;
    // Two events a page: one request per page (a last full page may still point at an empty one).
    expect(pages).toBeGreaterThanOrEqual(Math.max(3, Math.ceil(iterated.length / 2)));
    expect(pages).toBeLessThanOrEqual(Math.ceil(iterated.length / 2) + 1);
    // Breaking out early stops asking for pages.
    const before = seen.length;
    for await (const _ of tg.auditEvents({ limit: 2 })) break;
    expect(seen.length - before).toBe(1);
  });

  test('webhookDeliveries() yields the delivery attempts of a webhook', async () => {
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const tg = new Toolgate({ baseUrl: BASE, token, fetch: ((i: RequestInfo | URL, init?: RequestInit) => g.handle(new Request(i, init))) as typeof fetch });
    const { createWebhook, listWebhookDeliveries } = await import('../sdk/index.ts');
    const hook = (await createWebhook({ client: tg.client, throwOnError: true, body: { url: receiver.url('/sdk'), events: ['approval.requested'] } })).data;
    await emitEvent(g, 'approval.requested', org.orgId, { approval_id: 'ap_1', tool_name: 't', requested_by: 'key-1', expires_at: '2026-01-01T00:00:00.000Z' });
    let listed: unknown[] = [];
    for (let i = 0; i < 200 && listed.length === 0; i++) {
      await Bun.sleep(25);
      listed = (await listWebhookDeliveries({ client: tg.client, throwOnError: true, path: { webhookId: hook.id } })).data.deliveries;
    }
    expect(listed.length).toBeGreaterThan(0);
    const iterated = [];
    for await (const attempt of tg.webhookDeliveries(hook.id)) iterated.push(attempt);
    expect(iterated.length).toBeGreaterThanOrEqual(listed.length);
    expect(iterated.slice(-listed.length)).toEqual(listed as never);
  });
});
