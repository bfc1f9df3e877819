// The hand-written layer of the SDK (sdk/toolgate.ts, sdk/error.ts) against a real gateway: the client-credentials
// token is fetched once, shared by concurrent requests and renewed before it expires; every error is a ToolgateError.
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test';
import { getOrg, listConnectors, Toolgate, ToolgateError } from '../sdk/index.ts';
import { BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';

let g: TestGateway;
let org: Onboarded;
const tokenRequests: string[] = [];

beforeAll(async () => {
  g = await startTestGateway('pglite');
  org = await onboard(g);
}, 60_000);
afterAll(async () => {
  setSystemTime();
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
