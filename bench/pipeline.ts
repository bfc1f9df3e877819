/**
 * The HTTP pipeline's own CPU per request (docs/decisions/0150-one-http-pipeline.md): POST /mcp/{org} (the hot path's
 * door: Host, then Origin) and GET /api/org (door, role policy, REST limit) through `app.handle`, with every handler
 * answering a fixed response and stub deps (no store, no Redis), so only routing and the shared checks are measured.
 * Reports this process's CPU time (user + system) per request, less sensitive to a loaded machine than wall time:
 * run it on two trees back to back to compare.
 *
 *   bun bench/pipeline.ts [--requests=20000] [--rounds=9]
 */
import { operations } from '../generated/operations.ts';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const REQUESTS = arg('requests', 20_000);
const ROUNDS = arg('rounds', 9);
const BASE = 'http://bench.local';

const config = loadConfig({ TOOLGATE_PUBLIC_URL: BASE, TOOLGATE_LOG_LEVEL: 'silent' });
const principal = {
  orgId: '00000000-0000-4000-8000-000000000001',
  kind: 'oauth_client',
  actorId: 'bench',
  email: null,
  roles: [],
  orgLevel: true,
  connectorIds: null,
};
const deps = {
  config,
  log: { enabled: () => false, debug() {}, info() {}, warn() {}, error() {} },
  auth: { rest: async () => principal },
  limiter: { take: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
  authCache: { lookup: async () => ({ plan: 'enterprise' }), changed: async () => {} },
};
const fixed = () => new Response('{"jsonrpc":"2.0","id":1,"result":{}}', { headers: { 'content-type': 'application/json' } });
const app = buildApp(deps as never, Object.fromEntries(operations.map((op) => [op.operationId, fixed])) as never);

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query_items', arguments: {} } });
const cases = [
  {
    name: 'POST /mcp/{org} (door: Host, Origin)',
    request: () => new Request(`${BASE}/mcp/acme`, { method: 'POST', headers: { 'content-type': 'application/json', origin: BASE, 'x-api-key': 'k' }, body }),
  },
  { name: 'GET /api/org (door, role policy, REST limit)', request: () => new Request(`${BASE}/api/org`, { headers: { authorization: 'Bearer x' } }) },
];

async function round(make: () => Request, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const response = await app.handle(make());
    if (response.status !== 200) throw new Error(`expected 200, got ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

for (const c of cases) {
  await round(c.request, 2_000); // warm-up
  const results: number[] = [];
  for (let r = 0; r < ROUNDS; r++) results.push(await round(c.request, REQUESTS));
  results.sort((a, b) => a - b);
  console.log(`${c.name.padEnd(46)} CPU ${results[Math.floor(ROUNDS / 2)]!.toFixed(2)} µs/request (median of ${ROUNDS}; min ${results[0]!.toFixed(2)})`);
}
