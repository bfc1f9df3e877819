/**
 * Statements that join a set of values with a table that grows with the deployment (usage_counters: one row per org
 * and month; webhook_relay_cursors: one per endpoint) must probe the table's key once per value, never scan it. Given
 * the values as one JSON parameter (jsonb_to_recordset), PostgreSQL guesses 100 rows and hashes a scan of the whole
 * table; as arrays (store/db.ts arrayParam) it counts them. Checked on the plans PostgreSQL makes for the very
 * statements the gateway sends, on a store of 20,000 orgs (1,000 of them with 22 months of counters) and 20,000
 * webhook endpoints. (On small tables a scan is the cheaper plan and PostgreSQL rightly takes it: the sizes here are
 * where a guess of 100 rows and a count of 1-5 lead to different plans.)
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql, type SQL } from 'drizzle-orm';
import postgres from 'postgres';
import { grantToolCalls, toolCallsInPeriod } from '../src/limits/quota.ts';
import { arrayParam, openStore, rowsOf, type Store } from '../src/store/db.ts';
import { moveCursorsStatement } from '../src/webhooks/relay-statements.ts';
import { verifies } from './requirements.ts';
import { freshDatabase } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('store-plans.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; its suite is skipped');

describe('arrayParam', () => {
  test('writes an array literal of values of its form, and refuses anything else before a statement is built', () => {
    const id = crypto.randomUUID();
    expect(arrayParam('uuid', [id, id.toUpperCase()])).toBe(`{${id},${id.toUpperCase()}}`);
    expect(arrayParam('date', ['2026-11-01'])).toBe('{2026-11-01}');
    expect(arrayParam('bigint', [0, -3, 2 ** 53 - 1])).toBe(`{0,-3,${2 ** 53 - 1}}`);
    expect(arrayParam('uuid', [])).toBe('{}');
    for (const bad of ['x}", "y', `${id},${id}`, `{${id}}`, ` ${id}`, `${id}\n`]) expect(() => arrayParam('uuid', [bad])).toThrow('is not a uuid');
    for (const bad of ['2026-11-01,2026-12-01', '2026-11-01}', 'NULL']) expect(() => arrayParam('date', [bad])).toThrow('is not a date');
    for (const bad of [1.5, NaN, Infinity, 2 ** 53, '7']) expect(() => arrayParam('bigint', [bad])).toThrow('is not a safe integer');
  });
});

describe.skipIf(!hasPg)('set-with-table statements on a large store (PostgreSQL)', () => {
  let store: Store;
  let fresh: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    fresh = await freshDatabase('tg_plans');
    store = await openStore({ databaseUrl: fresh.url, poolSize: 2 });
    await store.db.execute(
      sql.raw(`INSERT INTO orgs (slug, name, plan, subscription_status, provision_status)
      SELECT 'plan-org-' || i, 'Org ' || i, 'growth', 'active', 'provisioned' FROM generate_series(1, 20000) i`),
    );
    await store.db.execute(
      sql.raw(`INSERT INTO usage_counters (org_id, period_start, tool_calls)
      SELECT o.id, d::date, 7 FROM (SELECT id FROM orgs ORDER BY slug LIMIT 1000) o, generate_series('2025-01-01'::date, '2026-10-01'::date, '1 month') d`),
    );
    // Blocks of quota out: four holders per counter (calls 0, live for a day, so the statements under test keep them).
    await store.db.execute(
      sql.raw(`INSERT INTO quota_leases (id, org_id, period_start, calls, expires_at)
      SELECT gen_random_uuid(), u.org_id, u.period_start, 0, now() + interval '1 day' FROM usage_counters u, generate_series(1, 4)`),
    );
    await store.db.execute(
      sql.raw(`INSERT INTO webhooks (org_id, url, events, secret_sealed)
      SELECT id, 'https://hooks.example.com/' || slug, ARRAY['tool.called'], 'sealed' FROM orgs`),
    );
    await store.db.execute(sql.raw(`INSERT INTO webhook_relay_cursors (webhook_id, org_id, after_seq) SELECT id, org_id, 0 FROM webhooks`));
    await store.db.execute(sql`ANALYZE`);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  }, 30_000);

  /** The nodes of the plan PostgreSQL makes for a statement that read the table (none means it was not read). */
  async function tableNodes(statement: SQL, table: string): Promise<Record<string, unknown>[]> {
    const [row] = rowsOf<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(await store.db.execute(sql`EXPLAIN (FORMAT JSON) ${statement}`));
    const all = (node: Record<string, unknown>): Record<string, unknown>[] => [
      node,
      ...((node.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(all),
    ];
    return all(row!['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === table);
  }

  test('the lease statement reaches usage_counters and quota_leases by their keys, for one ask and for five', async () => {
    verifies('LIMIT-QUOTA-BATCHED');
    const orgs = rowsOf<{ id: string }>(await store.db.execute(sql`SELECT id FROM orgs ORDER BY slug LIMIT 5`)).map((r) => r.id);
    // The statement is a function (migration 28), whose inner plans EXPLAIN does not show: the scans it made are read
    // from the transaction's own table statistics instead, then the transaction is rolled back.
    const pg = postgres(fresh.url, { max: 1, onnotice: () => {} });
    try {
      for (const asks of [[orgs[0]!], orgs]) {
        const ints = (n: number) =>
          arrayParam(
            'bigint',
            asks.map(() => n),
          );
        let scans: { relname: string; seq: number; idx: number }[] = [];
        await pg
          .begin(async (tx) => {
            await tx`SELECT * FROM quota_lease(${arrayParam('uuid', asks)}::uuid[], ${arrayParam(
              'date',
              asks.map(() => '2026-10-01'),
            )}::date[],
              ${arrayParam(
                'uuid',
                asks.map(() => crypto.randomUUID()),
              )}::uuid[], ${ints(0)}::bigint[], ${ints(0)}::bigint[], ${ints(3)}::bigint[],
              ${ints(100)}::bigint[], ${ints(0)}::bigint[], ${ints(50_000)}::bigint[], 30000)`;
            scans = await tx`SELECT relname, seq_scan::int AS seq, coalesce(idx_scan, 0)::int AS idx FROM pg_stat_xact_user_tables
              WHERE relname IN ('usage_counters', 'quota_leases') ORDER BY relname`;
            throw new Error('rolled back');
          })
          .catch((err: Error) => expect(err.message).toBe('rolled back'));
        expect(scans.map((r) => r.relname)).toEqual(['quota_leases', 'usage_counters']);
        for (const table of scans) expect(table.seq).toBe(0);
        expect(scans.find((r) => r.relname === 'usage_counters')!.idx).toBeGreaterThanOrEqual(asks.length);
      }
    } finally {
      await pg.end();
    }
    // And it grants: 3 more calls on a counter at 7.
    const granted = await grantToolCalls(store.db, [{ orgId: orgs[0]!, period: '2026-10-01', calls: 3, quota: 50_000 }]);
    expect([...granted.values()]).toEqual([3]);
    expect(await toolCallsInPeriod(store.db, orgs[0]!, new Date('2026-10-15T00:00:00Z'))).toBe(10);
  });

  test('an ask whose values are not of their form is refused and writes nothing', async () => {
    const total = async () => rowsOf<{ n: number }>(await store.db.execute(sql`SELECT sum(tool_calls)::int AS n FROM usage_counters`))[0]!.n;
    const before = await total();
    await expect(grantToolCalls(store.db, [{ orgId: 'x}", "y', period: '2026-10-01', calls: 1, quota: 5 }])).rejects.toThrow('is not a uuid');
    await expect(grantToolCalls(store.db, [{ orgId: crypto.randomUUID(), period: '2026-10-01,2026-11-01', calls: 1, quota: 5 }])).rejects.toThrow(
      'is not a date',
    );
    await expect(grantToolCalls(store.db, [{ orgId: crypto.randomUUID(), period: '2026-10-01', calls: 1.5, quota: 5 }])).rejects.toThrow(
      'is not a safe integer',
    );
    expect(await total()).toBe(before);
  });

  test('moving relay cursors probes webhook_relay_cursors by its key, for one cursor and for five', async () => {
    verifies('WEBHOOK-TOOL-CALLED');
    const cursors = rowsOf<{ webhook_id: string }>(await store.db.execute(sql`SELECT webhook_id FROM webhook_relay_cursors ORDER BY webhook_id LIMIT 5`));
    for (const moved of [cursors.slice(0, 1), cursors]) {
      const statement = moveCursorsStatement(moved.map((c, i) => ({ webhook_id: c.webhook_id, after_seq: 40 + i })));
      const nodes = await tableNodes(statement, 'webhook_relay_cursors');
      expect(nodes.length).toBeGreaterThan(0);
      for (const node of nodes) expect(String(node['Node Type'])).not.toBe('Seq Scan');
      await store.db.execute(statement);
    }
    const after = rowsOf<{ after_seq: string }>(
      await store.db.execute(
        sql`SELECT after_seq FROM webhook_relay_cursors WHERE webhook_id IN (${sql.join(
          cursors.map((c) => sql`${c.webhook_id}::uuid`),
          sql`, `,
        )}) ORDER BY webhook_id`,
      ),
    );
    expect(after.map((r) => Number(r.after_seq))).toEqual([40, 41, 42, 43, 44]);
  });
});
