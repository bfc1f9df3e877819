/**
 * Memory of the `npm start` path (embedded PGlite store + demo database): RSS of the gateway process idle after
 * its first start, under a `tools/call` load against the demo database, after the load, and idle after a restart
 * on the same data folder. Local only; nothing outside a temporary data folder is touched.
 *
 *   bun bench/memory.ts [--port=3840] [--duration=20] [--connections=16] [--sample=10]
 *
 * Also prints the RSS curve under load (one sample every --sample seconds: a soak is a long --duration) and, after
 * the restart, the time from spawning the process to the first served tools/call (issue 14: <= 1.5 s on the
 * embedded store).
 *
 * The load runs through an enterprise org created with the operator API (the demo org's starter plan would answer
 * most of it with 429) whose connector points at the demo's sample database, so every call is a real SELECT.
 */
import autocannon from 'autocannon';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const PORT = arg('port', 3840);
const DEMO_DB_PORT = PORT + 2;
const DURATION_S = arg('duration', 20);
const CONNECTIONS = arg('connections', 16);
const SAMPLE_S = arg('sample', 10);
const ROOT = join(import.meta.dir, '..');
const BASE = `http://127.0.0.1:${PORT}`;
const dataDir = mkdtempSync(join(tmpdir(), 'toolgate-memory-'));
let child: Subprocess | null = null;

/** user + system CPU time of a process in µs (Linux /proc; USER_HZ 100). */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function start(): Promise<{ pid: number; startupMs: number; spawnedAt: number }> {
  const began = performance.now();
  child = Bun.spawn([process.execPath, 'src/main.ts'], {
    cwd: ROOT,
    // The npm start defaults: embedded store, demo on; only the ports and the data folder are ours.
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(PORT),
      HOST: '127.0.0.1',
      TOOLGATE_DATA_DIR: dataDir,
      TOOLGATE_DEMO_DB_PORT: String(DEMO_DB_PORT),
      TOOLGATE_LOG_LEVEL: 'error',
    },
    stdout: 'ignore',
    stderr: 'inherit',
  });
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await Bun.sleep(50)) {
    if (
      await fetch(`${BASE}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { pid: child.pid, startupMs: performance.now() - began, spawnedAt: began };
  }
  throw new Error('the gateway did not answer /healthz within 120 s');
}

async function stop(): Promise<void> {
  child?.kill('SIGTERM');
  await child?.exited;
  child = null;
}

async function call(path: string, init: RequestInit & { json?: unknown }): Promise<any> {
  const headers = { ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.headers as Record<string, string>) };
  const response = await fetch(`${BASE}${path}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

/** An enterprise org whose connector reads the demo's sample database; returns its API key. */
async function seed(): Promise<string> {
  const operatorToken = readFileSync(join(dataDir, 'operator.token'), 'utf8').trim();
  const org = await call('/operator/orgs', {
    method: 'POST',
    headers: { authorization: `Bearer ${operatorToken}` },
    json: { slug: 'memory', name: 'Memory bench', plan: 'enterprise', trial_days: 0, burst_limit_per_second: 100000 },
  });
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: org.oauth_client.client_id, client_secret: org.oauth_client.client_secret });
  const token = await call('/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
  const auth = { authorization: `Bearer ${token.access_token}` };
  const config = { host: '127.0.0.1', port: DEMO_DB_PORT, database: 'postgres', user: 'postgres', tls: 'disable', schemas: ['public'] };
  const connector = await call('/api/connectors', {
    method: 'POST',
    headers: auth,
    json: { name: 'sample', type: 'postgresql', config, credential: 'postgres' },
  });
  for (const deadline = Date.now() + 30_000; ; await Bun.sleep(100)) {
    const state = await call(`/api/connectors/${connector.id}`, { headers: auth });
    if (state.status === 'active') return org.api_key.key;
    if (state.status === 'failed' || Date.now() > deadline) throw new Error(`connector ${state.status}: ${state.status_reason}`);
  }
}

async function main() {
  const first = await start();
  await Bun.sleep(5000);
  const idleFirst = rssMb(first.pid);
  const apiKey = await seed();
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'query_postgresql_customers', arguments: { sql: 'SELECT id, name, country FROM customers ORDER BY id LIMIT 3' } },
  });
  let peak = 0;
  const curve: string[] = [];
  const loadStarted = performance.now();
  const cpuBefore = cpuUs(first.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(first.pid))), 250);
  const curveSampler = setInterval(
    () => curve.push(`${((performance.now() - loadStarted) / 1000).toFixed(0)}s ${rssMb(first.pid).toFixed(0)}`),
    SAMPLE_S * 1000,
  );
  const result = await autocannon({
    url: `${BASE}/mcp/memory`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body,
  });
  clearInterval(sampler);
  clearInterval(curveSampler);
  const cpuPerCall = (cpuUs(first.pid) - cpuBefore) / Math.max(1, result.requests.total);
  const afterLoad = rssMb(first.pid);
  await Bun.sleep(10_000);
  const settled = rssMb(first.pid);
  await stop();
  const again = await start();
  // Startup to the first served call: spawn to the first tools/call answered with the rows (the restart, so the
  // data folder exists; a first start also runs initdb).
  let firstCallMs = NaN;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(10)) {
    const res = await fetch(`${BASE}/mcp/memory`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body }).catch(
      () => null,
    );
    if (res?.ok && (await res.text()).includes('"rowCount":3')) {
      firstCallMs = performance.now() - again.spawnedAt;
      break;
    }
  }
  await Bun.sleep(5000);
  const idleRestart = rssMb(again.pid);
  await stop();
  const mb = (n: number) => `${n.toFixed(0)} MB`;
  console.log(`first start: ${(first.startupMs / 1000).toFixed(1)} s to /healthz, idle RSS ${mb(idleFirst)}`);
  console.log(
    `tools/call load (${CONNECTIONS} connections, ${DURATION_S} s): ${(result.requests.total / result.duration).toFixed(0)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}, gateway CPU ${cpuPerCall.toFixed(0)} µs/call`,
  );
  console.log(`RSS during load (peak) ${mb(peak)}, right after ${mb(afterLoad)}, 10 s later ${mb(settled)}`);
  console.log(`RSS curve under load (elapsed, MB): ${curve.join(', ')}`);
  console.log(
    `restart: ${(again.startupMs / 1000).toFixed(1)} s to /healthz, ${(firstCallMs / 1000).toFixed(2)} s to the first served tools/call, idle RSS ${mb(idleRestart)}`,
  );
}

try {
  await main();
} finally {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
}
