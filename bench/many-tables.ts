/**
 * Issue 38 item 5: a connector over a PostgreSQL database of 2,000 tables, with an include pattern of 20 tables, with
 * none, and with none in the `single` tool layout (one SQL tool for the connector, decision 0299). Measures, per case: the driver's introspection alone; the gateway's whole validation (introspect,
 * filter, write the tools) from create to `active`; and tools/list for a credential scoped to that connector: the
 * first page's size and time (cold: the catalog built on this request; warm: the median of repeated requests), the
 * number of pages and the bytes of a full walk. A fresh data database (2,000 tables in `public`) and a fresh
 * PostgreSQL store are created and dropped at the end, also on Ctrl-C.
 *
 *   bun bench/many-tables.ts [--tables=2000] [--rounds=3] [--warm=50]
 */
import postgres from 'postgres';
import { postgresqlDriver } from '../src/connectors/postgresql/driver.ts';
import type { DatabaseConfig } from '../src/connectors/types.ts';
import { BASE, onboard, startTestGateway, tokenFor } from '../test/support/gateway.ts';
import { createConnector } from '../test/support/mcp.ts';
import { cleanupOnExit, PG } from './common.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const TABLES = arg('tables', 2000);
const ROUNDS = arg('rounds', 3);
const WARM = arg('warm', 50);
const INCLUDED = 20;
const DATA_DB = `h4_bench_many_${process.pid}_${Date.now().toString(36)}`;

const exit = cleanupOnExit();
const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
await admin.unsafe(`CREATE DATABASE "${DATA_DB}"`);
exit.add(async () => {
  const drop = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  await drop.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`);
  await drop.end({ timeout: 2 });
});
await admin.end({ timeout: 2 });
const data = postgres({ ...PG, database: DATA_DB, max: 1, onnotice: () => undefined });
await data.unsafe(`DO $$ BEGIN FOR i IN 1..${TABLES} LOOP
  EXECUTE format('CREATE TABLE public.%s (id integer PRIMARY KEY, label text NOT NULL, amount numeric(10,2), created_at timestamptz)',
    CASE WHEN i <= ${INCLUDED} THEN 'order_' ELSE 'item_' END || lpad(i::text, 4, '0'));
END LOOP; END $$`);
await data.end({ timeout: 2 });

const gateway = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' });
exit.add(() => gateway.close());
const org = await onboard(gateway);
const token = await tokenFor(gateway, org.clientId, org.clientSecret);
const config: DatabaseConfig = { host: PG.host, port: PG.port, database: DATA_DB, user: PG.user, tls: 'disable' };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function listPage(cursor?: string): Promise<{ ms: number; bytes: number; next?: string; tools: number }> {
  const started = performance.now();
  const response = await gateway.app.handle(
    new Request(`${BASE}/mcp/${org.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.apiKey },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: cursor ? { cursor } : {} }),
    }),
  );
  const text = await response.text();
  const ms = performance.now() - started;
  const body = JSON.parse(text) as { result?: { tools: unknown[]; nextCursor?: string }; error?: unknown };
  if (!body.result) throw new Error(`tools/list failed: ${text.slice(0, 300)}`);
  return { ms, bytes: text.length, next: body.result.nextCursor, tools: body.result.tools.length };
}

interface Figures {
  introspectMs: number[];
  validateMs: number[];
  tools: number;
  firstPageBytes: number;
  coldMs: number[];
  warmMs: number[];
  pages: number;
  walkBytes: number;
  walkMs: number[];
}

async function round(label: string, include: string[], layout: 'per_table' | 'single', f: Figures): Promise<void> {
  const driverId = `bench-many-${label}-${f.introspectMs.length}`;
  let started = performance.now();
  await postgresqlDriver.introspect(driverId, config, null);
  f.introspectMs.push(performance.now() - started);
  await postgresqlDriver.close(driverId);
  started = performance.now();
  const connector = await createConnector(gateway, token, {
    name: `${label} ${f.validateMs.length}`,
    type: 'postgresql',
    config: config as unknown as Record<string, unknown>,
    ...({ include_tables: include, tool_layout: layout } as object),
  } as never);
  f.validateMs.push(performance.now() - started);
  if (connector.status !== 'active') throw new Error(`connector ${label}: ${connector.status} ${connector.status_reason}`);
  // One connector at a time in the org (each round archives its own): the org's key lists exactly its tools.
  const cold = await listPage();
  f.coldMs.push(cold.ms);
  f.firstPageBytes = cold.bytes;
  const warm: number[] = [];
  for (let i = 0; i < WARM; i++) warm.push((await listPage()).ms);
  f.warmMs.push(median(warm));
  started = performance.now();
  let cursor: string | undefined;
  let pages = 0;
  let bytes = 0;
  let tools = 0;
  do {
    const page = await listPage(cursor);
    pages++;
    bytes += page.bytes;
    tools += page.tools;
    cursor = page.next;
  } while (cursor);
  f.walkMs.push(performance.now() - started);
  Object.assign(f, { pages, walkBytes: bytes, tools: tools - 1 });
  // Archived before the next round: its tools leave the catalog, the next connector takes the same names.
  const archived = await gateway.handle(
    new Request(`${BASE}/api/connectors/${connector.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } }),
  );
  if (archived.status !== 200) throw new Error(`archive: ${archived.status}`);
}

const cases: [string, string[], 'per_table' | 'single'][] = [
  ['include20', ['public.order*'], 'per_table'],
  ['all', [], 'per_table'],
  ['single', [], 'single'],
];
const results = new Map<string, Figures>();
for (const [label] of cases)
  results.set(label, { introspectMs: [], validateMs: [], tools: 0, firstPageBytes: 0, coldMs: [], warmMs: [], pages: 0, walkBytes: 0, walkMs: [] });
// Interleaved rounds: the cases share whatever the machine does meanwhile.
try {
  for (let r = 0; r < ROUNDS; r++) for (const [label, include, layout] of cases) await round(label, include, layout, results.get(label)!);
} catch (err) {
  console.error(`bench: ${String(err)}`);
  await exit.run();
  process.exit(2);
}

const ms = (xs: number[]) => `${median(xs).toFixed(1)} ms`;
console.log(`\n${TABLES} tables, page size ${gateway.config.toolsListPageSize}, ${ROUNDS} interleaved rounds (medians)\n`);
console.log('| case | tools | driver introspect | create -> active | tools/list page 1 | cold | warm | pages | full walk | walk time |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const [label, f] of results) {
  console.log(
    `| ${label} | ${f.tools} | ${ms(f.introspectMs)} | ${ms(f.validateMs)} | ${(f.firstPageBytes / 1024).toFixed(1)} KB | ${ms(f.coldMs)} | ${ms(f.warmMs)} | ${f.pages} | ${(f.walkBytes / 1024).toFixed(1)} KB | ${ms(f.walkMs)} |`,
  );
}
await exit.run();
process.exit(0);
