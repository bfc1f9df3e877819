/**
 * An instance that takes a block of monthly quota and then dies (test/quota-lease.test.ts): opens the store at argv[2],
 * counts argv[4] calls of org argv[3] at once under quota argv[5] (the lease's life: argv[6] ms), prints what its
 * UsageMeter did as one JSON line and waits to be killed (SIGKILL: no stop, no return of the block).
 */
import { UsageMeter } from '../../src/limits/usage.ts';
import { openStore } from '../../src/store/db.ts';

const [databaseUrl, orgId, calls, quota, ttlMs] = process.argv.slice(2) as [string, string, string, string, string];
const store = await openStore({ databaseUrl, poolSize: 2 });
// Nothing returns the block on its own while the test waits: only the expiry in the store can bring it back.
const meter = new UsageMeter(store.db, undefined, { ttlMs: Number(ttlMs), idleReturnMs: 3_600_000, settleMs: 3_600_000 });
const units = await Promise.all(Array.from({ length: Number(calls) }, () => meter.reserve(orgId, Number(quota))));
console.log(JSON.stringify({ ran: units.filter(Boolean).length, ...meter.quotaStats() }));
setInterval(() => {}, 60_000);
