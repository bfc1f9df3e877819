/** Builds real gateways for tests: PGlite in memory, or a fresh database on the PostgreSQL server. */
import postgres from 'postgres';
import { loadConfig, type Config } from '../../src/config.ts';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.ts';
import { contractChecked } from './contract.ts';
import { databaseAllowHosts, PG_URL } from './services.ts';

export const BASE = 'http://gateway.test';
export const OPERATOR_TOKEN = 'test-operator-token-0123456789abcdef';

export type StoreKind = 'pglite' | 'postgres';

export interface TestGateway extends Gateway {
  config: Config;
  databaseUrl: string | null;
}

/** A fresh database on the PostgreSQL server, dropped by the returned function. */
export async function freshDatabase(prefix = 'tg_test'): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const again = postgres(PG_URL, { max: 1, onnotice: () => {} });
      await again.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}

/** A test gateway served over HTTP (browser suites): on a port taken first, so its public URL is its own address. */
export interface ServedTestGateway {
  gateway: TestGateway;
  /** `http://127.0.0.1:<port>`, the gateway's public URL. */
  base: string;
  stop(): Promise<void>;
}

/**
 * Takes a port, starts an embedded-store gateway whose public URL is that port's address (plus `env`), and serves it
 * there; until the gateway is up the port answers 503. `stop` closes the server and the gateway.
 */
export async function startServedTestGateway(env: Record<string, string> = {}): Promise<ServedTestGateway> {
  let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
  const base = `http://127.0.0.1:${server.port}`;
  try {
    const gateway = await startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: 'gateway.test', ...env });
    handle = (request) => gateway.handle(request);
    return {
      gateway,
      base,
      stop: async () => {
        server.stop(true);
        await gateway.close();
      },
    };
  } catch (err) {
    server.stop(true);
    throw err;
  }
}

export async function startTestGateway(
  kind: StoreKind = 'pglite',
  env: Record<string, string> = {},
  databaseUrl?: string,
  options: GatewayOptions = {},
): Promise<TestGateway> {
  let db: { url: string; drop: () => Promise<void> } | null = null;
  if (kind === 'postgres' && !databaseUrl) db = await freshDatabase();
  const url = databaseUrl ?? db?.url ?? null;
  const config = loadConfig({
    TOOLGATE_PUBLIC_URL: BASE,
    TOOLGATE_OPERATOR_TOKEN: OPERATOR_TOKEN,
    TOOLGATE_LOG_LEVEL: process.env.TEST_GATEWAY_LOG_LEVEL ?? 'silent',
    TOOLGATE_DEMO: '0',
    // No periodic connector probes unless a suite asks (test/connector-health.test.ts): they would write health rows.
    TOOLGATE_CONNECTOR_PROBE_INTERVAL_MS: '0',
    ...(url ? { DATABASE_URL: url, TOOLGATE_SECRET_KEY: 'a'.repeat(64) } : {}),
    ...env,
    // The test database servers are loopback addresses: allowed as an operator would allow them, besides the
    // suite's own entries (unless the suite asks for exactly its own list, to test the policy itself).
    TOOLGATE_OUTBOUND_ALLOW_HOSTS: [...(env.TEST_EXACT_OUTBOUND_ALLOW_HOSTS === '1' ? [] : databaseAllowHosts()), env.TOOLGATE_OUTBOUND_ALLOW_HOSTS ?? '']
      .filter(Boolean)
      .join(','),
  });
  const gateway = await createGateway(config, { inMemory: true, ...options });
  const testGateway: TestGateway = {
    ...gateway,
    // Every response a suite gets through the test gateway is checked against openapi.yaml (test/support/contract.ts).
    // It goes through `testGateway.app`, so a test can swap in an app with a drifting handler and see the check fail.
    handle: contractChecked((request) => testGateway.app.handle(request)),
    config,
    databaseUrl: url,
    close: async () => {
      await gateway.close();
      await db?.drop();
    },
  };
  return testGateway;
}

export interface Onboarded {
  orgId: string;
  slug: string;
  apiKey: string;
  clientId: string;
  clientSecret: string;
}

let counter = 0;
/**
 * Onboards an org through the operator API. Suites that are not about limits get an enterprise org with a burst
 * limit far above what a test sends, so they never meet a 429; the limits suite passes its own plan.
 */
export async function onboard(
  gateway: Gateway,
  slug = `org-${Date.now().toString(36)}-${counter++}`,
  plan = 'enterprise',
  burstLimitPerSecond: number | null = plan === 'enterprise' ? 100_000 : null,
): Promise<Onboarded> {
  const response = await gateway.handle(
    new Request(`${BASE}/operator/orgs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
      body: JSON.stringify({ slug, name: `Org ${slug}`, plan, ...(burstLimitPerSecond ? { burst_limit_per_second: burstLimitPerSecond } : {}) }),
    }),
  );
  if (response.status !== 201) throw new Error(`onboarding failed: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as any;
  return { orgId: body.org.id, slug, apiKey: body.api_key.key, clientId: body.oauth_client.client_id, clientSecret: body.oauth_client.client_secret };
}

export async function tokenFor(gateway: Gateway, clientId: string, clientSecret: string, scope?: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, ...(scope ? { scope } : {}) });
  const response = await gateway.handle(
    new Request(`${BASE}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form }),
  );
  if (response.status !== 200) throw new Error(`token failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as any).access_token;
}

/**
 * A raw REST request, for what the generated client cannot send on purpose: wrong or missing credentials, malformed
 * bodies, foreign headers. Well-formed admin calls in suites go through the SDK (test/support/sdk.ts).
 */
export function api(gateway: Gateway, method: string, path: string, token: string | null, body?: unknown, headers: Record<string, string> = {}) {
  return gateway.handle(
    new Request(`${BASE}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}
