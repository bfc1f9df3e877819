// When API keys and OAuth clients were last used (decision 0282): shown in their REST views after a use on the MCP
// endpoint or the token endpoint, written in the background at most once a minute per credential and instance, only
// ever moved forward, and never failing the request that used the credential.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { eq } from 'drizzle-orm';
import { LastUseRecorder } from '../src/auth/last-use.ts';
import { apiKeys, oauthClients } from '../src/store/schema.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { listToolNames } from './support/mcp.ts';

const HOOK_TIMEOUT_MS = 60_000;

let g: TestGateway;
let org: Onboarded;
let token: string;

beforeAll(async () => {
  g = await startTestGateway('postgres');
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
}, HOOK_TIMEOUT_MS);
afterAll(async () => {
  await g?.close();
}, HOOK_TIMEOUT_MS);

async function listed(path: string, field: string, match: (row: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const res = await api(g, 'GET', path, token);
  expect(res.status).toBe(200);
  const body = (await res.json()) as Record<string, Array<Record<string, unknown>>>;
  return body[field]!.find(match)!;
}

/** Polls until `read` answers a non-null last_used_at (the write goes out after the request, in the background). */
async function lastUsed(read: () => Promise<Record<string, unknown>>): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const row = await read();
    if (row.last_used_at !== null) return String(row.last_used_at);
    await Bun.sleep(20);
  }
  throw new Error('last_used_at was never written');
}

const loggedNothing = { info: () => {} };

describe('the REST views show last use', () => {
  test('an API key: null until used on the MCP endpoint, then the time of that use', async () => {
    const created = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'fresh' })).json()) as { id: string; key: string; last_used_at: null };
    expect(created.last_used_at).toBeNull();
    const before = Date.now();
    expect(await listToolNames(g, org.slug, { apiKey: created.key })).toBeArray();
    const at = Date.parse(await lastUsed(() => listed('/api/org/api-keys', 'api_keys', (k) => k.id === created.id)));
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 1000);
    // An unused key stays null.
    const other = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'unused' })).json()) as { id: string };
    expect((await listed('/api/org/api-keys', 'api_keys', (k) => k.id === other.id)).last_used_at).toBeNull();
  });

  test('an OAuth client: set by the token it was issued and the calls made with it', async () => {
    const created = (await (await api(g, 'POST', '/api/org/oauth-clients', token, { name: 'agent', scopes: ['mcp:call'] })).json()) as {
      client_id: string;
      client_secret: string;
      last_used_at: null;
    };
    expect(created.last_used_at).toBeNull();
    await tokenFor(g, created.client_id, created.client_secret);
    const at = await lastUsed(() => listed('/api/org/oauth-clients', 'oauth_clients', (c) => c.client_id === created.client_id));
    expect(Date.parse(at)).toBeGreaterThan(Date.now() - 60_000);
    // The org's own client signed this suite in and made its calls: its use is recorded too.
    expect(await lastUsed(() => listed('/api/org/oauth-clients', 'oauth_clients', (c) => c.client_id === org.clientId))).toBeString();
  });
});

describe('the recorder writes coarsely, forward only, and never fails the caller', () => {
  async function keyRow(id: string) {
    const [row] = await g.deps.store.db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, id));
    return row!.lastUsedAt;
  }

  test('at most one write per credential per minute; a later use after the minute moves it on', async () => {
    const created = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'clocked' })).json()) as { id: string };
    let now = Date.parse('2030-01-01T00:00:00Z');
    const recorder = new LastUseRecorder({ db: g.deps.store.db, log: loggedNothing, now: () => now });
    recorder.used('api_key', created.id);
    await recorder.drain();
    expect((await keyRow(created.id))?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    now += 59_000;
    recorder.used('api_key', created.id);
    await recorder.drain();
    expect((await keyRow(created.id))?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    now += 2_000;
    recorder.used('api_key', created.id);
    await recorder.drain();
    expect((await keyRow(created.id))?.toISOString()).toBe('2030-01-01T00:01:01.000Z');
    await recorder.close();
  });

  test('another instance with an older use does not move it back (GREATEST); the uses of one turn go out as one statement per kind', async () => {
    const a = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'a' })).json()) as { id: string };
    const b = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'b' })).json()) as { id: string };
    let statements = 0;
    const counted = new Proxy(g.deps.store.db, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== 'execute') return value;
        return (...args: unknown[]) => {
          statements++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const late = new LastUseRecorder({ db: counted, log: loggedNothing, now: () => Date.parse('2031-05-05T05:05:05Z') });
    const early = new LastUseRecorder({ db: g.deps.store.db, log: loggedNothing, now: () => Date.parse('2029-01-01T00:00:00Z') });
    late.used('api_key', a.id);
    late.used('api_key', b.id);
    late.used('oauth_client', org.clientId);
    await late.drain();
    expect(statements).toBe(2);
    early.used('api_key', a.id);
    early.used('oauth_client', org.clientId);
    await early.drain();
    expect((await keyRow(a.id))?.toISOString()).toBe('2031-05-05T05:05:05.000Z');
    expect((await keyRow(b.id))?.toISOString()).toBe('2031-05-05T05:05:05.000Z');
    const [client] = await g.deps.store.db.select({ at: oauthClients.lastUsedAt }).from(oauthClients).where(eq(oauthClients.clientId, org.clientId));
    expect(client!.at?.toISOString()).toBe('2031-05-05T05:05:05.000Z');
    await late.close();
    await early.close();
  });

  test('a store that fails: used() returns, nothing throws, the failure is logged and the next use retries', async () => {
    const lines: string[] = [];
    let fail = true;
    const db = g.deps.store.db;
    const failing = new Proxy(db, {
      get: (target, prop, receiver) => (prop === 'execute' && fail ? () => Promise.reject(new Error('store down')) : Reflect.get(target, prop, receiver)),
    });
    const created = (await (await api(g, 'POST', '/api/org/api-keys', token, { name: 'retried' })).json()) as { id: string };
    const recorder = new LastUseRecorder({ db: failing, log: { info: (message) => lines.push(message) } });
    expect(() => recorder.used('api_key', created.id)).not.toThrow();
    await recorder.drain();
    expect(lines).toEqual(['credential last use not recorded']);
    expect(await keyRow(created.id)).toBeNull();
    fail = false;
    recorder.used('api_key', created.id);
    await recorder.drain();
    expect(await keyRow(created.id)).toBeInstanceOf(Date);
    await recorder.close();
  });
});
