/**
 * The HTTP pipeline (src/pipeline/pipeline.ts, docs/decisions/0150-one-http-pipeline.md): one bearer parser for
 * authentication and the refusal audit, refusals filed from one place, including the two that answer with a
 * body of their own (the console callback's 429 page; the MCP 429 is covered by test/limits-doors.test.ts), and one
 * request id on the answers of every surface, the console's included.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/store/db.ts';
import { bearerToken } from '../src/net/bearer.ts';
import { refusalRow } from '../src/audit/refusals.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { beginLogin, sealLogin } from '../src/auth/idp/oidc-client.ts';
import { AUTH_FAILURE_RULES } from '../src/limits/auth-failures.ts';
import { BASE, onboard, startTestGateway, type TestGateway } from './support/gateway.ts';

setDefaultTimeout(60_000);

const withAuthorization = (value?: string) => new Request(`${BASE}/api/org`, value === undefined ? {} : { headers: { authorization: value } });

describe('one bearer parser', () => {
  test('a token68 bearer token; an empty string for a header that holds none; null without a header', () => {
    expect(bearerToken(withAuthorization())).toBeNull();
    expect(bearerToken(withAuthorization('Bearer abc.DEF-ghi_~+/=='))).toBe('abc.DEF-ghi_~+/==');
    expect(bearerToken(withAuthorization('bearer   tok  '))).toBe('tok');
    for (const malformed of ['Bearer a!b', 'Bearer', 'Basic dXNlcjpwYXNz', 'Bearer\ttok', 'Bearer a b']) {
      expect(bearerToken(withAuthorization(malformed))).toBe('');
    }
  });

  test('the refusal audit files the credential authentication read, and only that', () => {
    const payload = Buffer.from(JSON.stringify({ sub: 'client-7', tg_org: 'x' })).toString('base64url');
    const jwt = `eyJhbGciOiJFUzI1NiJ9.${payload}.c2ln`;
    const filed = (value?: string) => refusalRow('org', withAuthorization(value), 401, 'unauthenticated', 'no', null).details;
    expect(filed(`Bearer ${jwt}`)).toMatchObject({ credential: 'bearer', claimed_subject: 'client-7' });
    expect(filed('Bearer opaque-token')).toMatchObject({ credential: 'bearer' });
    expect(filed('Bearer a!b')).toMatchObject({ credential: 'none' });
    expect(filed('Basic dXNlcjpwYXNz')).toMatchObject({ credential: 'none' });
    expect(filed()).toMatchObject({ credential: 'none' });
  });
});

describe('the pipeline answers refusals and errors', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startTestGateway();
  });
  afterAll(async () => {
    await g?.close();
  });

  const refusals = async (orgId: string) => {
    await g.deps.audit.drain();
    return rowsOf<{ target_id: string; details: Record<string, unknown> }>(
      await g.deps.store.db.execute(sql`SELECT target_id, details FROM audit_events WHERE org_id = ${orgId} AND action = 'rate_limit.refused'`),
    );
  };

  test("the console callback's 429 page is filed in the org of the sign-in it names", async () => {
    const org = await onboard(g);
    const cookie = `tg_console_login=${encodeURIComponent(sealLogin(g.deps.box, beginLogin(org.orgId, 'overview')))}`;
    const callback = () => {
      const request = new Request(`${BASE}/console/auth/callback?state=forged&code=forged`, { headers: { cookie } });
      notePeerAddress(request, '203.0.113.77');
      return g.handle(request);
    };
    for (let i = 0; i < AUTH_FAILURE_RULES.pair.limit; i++) expect((await callback()).status).toBe(400);
    expect(await refusals(org.orgId)).toEqual([]);
    const refused = await callback();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(refused.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await refused.text()).toContain('Sign-in refused');
    const rows = await refusals(org.orgId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.target_id).toBe('/console/auth/callback');
    expect(rows[0]!.details).toMatchObject({ status: 429, code: 'rate_limited', method: 'GET', credential: 'none' });
  });

  test('an unexpected error is answered 500 by the pipeline, logged in the words of its surface', async () => {
    const org = await onboard(g);
    const logged: Array<{ message: string; fields: unknown }> = [];
    const log = g.deps.log as unknown as { error: (message: string, fields?: unknown) => void };
    const mcp = g.deps.mcp as unknown as { reply: (...args: unknown[]) => Promise<unknown> };
    const [logError, reply] = [log.error, mcp.reply];
    log.error = (message, fields) => logged.push({ message, fields });
    mcp.reply = async () => {
      throw new Error('boom');
    };
    try {
      // Straight to the app: a 500 is not in the contract, which g.handle checks.
      const response = await g.app.handle(
        new Request(`${BASE}/mcp/${org.slug}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': org.apiKey },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        }),
      );
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: 'internal_error', message: 'An internal error occurred.' });
      expect(logged).toEqual([{ message: 'mcp endpoint failed', fields: { error: expect.stringContaining('boom') } }]);
    } finally {
      log.error = logError;
      mcp.reply = reply;
    }
  });

  test('every console answer carries the request id, and a valid incoming X-Request-Id is honoured as on REST and MCP', async () => {
    const org = await onboard(g);
    const send = (path: string, headers: Record<string, string> = {}, init: RequestInit = {}) =>
      g.app.handle(new Request(`${BASE}${path}`, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } }));
    const idOf = (response: Response) => response.headers.get('x-request-id');
    const UUID_FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

    // The REST and MCP surfaces, for comparison: a given id comes back.
    expect(idOf(await send('/healthz', { 'x-request-id': 'rest-req-1' }))).toBe('rest-req-1');
    const mcp = await send(
      `/mcp/${org.slug}`,
      { 'x-request-id': 'mcp-req-1', 'content-type': 'application/json', 'x-api-key': org.apiKey },
      { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) },
    );
    expect(idOf(mcp)).toBe('mcp-req-1');

    // The console: its page, a 404 of its own, a refusal of the door (Host, Origin), a 401.
    const page = await send('/console', { 'x-request-id': 'console-req-1' });
    expect(page.status).toBe(200);
    expect(idOf(page)).toBe('console-req-1');
    const missing = await send('/console/assets/no-such.js', { 'x-request-id': 'console-req-2' });
    expect([missing.status, idOf(missing)]).toEqual([404, 'console-req-2']);
    const wrongHost = await send('/console', { host: 'evil.example', 'x-request-id': 'console-req-3' });
    expect([wrongHost.status, idOf(wrongHost)]).toEqual([403, 'console-req-3']);
    const wrongOrigin = await send('/console/auth/logout', { origin: 'https://evil.example', 'x-request-id': 'console-req-4' }, { method: 'POST' });
    expect([wrongOrigin.status, ((await wrongOrigin.json()) as { error: string }).error, idOf(wrongOrigin)]).toEqual([
      403,
      'forbidden_origin',
      'console-req-4',
    ]);
    const noSession = await send('/console/session');
    expect(noSession.status).toBe(401);
    expect(idOf(noSession)).toMatch(UUID_FORM);
    // An id that could forge a log field is replaced, as on the other surfaces; a traceparent's trace id is taken.
    expect(idOf(await send('/console', { 'x-request-id': 'bad id", "level":"error' }))).toMatch(UUID_FORM);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(idOf(await send('/console', { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, 'x-request-id': 'ignored' }))).toBe(traceId);

    // A page's REST call crosses the pipeline once: the /api request itself, with the session as its credential (one
    // id, one log line).
    const signIn = await send(
      '/console/auth/client',
      { 'content-type': 'application/json' },
      { method: 'POST', body: JSON.stringify({ client_id: org.clientId, client_secret: org.clientSecret }) },
    );
    expect(signIn.status).toBe(200);
    expect(idOf(signIn)).toMatch(UUID_FORM);
    const cookie = signIn.headers
      .getSetCookie()
      .find((c) => c.startsWith('tg_console='))!
      .split(';')[0]!;
    const csrf = ((await (await send('/console/session', { cookie })).json()) as { csrf_token: string }).csrf_token;
    const lines: Array<Record<string, unknown>> = [];
    const log = g.deps.log as unknown as { enabled: (level: string) => boolean; info: (message: string, fields?: Record<string, unknown>) => void };
    const [enabled, info] = [log.enabled, log.info];
    log.enabled = (level) => level === 'info' || enabled.call(g.deps.log, level);
    log.info = (message, fields) => void (message === 'request' && lines.push(fields ?? {}));
    try {
      const proxied = await send('/api/org', { cookie, 'x-toolgate-csrf': csrf, 'x-request-id': 'console-rest-1' });
      expect(proxied.status).toBe(200);
      expect(idOf(proxied)).toBe('console-rest-1');
      // And the playground's MCP call: the /mcp request itself, with the session as its credential (decision 0335).
      const called = await send(
        `/mcp/${org.slug}`,
        { cookie, 'x-toolgate-csrf': csrf, 'x-request-id': 'console-mcp-1', 'content-type': 'application/json' },
        {
          method: 'POST',
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'check_approval_status', arguments: { approvalId: 'none' } } }),
        },
      );
      expect([called.status, idOf(called)]).toEqual([200, 'console-mcp-1']);
      expect(((await called.json()) as { result?: unknown }).result).toBeDefined();
    } finally {
      log.enabled = enabled;
      log.info = info;
    }
    expect(lines).toEqual([
      expect.objectContaining({ request_id: 'console-rest-1', route: '/api/org', status: 200 }),
      expect.objectContaining({ request_id: 'console-mcp-1', route: '/mcp/{orgSlug}', status: 200 }),
    ]);
  });

  test("a page's requests cross the pipeline once each: one request id and one log line apiece, sign-in with no token request", async () => {
    const org = await onboard(g);
    const lines: Array<Record<string, unknown>> = [];
    const log = g.deps.log as unknown as { enabled: (level: string) => boolean; info: (message: string, fields?: Record<string, unknown>) => void };
    const [enabled, info] = [log.enabled, log.info];
    log.enabled = (level) => level === 'info' || enabled.call(g.deps.log, level);
    log.info = (message, fields) => void (message === 'request' && lines.push(fields ?? {}));
    const ids: string[] = [];
    const send = async (path: string, headers: Record<string, string> = {}, init: RequestInit = {}) => {
      const response = await g.app.handle(new Request(`${BASE}${path}`, { ...init, headers }));
      ids.push(response.headers.get('x-request-id')!);
      return response;
    };
    try {
      // What a browser does: the page, its script, sign-in, who is signed in, then a REST call with the session.
      expect((await send('/console')).status).toBe(200);
      expect((await send('/console/assets/app.js')).status).toBe(200);
      const body = JSON.stringify({ client_id: org.clientId, client_secret: org.clientSecret });
      const signIn = await send('/console/auth/client', { 'content-type': 'application/json' }, { method: 'POST', body });
      expect(signIn.status).toBe(200);
      const cookie = signIn.headers
        .getSetCookie()
        .find((c) => c.startsWith('tg_console='))!
        .split(';')[0]!;
      const session = await send('/console/session', { cookie });
      const csrf = ((await session.json()) as { csrf_token: string }).csrf_token;
      expect((await send('/api/org', { cookie, 'x-toolgate-csrf': csrf })).status).toBe(200);
    } finally {
      log.enabled = enabled;
      log.info = info;
    }
    // One line per request, under the contract's route, with the id its answer carried: the sign-in's token is the
    // token service's (no /oauth/token request), the session is read without a request of its own.
    expect(lines.map((l) => [l.method, l.route, l.status])).toEqual([
      ['GET', '/console', 200],
      ['GET', '/console/assets/{asset}', 200],
      ['POST', '/console/auth/client', 200],
      ['GET', '/console/session', 200],
      ['GET', '/api/org', 200],
    ]);
    expect(lines.map((l) => l.request_id)).toEqual(ids);
    expect(new Set(ids).size).toBe(5);
  });
});
