/**
 * The monthly quota by group commit (issue 14; now inside src/limits/quota-lease.ts): the calls of one event-loop turn
 * that find no block of quota in hand are counted by one statement for every org in it, granted exactly up to the quota, in arrival order; a failing
 * statement fails its whole batch and counts nothing; two instances racing across the limit never overshoot it.
 * Real stores: PGlite and PostgreSQL for the statement, PostgreSQL (two connection pools) for the races.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { periodStart } from '../src/limits/plans.ts';
import { toolCallsInPeriod } from '../src/limits/quota.ts';
import { UsageMeter } from '../src/limits/usage.ts';
import { insertOrg } from '../src/orgs/repository.ts';
import { openStore, rowsOf, type Db, type Store } from '../src/store/db.ts';
import { verifies } from './requirements.ts';
import { freshDatabase } from './support/gateway.ts';
import { counted } from './support/counted-db.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');

let orgCount = 0;
async function newOrg(db: Db): Promise<string> {
  const org = await insertOrg(db, {
    slug: `quota-${Date.now().toString(36)}-${orgCount++}`,
    name: 'Quota org',
    plan: 'growth',
    trialDays: 0,
    burstLimitPerSecond: null,
  });
  return org.id;
}

const setCount = (db: Db, orgId: string, period: string, calls: number) =>
  db.execute(sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, ${calls})
    ON CONFLICT (org_id, period_start) DO UPDATE SET tool_calls = ${calls}`);

/** Waits until a statement of this database waits for a lock (the batch, on another transaction's uncommitted row). */
async function waitForLockWait(watcher: postgres.Sql): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [row] = await watcher`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    if (row!.n > 0) return;
    if (Date.now() > deadline) throw new Error('the batch never waited on the uncommitted row');
    await Bun.sleep(20);
  }
}

const KINDS = hasPg ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

describe.each(KINDS)('quota batches on %s', (kind) => {
  let store: Store;
  let fresh: { url: string; drop: () => Promise<void> } | null = null;
  beforeAll(async () => {
    if (kind === 'postgres') {
      fresh = await freshDatabase('tg_quota');
      store = await openStore({ databaseUrl: fresh.url, poolSize: 4 });
    } else {
      store = await openStore({ dataDir: null });
    }
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await fresh?.drop();
  }, 30_000);

  test('N calls in one turn against a quota Q < N: one statement, the first Q granted, the counter ends at Q', async () => {
    verifies('LIMIT-QUOTA-NO-OVERSHOOT', 'LIMIT-QUOTA-BATCHED');
    const orgId = await newOrg(store.db);
    const { db, statements } = counted(store.db);
    const meter = new UsageMeter(db);
    const answers = await Promise.all(Array.from({ length: 30 }, () => meter.consume(orgId, 12)));
    expect(answers).toEqual([...Array(12).fill(true), ...Array(18).fill(false)]);
    expect(statements()).toBe(1);
    expect(meter.quotaStats()).toEqual({ batches: 1, calls: 30, fromBlock: 0 });
    expect(await toolCallsInPeriod(store.db, orgId)).toBe(12);
    // The next turn finds the quota used up: nothing more is counted.
    expect(await Promise.all([meter.consume(orgId, 12), meter.consume(orgId, 12)])).toEqual([false, false]);
    expect(await toolCallsInPeriod(store.db, orgId)).toBe(12);
    await meter.close();
  });

  test('one statement for several orgs and both sides of a period boundary, each counter on its own', async () => {
    verifies('LIMIT-QUOTA-ROLLOVER', 'LIMIT-QUOTA-BATCHED');
    const [a, b] = [await newOrg(store.db), await newOrg(store.db)];
    await setCount(store.db, a, '2026-01-01', 4);
    let now = new Date('2026-01-31T23:59:59.999Z');
    const { db, statements } = counted(store.db);
    const meter = new UsageMeter(db, () => now);
    const january = Array.from({ length: 3 }, () => meter.consume(a, 5));
    now = new Date('2026-02-01T00:00:00.000Z');
    const february = Array.from({ length: 2 }, () => meter.consume(a, 5));
    const other = Array.from({ length: 7 }, () => meter.consume(b, 5));
    expect(await Promise.all(january)).toEqual([true, false, false]);
    expect(await Promise.all(february)).toEqual([true, true]);
    expect(await Promise.all(other)).toEqual([true, true, true, true, true, false, false]);
    expect(statements()).toBe(1);
    expect(await toolCallsInPeriod(store.db, a, new Date('2026-01-15T00:00:00Z'))).toBe(5);
    expect(await toolCallsInPeriod(store.db, a, new Date('2026-02-15T00:00:00Z'))).toBe(2);
    expect(await toolCallsInPeriod(store.db, b, new Date('2026-02-15T00:00:00Z'))).toBe(5);
    await meter.close();
  });

  test('a used-up quota, or a count above it (after a downgrade): refused, and the row is not written', async () => {
    const orgId = await newOrg(store.db);
    await setCount(store.db, orgId, periodStart(new Date()), 30);
    // xmin names the transaction that wrote the row's current version: unchanged means not rewritten.
    const version = async () => rowsOf<{ v: string }>(await store.db.execute(sql`SELECT xmin::text AS v FROM usage_counters WHERE org_id = ${orgId}`))[0]!.v;
    const written = await version();
    const meter = new UsageMeter(store.db);
    expect(await Promise.all([meter.consume(orgId, 20), meter.consume(orgId, 20)])).toEqual([false, false]);
    expect(await Promise.all([meter.consume(orgId, 30), meter.consume(orgId, 30)])).toEqual([false, false]);
    expect(meter.quotaStats()).toEqual({ batches: 2, calls: 4, fromBlock: 0 });
    expect(await version()).toBe(written);
    expect(await toolCallsInPeriod(store.db, orgId)).toBe(30);
    await meter.close();
  });

  test('a failing statement rejects every call of its batch and counts none of them', async () => {
    const [a, b] = [await newOrg(store.db), await newOrg(store.db)];
    const period = periodStart(new Date());
    await setCount(store.db, a, period, 3);
    // A real store error: the update of an existing counter raises. Org b's row would be a new insert in the same
    // statement: it must not be left behind.
    await store.db.execute(sql.raw(`CREATE FUNCTION quota_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'store down'; END $$`));
    await store.db.execute(sql.raw('CREATE TRIGGER quota_test_fail BEFORE UPDATE ON usage_counters FOR EACH ROW EXECUTE FUNCTION quota_test_fail()'));
    const meter = new UsageMeter(store.db);
    try {
      const answers = await Promise.allSettled([meter.consume(a, 10), meter.consume(b, 10), meter.consume(b, 10)]);
      expect(answers.map((x) => x.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(meter.quotaStats().batches).toBe(1);
      expect(await toolCallsInPeriod(store.db, a)).toBe(3);
      expect(await toolCallsInPeriod(store.db, b)).toBe(0);
    } finally {
      await store.db.execute(sql.raw('DROP TRIGGER quota_test_fail ON usage_counters'));
      await store.db.execute(sql.raw('DROP FUNCTION quota_test_fail()'));
    }
    // The store is back: the next batch counts again.
    expect(await Promise.all([meter.consume(a, 10), meter.consume(b, 10)])).toEqual([true, true]);
    expect(await toolCallsInPeriod(store.db, a)).toBe(4);
    expect(await toolCallsInPeriod(store.db, b)).toBe(1);
    await meter.close();
  });
});

describe.skipIf(!hasPg)('quota batches of two instances on one PostgreSQL store', () => {
  let fresh: { url: string; drop: () => Promise<void> };
  let one: Store;
  let two: Store;
  beforeAll(async () => {
    fresh = await freshDatabase('tg_quota_race');
    one = await openStore({ databaseUrl: fresh.url, poolSize: 4 });
    two = await openStore({ databaseUrl: fresh.url, poolSize: 4 });
  }, 60_000);
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await fresh?.drop();
  }, 30_000);

  test('two instances racing across the limit, over many turns: exactly the quota is granted, never more', async () => {
    verifies('LIMIT-QUOTA-NO-OVERSHOOT');
    const quota = 100;
    for (let round = 0; round < 5; round++) {
      // A fresh org each round: the first batches of both instances race to insert its counter row.
      const orgId = await newOrg(one.db);
      const meters = [new UsageMeter(one.db), new UsageMeter(two.db)];
      const answers = await Promise.all(
        Array.from({ length: 8 }, async (_, turn) => {
          await new Promise((resolve) => setTimeout(resolve, turn));
          return Promise.all(Array.from({ length: 20 }, (_, i) => meters[(i + turn) % 2]!.consume(orgId, quota)));
        }),
      );
      expect(answers.flat().filter(Boolean).length).toBe(quota);
      expect(await toolCallsInPeriod(one.db, orgId)).toBe(quota);
      const stats = meters.map((m) => m.quotaStats());
      expect(stats[0]!.calls + stats[1]!.calls).toBe(160);
      expect(stats[0]!.batches + stats[1]!.batches).toBeLessThan(160);
      await Promise.all(meters.map((m) => m.close()));
    }
  });

  test('a counter row another instance inserts while the statement runs: the statement waits and grants on it exactly', async () => {
    verifies('LIMIT-QUOTA-NO-OVERSHOOT');
    const orgId = await newOrg(one.db);
    const period = periodStart(new Date());
    // The other instance's first insert of the row, not committed yet: the statement's INSERT waits on it, finds it
    // taken (ON CONFLICT DO NOTHING), and its next step reads the row as committed (a new snapshot per step of the
    // store function, migration 28): one statement, where the CTE before it had to be run again.
    const other = postgres(fresh.url, { max: 1, onnotice: () => {} });
    const watcher = postgres(fresh.url, { max: 1, onnotice: () => {} });
    const { db, statements } = counted(two.db);
    const meter = new UsageMeter(db);
    let answers: Promise<boolean[]> | undefined;
    await other.begin(async (tx) => {
      await tx`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${orgId}, ${period}, 7)`;
      answers = Promise.all(Array.from({ length: 5 }, () => meter.consume(orgId, 10)));
      await waitForLockWait(watcher);
    });
    await other.end();
    await watcher.end();
    expect(await answers!).toEqual([true, true, true, false, false]);
    expect(statements()).toBe(1);
    expect(await toolCallsInPeriod(one.db, orgId)).toBe(10);
    await meter.close();
  });
  test('a counter that cannot be written after waiting on a concurrent insert: the statement fails whole, nothing of it is counted', async () => {
    const [a, b] = [await newOrg(one.db), await newOrg(one.db)];
    const period = periodStart(new Date());
    await setCount(one.db, b, period, 0);
    // Org a's counter cannot be updated (a real store error); the batch first meets a's row as an uncommitted insert.
    await one.db.execute(
      sql.raw(
        `CREATE FUNCTION quota_test_fail_a() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.org_id = '${a}' THEN RAISE EXCEPTION 'store down'; END IF; RETURN NEW; END $$`,
      ),
    );
    await one.db.execute(sql.raw('CREATE TRIGGER quota_test_fail_a BEFORE UPDATE ON usage_counters FOR EACH ROW EXECUTE FUNCTION quota_test_fail_a()'));
    const other = postgres(fresh.url, { max: 1, onnotice: () => {} });
    const watcher = postgres(fresh.url, { max: 1, onnotice: () => {} });
    const { db, statements } = counted(two.db);
    const meter = new UsageMeter(db);
    let answers: Promise<PromiseSettledResult<boolean>[]> | undefined;
    try {
      await other.begin(async (tx) => {
        await tx`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${a}, ${period}, 1)`;
        answers = Promise.allSettled([meter.consume(a, 10), meter.consume(b, 10), meter.consume(b, 10)]);
        await waitForLockWait(watcher);
      });
      const settled = await answers!;
      // One atomic statement (no re-run for the waited row any more): org a's failure fails the batch, b is not counted.
      expect(settled.map((x) => x.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(statements()).toBe(1);
      expect(await toolCallsInPeriod(one.db, a)).toBe(1);
      expect(await toolCallsInPeriod(one.db, b)).toBe(0);
    } finally {
      await other.end();
      await watcher.end();
      await one.db.execute(sql.raw('DROP TRIGGER quota_test_fail_a ON usage_counters'));
      await one.db.execute(sql.raw('DROP FUNCTION quota_test_fail_a()'));
      await meter.close();
    }
  });
});
