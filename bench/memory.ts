/**
 * Memory of the `npm start` path (embedded PGlite store + demo database): RSS of the gateway process idle after
 * its first start, under a `tools/call` load against the demo database, after the load, and idle after a restart
 * on the same data folder. Local only; nothing outside a temporary data folder is touched.
 *
 *   bun bench/memory.ts [--port=3840] [--duration=20] [--connections=16] [--sample=10]
 *   bun bench/memory.ts --idle [--port=3840]
 *
 * `--idle` (what a new user sees after `npm start`): RSS of a first start on a fresh data folder at 5, 10, 20 and 40 s
 * after /healthz answers, then the same after a restart on that folder; no load, no database outside the folder.
 *
 * Also prints the RSS curve under load (one sample every --sample seconds: a soak is a long --duration) and, after
 * the restart, the time from spawning the process to the first served tools/call (issue 14: <= 1.5 s on the
 * embedded store).
 *
 * The load runs through an enterprise org created with the operator API (the demo org's starter plan would answer
 * most of it with 429). The demo's sample database is reachable by the demo org only (a private socket), so this
 * org's connector reads a 3-row `customers` table in a database the bench creates on the local PostgreSQL
 * (127.0.0.1:5432, dropped at the end; the gateway allows that one address): every call is a real SELECT, and
 * the store (audit rows, quota) is the embedded PGlite of `npm start`.
 */
import autocannon from 'autocannon';
import postgres from 'postgres';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const PORT = arg('port', 3840);
const DURATION_S = arg('duration', 20);
const CONNECTIONS = arg('connections', 16);
const SAMPLE_S = arg('sample', 10);
const IDLE_ONLY = process.argv.includes('--idle');
const PG = { host: '127.0.0.1', port: 5432, user: 'postgres' };
const DATA_DB = `toolgate_memory_${process.pid}`;
const ROOT = join(import.meta.dir, '..');
const BASE = `http://127.0.0.1:${PORT}`;
const dataDir = mkdtempSync(join(tmpdir(), 'toolgate-memory-'));
let child: Subprocess | null = null;
/** What `npm start` sets before `bun src/main.ts`: the leading NAME=value words of package.json's start script. */
const startScript: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start;
const START_ENV: Record<string, string> = {};
for (const word of startScript.trim().split(/\s+/)) {
  const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(word);
  if (!assignment) break;
  START_ENV[assignment[1]!] = assignment[2]!;
}

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
      ...START_ENV,
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(PORT),
      HOST: '127.0.0.1',
      TOOLGATE_DATA_DIR: dataDir,
      TOOLGATE_LOG_LEVEL: 'error',
      // The load's data database (see the header); the demo's own database needs no network address.
      TOOLGATE_OUTBOUND_ALLOW_HOSTS: `${PG.host}:${PG.port}`,
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
  const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE "${DATA_DB}"`);
  } finally {
    await admin.end();
  }
  const data = postgres({ ...PG, database: DATA_DB, max: 1, onnotice: () => undefined });
  try {
    await data.unsafe(`CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, country text NOT NULL);
      INSERT INTO customers VALUES (1, 'Ada', 'GB'), (2, 'Grace', 'US'), (3, 'Edsger', 'NL');`);
  } finally {
    await data.end();
  }
  const config = { host: PG.host, port: PG.port, database: DATA_DB, user: PG.user, tls: 'disable', schemas: ['public'] };
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

/** RSS at 5, 10, 20 and 40 s after /healthz answers (Bun.sleep between the reads). */
async function idleCurve(pid: number): Promise<string> {
  const points: string[] = [];
  let waited = 0;
  for (const at of [5, 10, 20, 40]) {
    await Bun.sleep((at - waited) * 1000);
    waited = at;
    points.push(`${at} s ${rssMb(pid).toFixed(0)} MB`);
  }
  return points.join(', ');
}

async function idle() {
  const first = await start();
  const firstCurve = await idleCurve(first.pid);
  await stop();
  const again = await start();
  const againCurve = await idleCurve(again.pid);
  await stop();
  console.log(`first start (fresh data folder): ${(first.startupMs / 1000).toFixed(1)} s to /healthz; idle RSS ${firstCurve}`);
  console.log(`restart (same folder): ${(again.startupMs / 1000).toFixed(1)} s to /healthz; idle RSS ${againCurve}`);
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
  await (IDLE_ONLY ? idle() : main());
} finally {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
  if (!IDLE_ONLY) {
    const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}
