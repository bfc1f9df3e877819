/**
 * A thousand orgs on one gateway (issue 42 item 4, decision 0323): every org has its own PostgreSQL connector on the
 * server that also holds the gateway's store, and all of them call `tools/call` at the same moment. What it shows,
 * from the server's side (pg_stat_activity, sampled every 10 ms):
 *   - the connections on the server never pass the connector budget plus the store's own, so the store keeps its
 *     reserve: during the burst the operator CLI runs a command on the store and a second gateway instance starts on
 *     it, both timed;
 *   - every call answers rows or a clear tool error (the budget's "Retry shortly" when no connection was freed within
 *     the wait), never a server refusal;
 *   - a database at its connection limit (`--limited` of the orgs connect as a role allowed 2 connections) answers its
 *     calls with the tool error "has no connection slot left", not a stack trace or a hang.
 * Everything goes through the gateway's public surface in process (`app.handle`): onboarding by the operator API,
 * connectors created, validated and introspected by the REST API, calls by `POST /mcp/{org}` with each org's API key.
 *
 *   bun bench/thousand-orgs.ts [--orgs=1000] [--calls=3] [--limited=20] [--wait-ms=5000] [--reserve=30] [--per-server=100] [--concurrency=4]
 * Needs PostgreSQL on 127.0.0.1:5432 (a store and a data database and one role, dropped at the end).
 * BENCH_DEBUG=1 prints the connectors' database's connections by state each time their peak passes the budget.
 */
import postgres from 'postgres';
import { spawn } from 'node:child_process';
import { cleanupOnExit, PG, seedItems, TABLE } from './common.ts';
import { BASE, onboard, startTestGateway, tokenFor, type TestGateway } from '../test/support/gateway.ts';
import { callTool, createConnector } from '../test/support/mcp.ts';
import { connectionBudget } from '../src/connectors/shared/budget.ts';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ORGS = Number(arg('orgs', '1000'));
const CALLS = Number(arg('calls', '3'));
const LIMITED = Number(arg('limited', '20'));
const WAIT_MS = arg('wait-ms', '5000');
/**
 * The store's reserve on its server: what everything but the connectors may use there. Default 30 here: two
 * instances' store pools (10 each), the CLI's (2), this bench's sampler, and backends still exiting after a pool
 * closed (a pool's tokens come back when its sockets close; the server drops the backend a moment later).
 */
const RESERVE = arg('reserve', '30');
const PER_SERVER = arg('per-server', '100');
// At most 4 at once: the operator token's door reserves an attempt per request until it succeeds (5 per address in flight).
const CONCURRENCY = Number(arg('concurrency', '4'));
const LIMITED_CONNECTIONS = 2;

const suffix = `${process.pid}_${Date.now().toString(36)}`;
const DATA_DB = `toolgate_bench_orgs_${suffix}`;
const ROLE = `toolgate_bench_limited_${suffix}`;
const exit = cleanupOnExit();
const admin = postgres({ ...PG, database: 'postgres', max: 2, onnotice: () => undefined });
await admin.unsafe(`CREATE DATABASE "${DATA_DB}"`);
await admin.unsafe(`CREATE ROLE "${ROLE}" LOGIN`);
exit.add(async () => {
  const drop = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  await drop.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`);
  await drop.unsafe(`DROP ROLE IF EXISTS "${ROLE}"`);
  await drop.end({ timeout: 2 });
});
await seedItems(DATA_DB);
{
  const data = postgres({ ...PG, database: DATA_DB, max: 1, onnotice: () => undefined });
  await data.unsafe(`GRANT SELECT ON ${TABLE} TO "${ROLE}"`);
  await data.end({ timeout: 2 });
}
const [shown] = await admin<{ max_connections: string }[]>`SHOW max_connections`;
const maxConnections = Number(shown!.max_connections);

const env = {
  TOOLGATE_WEBHOOK_WORKER: '0',
  TOOLGATE_CONNECTOR_CONNECTIONS_WAIT_MS: WAIT_MS,
  TOOLGATE_STORE_RESERVED_CONNECTIONS: RESERVE,
  TOOLGATE_CONNECTOR_CONNECTIONS_PER_SERVER_MAX: PER_SERVER,
};
const g: TestGateway = await startTestGateway('postgres', env);
exit.add(() => g.close());
const storeDb = new URL(g.databaseUrl!).pathname.slice(1);
const budget = { ...connectionBudget.settings };
const reserve = g.config.storeReservedConnections;
const serverCap = Math.min(budget.perServer, budget.total, maxConnections - reserve);
console.error(
  `thousand-orgs: max_connections ${maxConnections}, store reserve ${reserve}, budget total ${budget.total} / per server ${budget.perServer}: ` +
    `connectors may hold ${serverCap} connections on this server; wait ${budget.waitMs} ms`,
);

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

interface Org {
  slug: string;
  apiKey: string;
  limited: boolean;
}
const setupStarted = performance.now();
const orgs: Org[] = await pool(
  Array.from({ length: ORGS }, (_, i) => i),
  CONCURRENCY,
  async (i) => {
    const org = await onboard(g, `bench-${i}-${suffix.replace(/_/g, '-')}`);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    // The limited orgs come first: their calls are the first to get budget tokens, so they meet the role's limit.
    const limited = i < LIMITED;
    const connector = await createConnector(g, token, {
      name: 'items',
      type: 'postgresql',
      config: { host: PG.host, port: PG.port, database: DATA_DB, user: limited ? ROLE : PG.user, tls: 'disable' },
    });
    if (connector.status !== 'active') throw new Error(`connector of org ${i}: ${connector.status} ${JSON.stringify(connector.last_error ?? '')}`);
    if (i % 100 === 99) console.error(`thousand-orgs: ${i + 1} orgs onboarded, ${((performance.now() - setupStarted) / 1000).toFixed(0)} s`);
    return { slug: org.slug, apiKey: org.apiKey, limited };
  },
);
const setupS = (performance.now() - setupStarted) / 1000;
// The limited role's database now takes 2 of its connections at a time, as a server at its limit would.
await admin.unsafe(`ALTER ROLE "${ROLE}" CONNECTION LIMIT ${LIMITED_CONNECTIONS}`);

const toolName = await (async () => {
  const first = orgs.find((o) => !o.limited)!;
  const res = await g.app.handle(
    new Request(`${BASE}/mcp/${first.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': first.apiKey },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );
  const tools = ((await res.json()) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);
  const name = tools.find((t) => t.includes('items') && t.startsWith('query'));
  if (!name) throw new Error(`no query tool for ${TABLE}: ${tools.join(', ')}`);
  return name;
})();

// The server's connections by database, every 10 ms, on the bench's own connection (counted in "all").
const peak = { all: 0, store: 0, data: 0, dataLimitedRole: 0 };
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const rows = await admin<{ datname: string | null; usename: string | null; n: number }[]>`
      SELECT datname, usename, count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' GROUP BY 1, 2`;
    let all = 0;
    let store = 0;
    let data = 0;
    let limited = 0;
    for (const r of rows) {
      all += r.n;
      if (r.datname === storeDb) store += r.n;
      if (r.datname === DATA_DB) data += r.n;
      if (r.usename === ROLE) limited += r.n;
    }
    peak.all = Math.max(peak.all, all);
    peak.store = Math.max(peak.store, store);
    if (data > peak.data && data > serverCap && process.env.BENCH_DEBUG)
      console.error(
        JSON.stringify(
          await admin`SELECT state, wait_event, application_name, count(*)::int AS n, min(now() - backend_start) AS youngest, max(now() - backend_start) AS oldest
            FROM pg_stat_activity WHERE datname = ${DATA_DB} GROUP BY 1, 2, 3`,
        ),
      );
    peak.data = Math.max(peak.data, data);
    peak.dataLimitedRole = Math.max(peak.dataLimitedRole, limited);
    await Bun.sleep(10);
  }
})();

type Outcome = 'rows' | 'budget' | 'no slot' | 'other';
const outcomes: Record<Outcome, number> = { rows: 0, budget: 0, 'no slot': 0, other: 0 };
const limitedOutcomes: Record<Outcome, number> = { rows: 0, budget: 0, 'no slot': 0, other: 0 };
const examples = new Map<Outcome, string>();
let id = 0;
// Through app.handle directly: the test gateway's handle also checks every answer against openapi.yaml.
const unchecked = { ...g, handle: (request: Request) => g.app.handle(request) };
async function call(org: Org): Promise<void> {
  const sql = `SELECT id, name FROM ${TABLE} WHERE id > ${++id % 5000} ORDER BY id LIMIT 10`;
  const res = await callTool(unchecked, org.slug, { apiKey: org.apiKey }, toolName, { sql });
  const text = res.text;
  let outcome: Outcome;
  if (res.status === 200 && text.includes('"result"') && !text.includes('"isError":true')) outcome = 'rows';
  else if (text.includes('connection budget is exhausted')) outcome = 'budget';
  else if (text.includes('no connection slot left')) outcome = 'no slot';
  else outcome = 'other';
  (org.limited ? limitedOutcomes : outcomes)[outcome]++;
  if (!examples.has(outcome) && outcome !== 'rows') {
    const body = JSON.parse(text) as { result?: { content?: { text: string }[] }; error?: { message: string } };
    examples.set(outcome, body.result?.content?.[0]?.text ?? body.error?.message ?? `${res.status} ${text.slice(0, 200)}`);
  }
}

/** The operator CLI on the store during the burst: `toolgate org list`, offline on DATABASE_URL. */
function cliDuringBurst(): Promise<{ code: number | null; ms: number; line: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['src/cli.ts', 'org', 'list', '--limit', '3'], {
      env: { ...process.env, DATABASE_URL: g.databaseUrl!, TOOLGATE_SECRET_KEY: 'a'.repeat(64), TOOLGATE_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, ms: performance.now() - started, line: out.trim().split('\n')[0] ?? '' }));
  });
}

/** A second gateway instance, its own process (bench/second-instance.ts), starting on the same store during the burst. */
function secondInstance(): Promise<{ ok: boolean; ms: number; detail: string }> {
  return new Promise((resolve) => {
    const other = orgs.find((o) => !o.limited)!;
    const child = spawn(process.execPath, ['bench/second-instance.ts', g.databaseUrl!, other.slug, other.apiKey], {
      env: { ...process.env, TOOLGATE_STORE_RESERVED_CONNECTIONS: String(reserve) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', () => {
      const line = out
        .trim()
        .split('\n')
        .find((l) => l.startsWith('{'));
      const r = line ? (JSON.parse(line) as { ok: boolean; ms: number; status: number | string }) : { ok: false, ms: 0, status: out.slice(0, 200) };
      resolve({ ok: r.ok, ms: r.ms, detail: typeof r.status === 'number' ? `tools/list ${r.status}` : r.status });
    });
  });
}

const burstStarted = performance.now();
const side = Bun.sleep(300).then(() => Promise.all([cliDuringBurst(), secondInstance()]));
await Promise.all(
  orgs.map(async (org) => {
    for (let c = 0; c < CALLS; c++) await call(org);
  }),
);
const burstS = (performance.now() - burstStarted) / 1000;
const [cli, second] = await side;
sampling = false;
await sampler;
const heldAfter = connectionBudget.usage();

console.log(`\n| ${ORGS.toLocaleString('en')} orgs, ${CALLS} calls each at once | |`);
console.log('|:--|--:|');
const lines: [string, string][] = [
  ['onboarding (operator API, connector created, validated, introspected), s', setupS.toFixed(0)],
  ['max_connections of the server / store reserve', `${maxConnections} / ${reserve}`],
  ['connector budget on this server (min of total, per server, max_connections - reserve)', String(serverCap)],
  ['peak connections on the server, all databases (sampled every 10 ms)', String(peak.all)],
  ["peak connections to the connectors' database", String(peak.data)],
  ['peak connections to the store database', String(peak.store)],
  [`peak connections of the limited role (CONNECTION LIMIT ${LIMITED_CONNECTIONS})`, String(peak.dataLimitedRole)],
  ['burst, s', burstS.toFixed(1)],
  [
    `calls of the ${ORGS - LIMITED} orgs: rows / budget error / no slot / other`,
    `${outcomes.rows} / ${outcomes.budget} / ${outcomes['no slot']} / ${outcomes.other}`,
  ],
  [
    `calls of the ${LIMITED} limited orgs: rows / budget error / no slot / other`,
    `${limitedOutcomes.rows} / ${limitedOutcomes.budget} / ${limitedOutcomes['no slot']} / ${limitedOutcomes.other}`,
  ],
  ['operator CLI during the burst (`org list`): exit code, ms', `${cli.code}, ${cli.ms.toFixed(0)}`],
  ['second instance started during the burst: tools/list, ms', `${second.detail}, ${second.ms.toFixed(0)}`],
  ['connector connections the budget holds after the burst', String(heldAfter)],
];
for (const [k, v] of lines) console.log(`| ${k} | ${v} |`);
for (const [k, v] of examples) console.log(`\n${k}: ${v}`);
const ok =
  peak.data <= serverCap &&
  peak.all <= maxConnections &&
  outcomes.other === 0 &&
  limitedOutcomes.other === 0 &&
  cli.code === 0 &&
  second.ok &&
  peak.dataLimitedRole <= LIMITED_CONNECTIONS;
console.log(`\n${ok ? 'PASS' : 'FAIL'}: connectors within the budget, the store reachable, every call rows or a clear tool error`);
await admin.end({ timeout: 2 });
await exit.run();
process.exit(ok ? 0 : 1);
