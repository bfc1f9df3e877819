/**
 * Flat as data grows (issue 42 item 3): the reads that used to scan the audit log, timed at several sizes of it.
 * For each size, a fresh PostgreSQL store database gets that many audit rows over 90 days and 20 orgs (equal shares,
 * in time order, but the first org's last day: 500 rows at every size, so the export of a day returns the same rows
 * as the log grows), then the first org's reads are timed in process (`app.handle`, no HTTP): the audit list's first
 * page and a page at a deep cursor (the middle of its chain), unfiltered and under each filter the contract offers;
 * billing usage, the overview insights at 7 and 31 days (per tool, connector, agent and reason class) and its most
 * refused fingerprints at 31 days, the export of the last day, and a `tools/call` (a 10-row SELECT on a 10,000-row
 * table). Medians of --repeats runs (tools/call: of 50 calls), after one warm-up run.
 *
 * How rows grow: `appendAudit`, the gateway's own sealed write (the one management changes and approvals use: rows
 * chained, hashed and MAC'd in the INSERT, through the roll-up triggers), in transactions of 4,000 rows, backdated
 * in time order. It is the row the hot path writes once sealed, and what the sealed-in-INSERT write path will write;
 * growing 1M rows through `tools/call` itself takes hours on this machine. `audit verify` accepts every row.
 *
 *   bun bench/scale.ts [--rows=10000,1000000] [--orgs=20] [--days=90] [--repeats=5] [--via=calls [--callers=64]] [--keep]
 * Needs PostgreSQL on 127.0.0.1:5432 (a store database and a data database per run, dropped at the end; with --keep
 * the last size's store database stays, and its name is printed, to look into a read with EXPLAIN).
 */
import postgres from 'postgres';
import { appendAudit, chainState, type AuditInput } from '../src/audit/repository.ts';
import { verifyChain } from '../src/audit/verify.ts';
import { cleanupOnExit, PG, seedItems, TABLE } from './common.ts';
import { BASE, onboard, startTestGateway, tokenFor, type TestGateway } from '../test/support/gateway.ts';
import { callTool, createConnector } from '../test/support/mcp.ts';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SIZES = arg('rows', '10000,1000000')
  .split(',')
  .map((s) => Number(s.replace(/_/g, '')));
const ORGS = Number(arg('orgs', '20'));
const DAYS = Number(arg('days', '90'));
const REPEATS = Number(arg('repeats', '5'));
/**
 * --via=calls: the independent check. One gateway grows its log through `tools/call` itself (app.handle, --callers
 * concurrent callers, the first org's API key: ~95% 10-row SELECTs answered, ~5% DELETEs the guard refuses, so the
 * refusal filters have rows), to each size in turn, and the same reads are timed at each. All rows are recent (the
 * calls' own times), so "export of a day" returns every row grown and is left out in this mode.
 */
const VIA_CALLS = arg('via', 'appendAudit') === 'calls';
const CALLERS = Number(arg('callers', '64'));
const KEEP = process.argv.includes('--keep');
// appendAudit binds 15 parameters per row; PostgreSQL takes at most 65,535 per statement.
const BATCH = 4000;
const DAY = 86_400_000;

const DATA_DB = `toolgate_bench_scale_${process.pid}_${Date.now().toString(36)}`;
const exit = cleanupOnExit();
const admin = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
await admin.unsafe(`CREATE DATABASE "${DATA_DB}"`);
await admin.end({ timeout: 2 });
exit.add(async () => {
  const drop = postgres({ ...PG, database: 'postgres', max: 1, onnotice: () => undefined });
  await drop.unsafe(`DROP DATABASE IF EXISTS "${DATA_DB}" WITH (FORCE)`);
  await drop.end({ timeout: 2 });
});
await seedItems(DATA_DB);

const TOOLS = ['query_postgresql_items', 'query_postgresql_orders', 'query_postgresql_customers', 'search_docs', 'list_files'];
const AGENTS = ['key-a', 'key-b', 'client-c', 'client-d'];
const REASONS = ['write', 'ddl', 'multiple_statements', 'function_not_allowed', 'other_table', 'hidden_column', 'parse_error'];
/** Every filter GET /api/audit offers (openapi.yaml listAudit), each timed on its first page and at a deep cursor. */
const FILTERS: [string, string][] = [
  ['none', ''],
  ['outcome', 'outcome=refused'],
  ['action', 'action=tool.call_refused'],
  ['actor', 'actor=api_key:key-b'],
  ['tool', `tool=${TOOLS[3]}`],
  ['connector', 'connector_id=CONNECTOR'],
  ['reason class', 'reason_class=other_table'],
  ['fingerprint', `fingerprint_id=${(7).toString(16).padStart(16, '0')}`],
  ['target', 'target_id=CONNECTOR'],
  ['days', 'days=7'],
  ['time range', 'RANGE'],
];

/** Row i of n: a mix of tool calls (most), refusals and management changes, like a month of use. */
function row(orgId: string, connectorId: string, i: number): AuditInput {
  const r = (i * 2654435761) % 1000;
  // Row i goes to org i % ORGS: the agent and the tool vary with the org's own row count, so every org sees them all.
  const j = Math.floor(i / ORGS);
  if (r < 40) return { orgId, action: 'connector.updated', actor: { type: 'user', id: 'u-1' }, targetType: 'connector', targetId: connectorId };
  const refused = r < 90;
  return {
    orgId,
    action: r < 60 ? 'tool.call_refused' : 'tool.called',
    actor: { type: 'api_key', id: AGENTS[j % AGENTS.length]! },
    targetType: 'tool',
    targetId: TOOLS[j % TOOLS.length],
    outcome: refused ? 'refused' : r < 120 ? 'error' : 'success',
    details: {
      tool_name: TOOLS[j % TOOLS.length],
      connector_id: connectorId,
      duration_ms: Math.round((r % 400) + (i % 10) / 10) / 10,
      row_count: r % 50,
      counted: !refused,
      // A refusal names its reason class and the statement's fingerprint (issue 41 item 1), as the guard's refusals do.
      ...(refused
        ? {
            reason_class: REASONS[r % REASONS.length],
            fingerprint_id: (r % 40).toString(16).padStart(16, '0'),
            fingerprint: `delete from t${r % 40} where id = ?`,
          }
        : {}),
    },
  };
}

/**
 * The first org's last day: this many rows at every size (the log's history before it grows with the size), so "export
 * of a day" returns the same rows at 10k and 5M and times the seek, not the day's volume (which it must return).
 */
const LAST_DAY = 500;

async function grow(g: TestGateway, orgs: { orgId: string; connectorId: string }[], total: number): Promise<number> {
  const db = g.deps.store.db;
  const start = Date.now() - DAYS * DAY;
  // History: every org's rows but the last day's, over the days before it.
  const history = total - LAST_DAY;
  const span = (DAYS - 1) * DAY - 3_600_000;
  const started = performance.now();
  for (let done = 0; done < history; done += BATCH) {
    const n = Math.min(BATCH, history - done);
    // One timestamp per batch (a batch spans ~ span / (history/BATCH) of time), batches in time order.
    const at = new Date(start + ((done + n / 2) / history) * span);
    const rows = Array.from({ length: n }, (_, k) => {
      const i = done + k;
      const org = orgs[i % orgs.length]!;
      return row(org.orgId, org.connectorId, i);
    });
    await appendAudit(db, rows, at);
  }
  // The first org's last day, in 10 batches over it (the last one an hour before now).
  const me = orgs[0]!;
  for (let b = 0; b < 10; b++) {
    const at = new Date(Date.now() - DAY + 1_800_000 + (b * (DAY - 3_600_000)) / 10);
    const rows = Array.from({ length: LAST_DAY / 10 }, (_, k) => row(me.orgId, me.connectorId, (b * LAST_DAY) / 10 + k));
    await appendAudit(db, rows, at);
  }
  return performance.now() - started;
}

async function median(runs: number, fn: () => Promise<void>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    // 6 ms between reads: the org's credential may make 200 REST calls per second (src/limits/plans.ts).
    await Bun.sleep(6);
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const results: { size: number; figures: Record<string, number>; returned: Record<string, number> }[] = [];
type Org = { orgId: string; connectorId: string; slug: string; apiKey: string; token: string };
async function setUp(): Promise<{ g: TestGateway; orgs: Org[] }> {
  const g = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0', TOOLGATE_AUDIT_RETENTION_DAYS: '0' });
  const orgs: Org[] = [];
  for (let i = 0; i < ORGS; i++) {
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const connector =
      i === 0
        ? await createConnector(g, token, {
            name: 'items',
            type: 'postgresql',
            config: { host: PG.host, port: PG.port, database: DATA_DB, user: PG.user, tls: 'disable' },
          })
        : { id: crypto.randomUUID() };
    orgs.push({ orgId: org.orgId, connectorId: connector.id, slug: org.slug, apiKey: org.apiKey, token });
  }
  return { g, orgs };
}

/** The gateway through app.handle directly: the test gateway's handle also checks every answer against openapi.yaml. */
const uncheckedOf = (g: TestGateway): TestGateway => ({ ...g, handle: (request: Request) => g.app.handle(request) });

/** --via=calls: `count` more tools/call requests through the first org, CALLERS at a time; returns ms. */
async function growByCalls(g: TestGateway, me: Org, count: number): Promise<number> {
  const unchecked = uncheckedOf(g);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (next < count) {
        const n = next++;
        const refused = n % 20 === 7;
        const sql = refused ? `DELETE FROM ${TABLE} WHERE id = ${n % 40}` : `SELECT id, name FROM ${TABLE} WHERE id > ${n % 5000} ORDER BY id LIMIT 10`;
        const { status, text } = await callTool(unchecked, me.slug, { apiKey: me.apiKey }, 'query_postgresql_items', { sql });
        if (status !== 200 || !text.includes('"result"')) throw new Error(`growing by tools/call: ${status} ${text.slice(0, 200)}`);
      }
    }),
  );
  await g.deps.audit.drain();
  return performance.now() - started;
}

let shared: { g: TestGateway; orgs: Org[]; grown: number } | null = null;
for (const size of SIZES) {
  let g: TestGateway;
  let orgs: Org[];
  let growMs: number;
  if (VIA_CALLS) {
    shared ??= { ...(await setUp()), grown: 0 };
    ({ g, orgs } = shared);
    growMs = await growByCalls(g, orgs[0]!, size - shared.grown);
    shared.grown = size;
  } else {
    ({ g, orgs } = await setUp());
    growMs = await grow(g, orgs, size);
  }
  await g.deps.store.db.execute('ANALYZE' as never).catch(() => {});
  const me = orgs[0]!;
  const head = (await chainState(g.deps.store.db, me.orgId)).headSeq;
  const get = async (path: string): Promise<number | undefined> => {
    const res = await g.app.handle(new Request(`${BASE}${path}`, { headers: { authorization: `Bearer ${me.token}` } }));
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as unknown;
    const list = Array.isArray(body) ? body : Object.values(body as Record<string, unknown>).find(Array.isArray);
    return Array.isArray(list) ? list.length : undefined;
  };
  const unchecked = uncheckedOf(g);
  let id = 0;
  const call = async () => {
    const sql = `SELECT id, name FROM ${TABLE} WHERE id > ${++id % 5000} ORDER BY id LIMIT 10`;
    const { text } = await callTool(unchecked, me.slug, { apiKey: me.apiKey }, 'query_postgresql_items', { sql });
    if (!text.includes('"result"') || text.includes('"isError":true')) throw new Error(`tools/call: ${text.slice(0, 200)}`);
  };
  const figures: Record<string, number> = { 'grow s': growMs / 1000 };
  // What each read returned (a list page's events, an export's rows): a page that is full at one size and partial at
  // another does different work, and the table says so.
  const returned: Record<string, number> = {};
  /** Times a read (median of REPEATS) and records what it returned. */
  const read = async (name: string, path: string) => {
    let count: number | undefined;
    figures[name] = await median(REPEATS, async () => {
      count = await get(path);
    });
    if (count !== undefined) returned[name] = count;
  };
  // The middle of the org's 90 days, one day long; the cursor in the middle of its chain.
  const mid = Date.now() - (DAYS / 2) * DAY;
  // (--via=calls: every row is recent; the range is the last hour.)
  const range = VIA_CALLS
    ? `from=${new Date(Date.now() - 3_600_000).toISOString()}&until=${new Date().toISOString()}`
    : `from=${new Date(mid).toISOString()}&until=${new Date(mid + DAY).toISOString()}`;
  // --via=calls: the filters' values are the grown rows' own (the API key, the refused DELETE's class and fingerprint).
  const values = new Map<string, string>();
  if (VIA_CALLS) {
    const res = await g.app.handle(new Request(`${BASE}/api/audit?limit=1&outcome=refused`, { headers: { authorization: `Bearer ${me.token}` } }));
    const event = ((await res.json()) as { events: { actor: { type: string; id: string }; details: Record<string, string> }[] }).events[0]!;
    values.set('actor', `actor=${event.actor.type}:${event.actor.id}`);
    values.set('tool', 'tool=query_postgresql_items');
    // A statement the guard refused is tool.called with outcome refused (tool.call_refused: a call refused before it
    // reached its tool, e.g. a quota); the grown rows have only the former.
    values.set('action', 'action=tool.called');
    values.set('reason class', `reason_class=${event.details.reason_class}`);
    values.set('fingerprint', `fingerprint_id=${event.details.fingerprint_id}`);
  }
  for (const [name, preset] of FILTERS) {
    const filter = values.get(name) ?? preset;
    const query = filter.replaceAll('CONNECTOR', me.connectorId).replace('RANGE', range);
    const and = query ? `&${query}` : '';
    for (const [page, cursor] of [
      ['first page', ''],
      ['deep cursor', `&cursor=${Math.floor(head / 2)}`],
    ] as const) {
      await read(`audit list ${name}, ${page}`, `/api/audit?limit=50${and}${cursor}`);
    }
  }
  for (const [key, path] of [
    ['billing/usage', '/api/billing/usage'],
    ['insights, 7 days', '/api/insights?days=7'],
    ['insights, 31 days', '/api/insights?days=31'],
    ['refused fingerprints, 31 days', '/api/insights/fingerprints?days=31'],
    ['export of a day', '/api/audit/export-json?days=1'],
  ] as const) {
    if (VIA_CALLS && key === 'export of a day') continue;
    await read(key, path);
  }
  figures['tools/call'] = await median(50, call);
  // The calls' own rows are sealed first: a verify walks to the head it read at its start.
  await g.deps.audit.drain();
  const verifyStarted = performance.now();
  const report = await verifyChain(g.deps.store.db, me.orgId);
  figures['audit verify (org), s'] = (performance.now() - verifyStarted) / 1000;
  // From the checkpoint the full walk left at the head: the median of REPEATS runs (one run was one sample, and one
  // sample at 5M once read 85 ms against 8 the run before).
  figures['audit verify --incremental, ms'] = await median(REPEATS, async () => {
    const inc = await verifyChain(g.deps.store.db, me.orgId, new Date(), { incremental: true });
    if (!inc.ok) throw new Error(`audit verify --incremental failed at ${size} rows`);
  });
  if (!report.ok) throw new Error(`audit verify failed at ${size} rows: ${JSON.stringify(report.broken)}`);
  results.push({ size, figures, returned });
  console.log(JSON.stringify({ size, rowsInOrg: head, figures, returned }));
  if (KEEP && size === SIZES[SIZES.length - 1]) console.log(`kept: the store database ${g.databaseUrl}, first org ${me.orgId}`);
  else if (!VIA_CALLS) await g.close();
}
if (!KEEP) await shared?.g.close();

const names = Object.keys(results[0]!.figures);
const sizes = results.map((r) => r.size.toLocaleString('en'));
// Ratios: each size against the smallest, and the largest against the one before it (where a page is full at both).
const ratioHeads = results.slice(1).map((r) => `${r.size.toLocaleString('en')} ÷ ${sizes[0]}`);
if (results.length > 2) ratioHeads.push(`${sizes[sizes.length - 1]} ÷ ${sizes[sizes.length - 2]}`);
console.log(`\n| ms (median) | ${sizes.map((s) => `${s} rows`).join(' | ')} | ${ratioHeads.join(' | ')} | returned (${sizes.join(' / ')}) |`);
console.log(`|:--|${results.map(() => '--:').join('|')}|${ratioHeads.map(() => '--:').join('|')}|--:|`);
for (const name of names) {
  const values = results.map((r) => r.figures[name]!);
  const ratios = values.slice(1).map((v) => v / values[0]!);
  if (values.length > 2) ratios.push(values[values.length - 1]! / values[values.length - 2]!);
  const returnedRows = results.map((r) => r.returned[name]);
  const shown = returnedRows.every((n) => n === undefined) ? '' : returnedRows.map((n) => (n === undefined ? '-' : String(n))).join(' / ');
  console.log(
    `| ${name} | ${values.map((v) => (v < 10 ? v.toFixed(2) : v.toFixed(0))).join(' | ')} | ${ratios.map((r) => `${r.toFixed(2)}x`).join(' | ')} | ${shown} |`,
  );
}
await exit.run?.();
process.exit(0);
