/**
 * Quota statements and store writes per 1,000 calls (issue 42, docs/decisions/0393-quota-by-lease.md): the monthly
 * quota by lease against the group commit alone (the same build with blocks turned off: every call is counted by the
 * statement of its batch, one statement per batch, as before leases). A fresh PostgreSQL database; `callers` callers
 * per instance each loop on reserve -> a pause of `work-ms` (the call's own work) -> next, for `calls` calls of one
 * growth org; `instances` meters on their own pools share the org. Rounds interleave the two modes (A/B), so a busy
 * machine slows both alike. Per mode: statements per 1,000 calls (counted by the meters), rows written in
 * usage_counters and quota_leases per 1,000 calls (the store's own table statistics), calls/s and process CPU per call.
 *
 *   bun bench/quota-writes.ts [--calls=20000] [--callers=32] [--instances=2] [--work-ms=1] [--rounds=3]
 */
import postgres from 'postgres';
import { UsageMeter } from '../src/limits/usage.ts';
import { insertOrg } from '../src/orgs/repository.ts';
import { openStore, type Store } from '../src/store/db.ts';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const CALLS = Number(arg('calls') ?? 20_000);
const CALLERS = Number(arg('callers') ?? 32);
const INSTANCES = Number(arg('instances') ?? 2);
const WORK_MS = Number(arg('work-ms') ?? 1);
const ROUNDS = Number(arg('rounds') ?? 3);
const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const QUOTA = 50_000;

type Mode = 'batch' | 'lease';

interface Figures {
  statements: number;
  rows: number;
  callsPerSecond: number;
  cpuMicros: number;
}

/**
 * Rows inserted, updated and deleted in the quota tables, as the store counts them. A backend reports its counts when
 * it ends (an idle one may hold them for 10 s), so each round's stores are closed before this is read.
 */
async function rowsWritten(admin: postgres.Sql): Promise<number> {
  await Bun.sleep(300);
  const [row] = await admin`SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int AS n FROM pg_stat_user_tables
    WHERE relname IN ('usage_counters', 'quota_leases')`;
  return row!.n as number;
}

async function round(mode: Mode, url: string, admin: postgres.Sql): Promise<Figures> {
  const stores: Store[] = [];
  for (let i = 0; i < INSTANCES; i++) stores.push(await openStore({ databaseUrl: url, poolSize: 4 }));
  const org = await insertOrg(stores[0]!.db, {
    slug: `bench-${mode}-${Date.now().toString(36)}`,
    name: 'Bench',
    plan: 'growth',
    trialDays: 0,
    burstLimitPerSecond: null,
  });
  const meters = stores.map((s) => new UsageMeter(s.db, undefined, mode === 'batch' ? { minBlock: Number.POSITIVE_INFINITY } : {}));
  const rowsBefore = await rowsWritten(admin);
  let left = CALLS;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const caller = async (meter: UsageMeter) => {
    while (left > 0) {
      left -= 1;
      if (!(await meter.reserve(org.id, QUOTA))) throw new Error('quota refused a call: the bench org ran out');
      await Bun.sleep(WORK_MS);
    }
  };
  await Promise.all(meters.flatMap((meter) => Array.from({ length: CALLERS }, () => caller(meter))));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const statements = meters.reduce((n, m) => n + m.quotaStats().batches, 0);
  await Promise.all(meters.map((m) => m.close()));
  for (const s of stores) await s.close();
  const rows = (await rowsWritten(admin)) - rowsBefore;
  return {
    statements: (statements * 1000) / CALLS,
    rows: (rows * 1000) / CALLS,
    callsPerSecond: CALLS / seconds,
    cpuMicros: (used.user + used.system) / CALLS,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const name = `tg_quota_writes_${Date.now().toString(36)}`;
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const inDb = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    const results: Record<Mode, Figures[]> = { batch: [], lease: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of (r % 2 ? ['lease', 'batch'] : ['batch', 'lease']) as Mode[]) results[mode].push(await round(mode, url.toString(), inDb));
    }
    console.log(
      `quota-writes: ${CALLS} calls, ${INSTANCES} instances x ${CALLERS} callers, ${WORK_MS} ms of work per call, median of ${ROUNDS} interleaved rounds`,
    );
    console.log('| mode | statements / 1,000 calls | rows written / 1,000 calls | calls/s | process CPU µs / call |');
    console.log('|:--|--:|--:|--:|--:|');
    for (const mode of ['batch', 'lease'] as Mode[]) {
      const f = results[mode];
      const m = (pick: (x: Figures) => number, digits = 1) => median(f.map(pick)).toFixed(digits);
      console.log(
        `| ${mode === 'batch' ? 'before: a statement per batch' : 'after: a statement per block'} | ${m((x) => x.statements)} | ${m((x) => x.rows)} | ${m((x) => x.callsPerSecond, 0)} | ${m((x) => x.cpuMicros)} |`,
      );
    }
  } finally {
    await inDb.end();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
