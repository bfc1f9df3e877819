/**
 * GET /api/audit on a large audit log (issue 41 item 2): the first page of each filter the contract offers, and a
 * deep cursor page of each, timed through the app (app.handle: auth, validation, the list query, the genuine-row
 * check), on a PostgreSQL store of its own (a fresh database, dropped at the end).
 *
 * Seeding: one INSERT … SELECT generate_series writes the rows in the form the sealer leaves them (seq, prev_hash,
 * hash set; created_at increasing with seq over 30 days, to the millisecond as the gateway writes it), with the
 * actions, outcomes, actors and details a busy org's tools/call traffic has (see `seed` for the mix). The chain's
 * mac_from_seq is set past them, the position below which the list accepts a row without a MAC (rows written before
 * MACs existed, audit/repository.ts genuineRows): a documented equivalent of the write path, which would take many
 * minutes for a million rows on this shared machine. The hashes are not a verifiable chain (`audit verify` is not run).
 *
 * Run: node_modules/.bin/bun bench/audit-filters.ts [rows=1000000] [repeats=7]   (BENCH_KEEP=1 keeps the database)
 */
import { loadavg } from 'node:os';
import postgres from 'postgres';
import { listAudit, type AuditFilter } from '../src/audit/repository.ts';
import { freshDatabase, onboard, startTestGateway, tokenFor } from '../test/support/gateway.ts';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const REPEATS = Number(process.argv[3] ?? 7);
const PAGE = 50;

// BENCH_KEEP=1 keeps the database (its URL is printed) to look at plans; it is dropped otherwise.
const database = await freshDatabase('tg_bench_audit');
const gateway = await startTestGateway('postgres', {}, database.url);
const sqlc = postgres(gateway.databaseUrl!, { max: 1, onnotice: () => {} });
try {
  const org = await onboard(gateway);
  const token = await tokenFor(gateway, org.clientId, org.clientSecret);
  await gateway.deps.audit.drain();

  const started = performance.now();
  // The seeded rows come after the org's own (onboarding) rows in its chain.
  const [chain] = await sqlc<{ head: string }[]>`SELECT head_seq::text AS head FROM audit_chains WHERE org_id = ${org.orgId}`;
  const base = Number(chain!.head);
  const t0 = Date.now() - 30 * 86_400_000;
  // The secondary indexes are dropped for the bulk insert and rebuilt after it with their own definitions (the
  // migrations' indexes, exactly): faster than maintaining nine indexes row by row, same result.
  const indexes = await sqlc<{ name: string; def: string }[]>`SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS def
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class c ON c.oid = x.indrelid
    WHERE c.relname = 'audit_events' AND NOT x.indisprimary`;
  for (const index of indexes) await sqlc.unsafe(`DROP INDEX ${index.name}`);
  await sqlc.unsafe(
    `INSERT INTO audit_events (id, org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, seq, prev_hash, hash)
     SELECT gen_random_uuid(), $1::uuid,
       to_timestamp(floor(($2::bigint + i::bigint * $3::bigint / $4::bigint)) / 1000.0),
       a.action, a.actor_type, a.actor_id, 'tool', 'tool_' || ((i / 7) % 200), a.outcome,
       jsonb_build_object('tool_name', 'tool_' || ((i / 7) % 200), 'connector_id', c.connector_id, 'connector_type', 'postgresql',
         'outcome', a.outcome, 'duration_ms', i % 97, 'counted', a.outcome IN ('success', 'error'), 'arguments_sha256', md5(i::text))
       || CASE WHEN a.outcome = 'refused' THEN jsonb_build_object(
            'reason_class', (ARRAY['write','ddl','multiple_statements','function_not_allowed','other_table','disabled_table','hidden_column',
              'parse_error','too_long','statement_not_allowed','row_lock','policy','invalid_arguments','not_allowed'])[1 + (i / 10) % 14],
            'reason', 'refused', 'fingerprint_id', substr(md5('fp' || ((i / 10) % 1000)), 1, 16), 'fingerprint', 'select ? from t' || ((i / 10) % 1000))
          ELSE '{}'::jsonb END,
       $5::bigint + i, md5((i - 1)::text), md5(i::text)
     FROM generate_series(1, $4::bigint) AS i,
       LATERAL (SELECT
         CASE WHEN i % 20 = 0 THEN 'tool.call_refused' WHEN i % 10 = 1 THEN 'connector.updated' ELSE 'tool.called' END AS action,
         CASE WHEN i % 20 = 0 THEN 'denied' WHEN i % 10 = 1 THEN 'success' WHEN i % 10 = 3 THEN 'refused' WHEN i % 25 = 2 THEN 'error'
           WHEN i % 50 = 7 THEN 'held' ELSE 'success' END AS outcome,
         (ARRAY['api_key','oauth_client','user'])[1 + i % 3] AS actor_type,
         CASE i % 3 WHEN 0 THEN '00000000-0000-4000-8000-' || lpad((i % 50)::text, 12, '0') WHEN 1 THEN 'client-' || (i % 20)
           ELSE 'member' || (i % 30) || '@example.com' END AS actor_id) AS a,
       LATERAL (SELECT '00000000-0000-4000-9000-' || lpad(((i / 3) % 20)::text, 12, '0') AS connector_id) AS c`,
    [org.orgId, t0, 30 * 86_400_000, ROWS, base],
  );
  for (const index of indexes) await sqlc.unsafe(index.def);
  const last = base + ROWS;
  await sqlc`UPDATE audit_chains SET head_seq = ${last}, head_hash = md5(${ROWS}::text), mac_from_seq = ${last} WHERE org_id = ${org.orgId}`;
  await sqlc`ANALYZE audit_events`;
  console.log(`seeded ${ROWS.toLocaleString('en')} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const mid = new Date(t0 + 15 * 86_400_000);
  const dayAfter = new Date(mid.getTime() + 86_400_000);
  const fingerprint = (await sqlc<{ f: string }[]>`SELECT substr(md5('fp123'), 1, 16) AS f`)[0]!.f;
  const apiKey = '00000000-0000-4000-8000-000000000012';
  const connector = '00000000-0000-4000-9000-000000000003';
  // Each filter as the query string and as the AuditFilter the handler makes of it (to time the store's query alone).
  const filters: [string, string, AuditFilter][] = [
    ['none', '', {}],
    ['outcome=refused', 'outcome=refused', { outcomes: ['refused'] }],
    ['outcome=refused,denied', 'outcome=refused%2Cdenied', { outcomes: ['refused', 'denied'] }],
    ['action=tool.call_refused', 'action=tool.call_refused', { action: 'tool.call_refused' }],
    ['actor (API key)', `actor=api_key:${apiKey}`, { actor: { type: 'api_key', id: apiKey } }],
    ['actor (OAuth client)', 'actor=oauth_client:client-7', { actor: { type: 'oauth_client', id: 'client-7' } }],
    ['actor (member)', `actor=user:${encodeURIComponent('member5@example.com')}`, { actor: { type: 'user', id: 'member5@example.com' } }],
    ['tool', 'tool=tool_17', { tool: 'tool_17' }],
    ['connector_id', `connector_id=${connector}`, { connectorId: connector }],
    ['reason_class', 'reason_class=other_table', { reasonClass: 'other_table' }],
    ['fingerprint_id', `fingerprint_id=${fingerprint}`, { fingerprintId: fingerprint }],
    ['time range (one day)', `from=${mid.toISOString()}&until=${dayAfter.toISOString()}`, { since: mid, until: dayAfter }],
    ['tool + outcome=error', 'tool=tool_17&outcome=error', { tool: 'tool_17', outcomes: ['error'] }],
  ];

  const request = (path: string) => gateway.app.handle(new Request(`http://gateway.test${path}`, { headers: { authorization: `Bearer ${token}` } }));
  const get = async (query: string) => {
    const t = performance.now();
    const res = await request(`/api/audit?limit=${PAGE}${query ? `&${query}` : ''}`);
    const body = (await res.json()) as { events: { seq: number }[]; next_cursor: string | null };
    if (res.status !== 200) throw new Error(`${query}: ${res.status} ${JSON.stringify(body)}`);
    return performance.now() - t;
  };
  const store = async (filter: AuditFilter, cursor: number | null) => {
    const t = performance.now();
    await listAudit(gateway.deps.store.db, org.orgId, filter, PAGE + 1, cursor);
    return performance.now() - t;
  };
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const f = (ms: number | undefined) => (ms === undefined ? '—' : `${ms.toFixed(1)} ms`);

  // The request path's own cost at this moment (auth, routing, a one-row read): what every page pays besides its query.
  const floor: number[] = [];
  for (let i = 0; i < REPEATS * 3; i++) {
    const t = performance.now();
    await (await request('/api/org')).json();
    floor.push(performance.now() - t);
  }
  console.log(
    `GET /api/org (the request path's floor, same moment): median ${f(median(floor))}; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    `| filter | matching rows | store query: first page | store query: deep page | GET /api/audit: first page | GET /api/audit: deep page | cursor depth |`,
  );
  console.log('|:--|--:|--:|--:|--:|--:|--:|');
  for (const [name, query, filter] of filters) {
    // The number of matching rows (up to 200,000) and a cursor 90 % of the way down them (setup, not timed).
    let walked = 0;
    let cursor: string | null = null;
    const pages: string[] = [];
    for (;;) {
      const res = await request(`/api/audit?limit=200${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`);
      const body = (await res.json()) as { events: unknown[]; next_cursor: string | null };
      walked += body.events.length;
      cursor = body.next_cursor;
      if (!cursor || name === 'none' || walked >= 200_000) break;
      pages.push(cursor);
    }
    const deep = name === 'none' ? String(last - Math.floor(ROWS * 0.9)) : (pages[Math.floor(pages.length * 0.9)] ?? '');
    const depth = name === 'none' ? Math.floor(ROWS * 0.9) : (Math.floor(pages.length * 0.9) + 1) * 200;
    const times = { storeFirst: [] as number[], storeDeep: [] as number[], first: [] as number[], deep: [] as number[] };
    await get(query); // warm
    for (let i = 0; i < REPEATS; i++) {
      times.storeFirst.push(await store(filter, null));
      times.first.push(await get(query));
      if (deep) {
        times.storeDeep.push(await store(filter, Number(deep)));
        times.deep.push(await get(`${query ? `${query}&` : ''}cursor=${deep}`));
      }
    }
    const count = name === 'none' ? ROWS.toLocaleString('en') : `${walked >= 200_000 ? '≥ ' : ''}${walked.toLocaleString('en')}`;
    const m = (v: number[]) => (v.length ? median(v) : undefined);
    console.log(
      `| ${name} | ${count} | ${f(m(times.storeFirst))} | ${f(m(times.storeDeep))} | ${f(m(times.first))} | ${f(m(times.deep))} | ${deep ? depth.toLocaleString('en') : '—'} |`,
    );
  }
} finally {
  await sqlc.end();
  await gateway.close();
  if (process.env.BENCH_KEEP === '1') console.log(`kept ${database.url}`);
  else await database.drop();
}
