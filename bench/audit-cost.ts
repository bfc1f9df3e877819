/**
 * The audit row's gateway CPU by part (issue 14, round two): per row, in this process, on a fresh PostgreSQL store
 * (or --store=pglite): building and writing a group-commit INSERT of --batch rows (insertUnsealed, awaited one batch
 * at a time as the recorder does), then sealing them into the chain from memory (sealFromMemory, 2,000 rows per
 * transaction, as the recorder does) or by reading them back (sealPending, the fallback), and the pieces of the
 * sealer alone (rowHash of a row). CPU of this process only (user + system); the database's own work is not counted.
 * PostgreSQL CPU: of the store database's backends, read from /proc (PostgreSQL on this machine; 10 ms ticks).
 * The last column is the longest the event loop went without a turn during the part, in CPU ms of this process.
 *
 *   bun bench/audit-cost.ts [--rows=20000] [--batch=32] [--seal=2000] [--store=pglite] [--recorder[=ROUNDS]]
 *   (--recorder: instead, the whole recorder under --callers=64 concurrent tool calls, rows written unsealed and
 *   sealed after against rows sealed in their INSERT (issue 42, decision 0341), in interleaved rounds; medians;
 *   with --rollups, rows sealed in their INSERT with the roll-up trigger on against off: the roll-ups' share;
 *   --rollup-fn=FILE adds a way with another audit_rollup_apply, read from FILE; --rollup-setup=FILE runs FILE's
 *   statements once first, for the functions it calls; --real-keys: every row of one connector, its duration varying
 *   0.5-30 ms in 0.1 ms steps, as a tool's calls have them, instead of a new connector per row, which makes every
 *   roll-up key new: the worst case)
 *   (--seal: rows per sealFromMemory transaction; the recorder seals what is pending, up to 2,000, so under a steady
 *   load each seal holds one or two batches: --seal=40 is closer to a tools/call run than the default)
 */
import { insertUnsealed, type AuditInput } from '../src/audit/repository.ts';
import { sealFromMemory, sealPending, type SealableRow } from '../src/audit/seal.ts';
import { sql } from 'drizzle-orm';
import { rowHash, rowTail } from '../src/audit/chain.ts';
import { auditKeyOf, rowMac } from '../src/audit/mac.ts';
import { rowsOf } from '../src/store/db.ts';
import { onboard, startTestGateway } from '../test/support/gateway.ts';
import { AuditRecorder } from '../src/audit/recorder.ts';
import { createLogger } from '../src/util/log.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROWS = arg('rows', 20000);
const BATCH = arg('batch', 32);
const SEAL = arg('seal', 2000);
const STORE = process.argv.includes('--store=pglite') ? 'pglite' : 'postgres';
const gateway = await startTestGateway(STORE, { TOOLGATE_WEBHOOK_WORKER: '0' });
const org = await onboard(gateway);
const db = gateway.deps.store.db;
const REAL_KEYS = process.argv.includes('--real-keys');
const CONNECTOR = crypto.randomUUID();
const row = (): AuditInput => ({
  orgId: org.orgId,
  action: 'tool.called',
  actor: { type: 'api_key', id: 'k' },
  targetType: 'tool',
  targetId: 'query_postgresql_items',
  details: {
    tool_name: 'query_postgresql_items',
    connector_id: REAL_KEYS ? CONNECTOR : crypto.randomUUID(),
    duration_ms: REAL_KEYS ? Math.round(5 + Math.random() * 295) / 10 : 1.2,
    row_count: 10,
    counted: true,
    arguments_sha256: 'a'.repeat(64),
  },
});
/** The --recorder rounds are done: the per-part figures are not run. */
class Finished extends Error {}
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** CPU µs of the store's backends (PostgreSQL on this machine, /proc readable), or NaN when it cannot be read. */
async function storeCpu(): Promise<number> {
  if (STORE !== 'postgres') return NaN;
  const pids = rowsOf<{ pid: number }>(await db.execute(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`));
  let total = 0;
  for (const { pid } of pids) {
    try {
      const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(') ')[1]!.split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
    } catch {
      return NaN;
    }
  }
  return total;
}
async function measure(name: string, rows: number, op: () => Promise<unknown>): Promise<void> {
  // The longest stretch without a turn of the event loop, counted in CPU time (the process' CPU between two ticks of
  // a 1 ms timer), so time the machine gave to other processes is not counted as a stall.
  let stall = 0;
  let last = cpu();
  const probe = setInterval(() => {
    const now = cpu();
    stall = Math.max(stall, (now - last) / 1000);
    last = now;
  }, 1);
  const pg = await storeCpu();
  const c = cpu();
  const t = performance.now();
  await op();
  const used = cpu() - c;
  const wall = performance.now() - t;
  clearInterval(probe);
  const pgUsed = (await storeCpu()) - pg;
  console.log(`| ${name} | ${(used / rows).toFixed(1)} | ${(pgUsed / rows).toFixed(1)} | ${((wall * 1000) / rows).toFixed(1)} | ${stall.toFixed(1)} |`);
}
/**
 * Issue 42: the recorder as the hot path drives it, `callers` concurrent tool calls each awaiting its row, ROWS rows,
 * then drained (every row sealed): the old way (sealAtInsert false: INSERT, then the seal UPDATE) against the new.
 */
/** `fn`: the text of another audit_rollup_apply for this way (--rollup-fn=FILE), the store's own restored after. */
type Way = { sealAtInsert: boolean; rollups: boolean; fn?: string };
async function recorderRounds(rounds: number, callers: number, ways: Record<string, Way>): Promise<void> {
  const log = createLogger('silent');
  const results = new Map<string, number[][]>();
  const [own] = rowsOf<{ def: string }>(await db.execute(sql`SELECT pg_get_functiondef('audit_rollup_apply'::regproc) AS def`));
  for (let r = 0; r < rounds; r++) {
    for (const [name, { sealAtInsert, rollups, fn }] of r % 2 ? Object.entries(ways).reverse() : Object.entries(ways)) {
      // --rollups: the roll-up triggers (decisions 0347, migration 24) off for a way, on this throwaway store only.
      await db.execute(sql.raw(`ALTER TABLE audit_events ${rollups ? 'ENABLE' : 'DISABLE'} TRIGGER audit_rollup_insert`));
      await db.execute(sql.raw(fn ?? own!.def));
      const recorder = new AuditRecorder({ db, log, queueMax: 100_000, sealAtInsert });
      let next = 0;
      const pg = await storeCpu();
      const c = cpu();
      const t = performance.now();
      await Promise.all(
        Array.from({ length: callers }, async () => {
          while (next++ < ROWS) await recorder.toolCall(row());
        }),
      );
      await recorder.drain();
      const figures = [(cpu() - c) / ROWS, ((await storeCpu()) - pg) / ROWS, ((performance.now() - t) * 1000) / ROWS];
      results.set(name, [...(results.get(name) ?? []), figures]);
      console.log(`round ${r + 1}, ${name}: ${figures.map((f) => f.toFixed(1)).join(' / ')} µs per row (gateway CPU / PostgreSQL CPU / wall)`);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  console.log(`\nthe recorder, ${ROWS} rows per round, ${callers} concurrent callers, ${rounds} interleaved rounds, medians\n`);
  console.log('| way | gateway CPU µs/row | PostgreSQL CPU µs/row | wall µs/row |\n|:--|--:|--:|--:|');
  for (const [name, runs] of results) console.log(`| ${name} | ${[0, 1, 2].map((i) => median(runs.map((f) => f[i]!)).toFixed(1)).join(' | ')} |`);
}

const RECORDER = process.argv.find((a) => a.startsWith('--recorder'));
try {
  await gateway.deps.audit.drain();
  if (RECORDER) {
    const fnFile = process.argv.find((a) => a.startsWith('--rollup-fn='))?.slice('--rollup-fn='.length);
    const setup = process.argv.find((a) => a.startsWith('--rollup-setup='))?.slice('--rollup-setup='.length);
    if (setup) await gateway.deps.store.execScript(await Bun.file(setup).text());
    const ways: Record<string, Way> = process.argv.includes('--rollups')
      ? {
          'sealed in the INSERT, roll-ups on': { sealAtInsert: true, rollups: true },
          ...(fnFile ? { [`roll-ups by ${fnFile}`]: { sealAtInsert: true, rollups: true, fn: await Bun.file(fnFile).text() } } : {}),
          'sealed in the INSERT, roll-up trigger off': { sealAtInsert: true, rollups: false },
        }
      : { 'INSERT then seal UPDATE': { sealAtInsert: false, rollups: true }, 'sealed in the INSERT': { sealAtInsert: true, rollups: true } };
    await recorderRounds(Number(RECORDER.split('=')[1] ?? 4), arg('callers', 64), ways);
    throw new Finished();
  }
  // warm-up
  for (let i = 0; i < 20; i++) await sealFromMemory(db, await insertUnsealed(db, Array.from({ length: BATCH }, row)));
  for (let i = 0; i < 20; i++) await insertUnsealed(db, Array.from({ length: BATCH }, row));
  await sealPending(db, 5000);
  console.log(
    `\nper audit row, ${ROWS} rows, batches of ${BATCH}, ${STORE} store (load ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')})\n`,
  );
  console.log('| part | CPU µs/row | PostgreSQL CPU µs/row | wall µs/row | longest stall ms |\n|:--|--:|--:|--:|--:|');
  const inputs = Array.from({ length: ROWS }, row);
  let written: SealableRow[] = [];
  await measure('insertUnsealed (group-commit INSERT)', ROWS, async () => {
    for (let i = 0; i < ROWS; i += BATCH) written = written.concat(await insertUnsealed(db, inputs.slice(i, i + BATCH)));
  });
  await measure(`sealFromMemory (${SEAL} rows per transaction)`, ROWS, async () => {
    for (let i = 0; i < written.length; i += SEAL) await sealFromMemory(db, written.slice(i, i + SEAL));
  });
  for (let i = 0; i < ROWS; i += BATCH) await insertUnsealed(db, inputs.slice(i, i + BATCH));
  await measure('sealPending (fallback, 5000 rows per transaction)', ROWS, async () => {
    while ((await sealPending(db, 5000)) > 0);
  });
  const fields = {
    orgId: org.orgId,
    seq: 1,
    prevHash: 'a'.repeat(64),
    createdAt: new Date(),
    action: 'tool.called',
    actorType: 'api_key',
    actorId: 'k',
    targetType: 'tool',
    targetId: 't',
    outcome: 'success',
    details: inputs[0]!.details!,
  };
  await measure('rowHash alone', ROWS, async () => {
    for (let i = 0; i < ROWS; i++) rowHash({ ...fields, seq: i });
  });
  // The row's MAC (audit/mac.ts), part of insertUnsealed's figure above: one keyed hash over the row's tail.
  const key = auditKeyOf(db);
  const tail = rowTail(fields);
  await measure('rowMac alone (in insertUnsealed)', ROWS, async () => {
    for (let i = 0; i < ROWS; i++) rowMac(key, crypto.randomUUID(), org.orgId, tail);
  });
} catch (err) {
  if (!(err instanceof Finished)) throw err;
} finally {
  await gateway.close();
}
process.exit(0);
