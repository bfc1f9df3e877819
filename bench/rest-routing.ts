/**
 * Routing + request validation of REST operations, in process (no sockets): the app's router (one Elysia route per
 * operation of generated/operations.ts, generated Ajv validators) against openapi-backend (its router and request
 * validation over the same openapi.yaml) behind one Elysia catch-all route. Both answer through `app.handle(Request)`
 * with the same fixed handler and no authentication work, so the routing and validation are what differs.
 * The openapi-backend side reads the body with a plain `request.text()` + `JSON.parse` (no size cap, no depth guard),
 * which favours it slightly.
 *
 * Usage: bun bench/rest-routing.ts [--requests=N] [--rounds=R]. Prints µs per request (median of the rounds) and the
 * equivalent requests/s for each case. Decision and figures: docs/decisions/0072-app-keeps-its-router.md.
 */
import { Elysia } from 'elysia';
import { OpenAPIBackend, type Document } from 'openapi-backend';
import addFormats from 'ajv-formats';
import { operations } from '../generated/operations.ts';
import openapiDocument from '../generated/openapi.json' with { type: 'json' };
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/util/log.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const REQUESTS = arg('requests', 5_000);
const ROUNDS = arg('rounds', 7);

const fixed = () => new Response('{"ok":true}', { headers: { 'content-type': 'application/json' } });
const invalid = (message: string) =>
  new Response(JSON.stringify({ error: 'validation_error', message }), { status: 400, headers: { 'content-type': 'application/json' } });

// The app's router with every handler answering the fixed response, and an org-level principal (no role or DB work).
const principal = {
  orgId: '00000000-0000-4000-8000-000000000001',
  kind: 'oauth_client',
  actorId: 'bench',
  email: null,
  roles: [],
  orgLevel: true,
  connectorIds: null,
};
// The real config and logger (silent), so the router and the console it mounts find every setting they read; the REST
// limit always admits (its plan lookup is a cached-looking answer), and a management write's cache drop costs nothing.
const stubDeps = {
  config: loadConfig({ TOOLGATE_PUBLIC_URL: 'http://bench.local', TOOLGATE_LOG_LEVEL: 'silent', TOOLGATE_DEMO: '0' }),
  auth: { rest: async () => principal, operator: () => principal },
  log: createLogger('silent'),
  limiter: { take: async () => ({ allowed: true, retryAfterSeconds: 0 }), close: async () => {}, mode: () => 'local' },
  authCache: { lookup: async () => ({ plan: 'enterprise' }), changed: async () => {} },
};
const table = Object.fromEntries(operations.map((op) => [op.operationId, fixed]));
const current = buildApp(stubDeps as never, table as never);

// openapi-backend: its router and request validation; a validation failure answers 400 like the app does.
const api = new OpenAPIBackend({
  definition: structuredClone(openapiDocument) as unknown as Document,
  quick: false,
  customizeAjv: (ajv) => addFormats(ajv as never) as never,
  handlers: {
    ...Object.fromEntries(operations.map((op) => [op.operationId, fixed])),
    validationFail: (c) => invalid(c.validation.errors?.[0]?.message ?? 'invalid'),
    notFound: () => new Response('{"error":"not_found"}', { status: 404 }),
    methodNotAllowed: () => new Response('{"error":"method_not_allowed"}', { status: 405 }),
  },
});
api.validateDefinition = () => api.document; // 3.0 meta-schema only; openapi.yaml is 3.1 (see test/support/contract.ts)
const initStart = performance.now();
await api.init();
const initMs = performance.now() - initStart;
const viaBackend = new Elysia().all(
  '*',
  async ({ request }) => {
    const url = new URL(request.url);
    const text = request.method === 'GET' ? '' : await request.text();
    return api.handleRequest({
      method: request.method,
      path: url.pathname,
      query: url.search.slice(1),
      headers: Object.fromEntries(request.headers),
      body: text ? JSON.parse(text) : undefined,
    });
  },
  { parse: 'none' } as never,
);

const BASE = 'http://bench.local';
const ORG = principal.orgId;
const CONNECTOR = '11111111-1111-4111-8111-111111111111';
const auth = { authorization: 'Bearer x' };
const cases: Array<{ name: string; request: () => Request; status: number }> = [
  {
    name: 'GET /api/mcp/{orgId}/tools?connector_id= (path + query)',
    request: () => new Request(`${BASE}/api/mcp/${ORG}/tools?connector_id=${CONNECTOR}`, { headers: auth }),
    status: 200,
  },
  {
    name: 'PATCH /api/connectors/{connectorId} (path + JSON body)',
    request: () =>
      new Request(`${BASE}/api/connectors/${CONNECTOR}`, {
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"name":"warehouse","allow_write":false}',
      }),
    status: 200,
  },
  {
    name: 'PATCH /api/connectors/{connectorId} with a wrong type (400)',
    request: () =>
      new Request(`${BASE}/api/connectors/${CONNECTOR}`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":5}' }),
    status: 400,
  },
];

const variants = [
  { name: 'app router (Elysia routes + generated Ajv)', handle: (r: Request) => current.handle(r) },
  { name: 'openapi-backend (router + request validation)', handle: (r: Request) => viaBackend.handle(r) },
];

async function round(handle: (r: Request) => Promise<Response>, make: () => Request, status: number, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const response = await handle(make());
    if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  }
  return ((performance.now() - start) * 1000) / n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(`openapi-backend init (dereference + compile): ${initMs.toFixed(0)} ms; ${REQUESTS} requests x ${ROUNDS} rounds per case, interleaved`);
for (const c of cases) {
  // Request construction alone, to subtract from both sides.
  const baseline: number[] = [];
  const results = variants.map(() => [] as number[]);
  for (const v of variants) await round(v.handle, c.request, c.status, 1_000); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < REQUESTS; i++) c.request();
    baseline.push(((performance.now() - start) * 1000) / REQUESTS);
    for (const [i, v] of variants.entries()) results[i]!.push(await round(v.handle, c.request, c.status, REQUESTS));
  }
  console.log(`\n${c.name}   (building the Request alone: ${median(baseline).toFixed(2)} µs)`);
  for (const [i, v] of variants.entries()) {
    const us = median(results[i]!);
    console.log(
      `  ${v.name.padEnd(48)} ${us.toFixed(2).padStart(8)} µs/request  ${Math.round(1e6 / us)
        .toLocaleString('en')
        .padStart(9)} req/s`,
    );
  }
}
