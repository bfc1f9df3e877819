/**
 * Where a tools/call's gateway CPU goes, by stage (issue 14): each stage run on its own, in this process, at 16
 * concurrent callers for a few seconds, interleaved rounds, and the CPU time of this process per operation (user +
 * system, all threads; PostgreSQL and Redis run in their own processes and are not counted). Real services: a fresh
 * PostgreSQL store database and a data database with the 10,000-row `items` table (both dropped at the end), Redis
 * windows on 127.0.0.1:6379. The HTTP server (Bun.serve + the router's entry) is not in here: `npm run bench`'s
 * server CPU per request minus the full in-process call is that part.
 *
 *   bun bench/stages.ts [--seconds=3] [--rounds=3] [--callers=16] [--only=text] (stages whose name contains text)
 *                       [--store=pglite] (the embedded store instead of PostgreSQL; the data database stays on PostgreSQL)
 *   (bun --cpu-prof --cpu-prof-dir=DIR bench/stages.ts --only=tools/call profiles one stage)
 */
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/store/db.ts';
import { PG, seedItems, TABLE, cleanupOnExit } from './common.ts';
import { configurePostgresqlPools, postgresqlDriver } from '../src/connectors/postgresql/driver.ts';
import { guardPostgresSql } from '../src/connectors/postgresql/guard/guard.ts';
import type { DatabaseConfig, ExecutionContext } from '../src/connectors/types.ts';
import { BASE, onboard, startTestGateway, tokenFor } from '../test/support/gateway.ts';
import { createConnector } from '../test/support/mcp.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SECONDS = arg('seconds', 3);
const ROUNDS = arg('rounds', 3);
const CALLERS = arg('callers', 16);
const SELECT = `SELECT id, sku, name, price, qty FROM ${TABLE} WHERE id > 5000 ORDER BY id LIMIT 10`;
const DATA_DB = `toolgate_bench_stages_${process.pid}_${Date.now().toString(36)}`;

const exit = cleanupOnExit();
const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
await admin.unsafe(`CREATE DATABASE "${DATA_DB}"`);
exit.add(async () => {
  const drop = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  await drop.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`);
  await drop.end({ timeout: 2 });
});
await admin.end({ timeout: 2 });
await seedItems(DATA_DB);

/** --store=pglite: the embedded store (PGlite, in memory) instead of a PostgreSQL store database. */
const STORE = process.argv.includes('--store=pglite') ? 'pglite' : 'postgres';
// TOOLGATE_AUTH_CACHE_TTL_MS=0 in the environment: the MCP credential cache off (every lookup in the store), for A/Bs.
const authCacheTtl: Record<string, string> = process.env.TOOLGATE_AUTH_CACHE_TTL_MS
  ? { TOOLGATE_AUTH_CACHE_TTL_MS: process.env.TOOLGATE_AUTH_CACHE_TTL_MS }
  : {};
const gateway = await startTestGateway(STORE, { REDIS_URL: 'redis://127.0.0.1:6379', TOOLGATE_WEBHOOK_WORKER: '0', ...authCacheTtl });
exit.add(() => gateway.close());
const org = await onboard(gateway);
const config: DatabaseConfig = { host: PG.host, port: PG.port, database: DATA_DB, user: PG.user, tls: 'disable' };
const manageToken = await tokenFor(gateway, org.clientId, org.clientSecret);
const connector = await createConnector(gateway, manageToken, { name: 'items', type: 'postgresql', config });
if (connector.status !== 'active') throw new Error(`the bench connector is ${connector.status}: ${connector.status_reason}`);
const toolName = `query_postgresql_items`;
// Issue 42: a saved-statement tool (typed parameters) reading the same rows, called with new values each time.
const savedName = 'bench_items_after';
const savedCreated = await gateway.app.handle(
  new Request(`${BASE}/api/connectors/${connector.id}/saved-tools`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${manageToken}` },
    body: JSON.stringify({
      name: savedName,
      description: 'Ten items after an id.',
      statement: `SELECT id, sku, name, price, qty FROM ${TABLE} WHERE id > :after ORDER BY id LIMIT 10`,
      parameters: [{ name: 'after', type: 'integer', description: 'Items after this id' }],
    }),
  }),
);
if (savedCreated.status !== 201) throw new Error(`saved tool: ${savedCreated.status} ${await savedCreated.text()}`);
await gateway.deps.jobs.idle();

const rpcRequest = (method: string, params: unknown) =>
  new Request(`${BASE}/mcp/${org.slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': org.apiKey },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
async function handled(method: string, params: unknown, check: string): Promise<void> {
  // The app itself (not the test gateway's contract-checking wrapper).
  const res = await gateway.app.handle(rpcRequest(method, params));
  const text = await res.text();
  if (res.status !== 200 || !text.includes(check)) throw new Error(`${method}: ${res.status} ${text.slice(0, 300)}`);
}

// The connector's read path alone, as the tool runtime calls it (its own pool, same settings and limits).
configurePostgresqlPools({ max: 10 });
const driverId = `bench-stages-${process.pid}`;
const tool = (await postgresqlDriver.introspect(driverId, config, null)).find((t) => t.target.table === TABLE)!;
const ctx: ExecutionContext = {
  connectorId: driverId,
  config,
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: true,
  limits: { statementTimeoutMs: 5000, lockTimeoutMs: 2000, maxRows: 1000, maxResultBytes: 1_048_576 },
};
exit.add(() => postgresqlDriver.close(driverId));

/** Varied SQL (issue 27): a new literal in every call, as `npm run bench`'s callvar, so no statement-keyed cache is warm. */
let variedN = 0;
const variedSelect = () => `SELECT id, sku, name, price, qty FROM ${TABLE} WHERE id > ${5000 + (variedN++ % 4000)} ORDER BY id LIMIT 10`;
const GUARD_OPTS = { table: { schema: 'public', name: TABLE }, allowWrite: false, allowDdl: false, readOnly: true };

const stages: Record<string, () => Promise<unknown>> = {
  'tools/call, whole (app.handle)': () => handled('tools/call', { name: toolName, arguments: { sql: SELECT } }, '"rowCount":10'),
  'tools/call varied, whole (app.handle)': () => handled('tools/call', { name: toolName, arguments: { sql: variedSelect() } }, '"rowCount":10'),
  'tools/call saved, whole (app.handle)': () => handled('tools/call', { name: savedName, arguments: { after: 5000 + (variedN++ % 4000) } }, '"rowCount":10'),
  'SQL guard varied, uncached (guardPostgresSql)': async () => guardPostgresSql(variedSelect(), GUARD_OPTS),
  'connector read path varied (postgresqlDriver.execute)': async () => {
    const r = await postgresqlDriver.execute(tool, { sql: variedSelect() }, ctx);
    if (r.isError) throw new Error(String(r.content[0]?.text));
  },
  'tools/list, whole (app.handle)': () => handled('tools/list', {}, toolName),
  'ping (transport, API key, org, local window)': () => handled('ping', {}, '"result"'),
  'burst window in Redis (limiter.take)': () => gateway.deps.limiter.take(org.orgId, 100_000),
  'SQL guard, cached (guardPostgresSql)': async () => guardPostgresSql(SELECT, GUARD_OPTS),
  'connector read path (postgresqlDriver.execute)': async () => {
    const r = await postgresqlDriver.execute(tool, { sql: SELECT }, ctx);
    if (r.isError) throw new Error(String(r.content[0]?.text));
  },
  'audit row, group commit (audit.toolCall)': () =>
    gateway.deps.audit.toolCall({
      orgId: org.orgId,
      action: 'tool.called',
      actor: { type: 'api_key', id: 'k' },
      targetType: 'tool',
      targetId: toolName,
      details: { tool_name: toolName, connector_id: connector.id, duration_ms: 1.2, row_count: 10, counted: true, arguments_sha256: 'a'.repeat(64) },
    }),
};

// Diagnostics by elimination: the whole call with one stage replaced by a no-op (what the stage costs in place,
// including its share of the event loop's and the sockets' work). Patched only while that variant runs.
const callWhole = stages['tools/call, whole (app.handle)']!;
const canned = await postgresqlDriver.execute(tool, { sql: SELECT }, ctx);
const patches = new Map<string, () => () => void>();
function without<T extends object, K extends keyof T>(name: string, target: T, key: K, replacement: T[K]): void {
  stages[name] = callWhole;
  patches.set(name, () => {
    const original = target[key];
    target[key] = replacement;
    return () => {
      target[key] = original;
    };
  });
}
without('tools/call without its audit row (no-op toolCall)', gateway.deps.audit, 'toolCall', (async () => undefined) as never);
without('tools/call without the database (canned driver result)', postgresqlDriver, 'execute', (async () => canned) as never);
without('tools/call without the Redis window (no-op take)', gateway.deps.limiter, 'take', (async () => ({ allowed: true, retryAfterSeconds: 0 })) as never);

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
async function run(op: () => Promise<unknown>, seconds: number): Promise<{ ops: number; cpuUs: number }> {
  let ops = 0;
  const until = performance.now() + seconds * 1000;
  const before = cpu();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < until) {
        await op();
        ops++;
      }
    }),
  );
  return { ops, cpuUs: cpu() - before };
}

const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
if (only) for (const name of Object.keys(stages)) if (!name.includes(only)) delete stages[name];
const results = new Map<string, { perOp: number[]; rate: number[] }>();
try {
  const runStage = async (name: string, seconds: number) => {
    const restore = patches.get(name)?.();
    try {
      return await run(stages[name]!, seconds);
    } finally {
      restore?.();
    }
  };
  for (const name of Object.keys(stages)) await runStage(name, 0.5); // warm-up (JIT, pools, caches)
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of Object.keys(stages)) {
      const { ops, cpuUs } = await runStage(name, SECONDS);
      const entry = results.get(name) ?? { perOp: [], rate: [] };
      entry.perOp.push(cpuUs / ops);
      entry.rate.push(ops / SECONDS);
      results.set(name, entry);
    }
  }
  await gateway.deps.audit.drain();
  // Each group-commit batch stamps its rows with one created_at: rows per batch, as the calls made them.
  const [batches] = rowsOf<{ batches: number; rows: number }>(
    await gateway.deps.store.db.execute(
      sql`SELECT count(DISTINCT created_at)::int AS batches, count(*)::int AS rows FROM audit_events WHERE org_id = ${org.orgId} AND action = 'tool.called'`,
    ),
  );
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  console.log(
    `\nCPU µs of this process per operation, ${CALLERS} concurrent callers, ${ROUNDS} rounds of ${SECONDS} s, medians (load average ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')})\n`,
  );
  console.log('| stage | CPU µs/op | ops/s |\n|:--|--:|--:|');
  for (const [name, { perOp, rate }] of results) console.log(`| ${name} | ${median(perOp).toFixed(0)} | ${median(rate).toFixed(0)} |`);
  console.log(
    `\naudit: ${batches!.rows} tool-call rows in ${batches!.batches} group-commit batches (${(batches!.rows / batches!.batches).toFixed(1)} rows per batch)`,
  );
} finally {
  await exit.run();
}
process.exit(0);
