/**
 * The audit row's gateway CPU by part (issue 14, round two): per row, in this process, on a fresh PostgreSQL store
 * (or --store=pglite): building and writing a group-commit INSERT of --batch rows (insertUnsealed, awaited one batch
 * at a time as the recorder does), then sealing them into the chain from memory (sealFromMemory, 2,000 rows per
 * transaction, as the recorder does) or by reading them back (sealPending, the fallback), and the pieces of the
 * sealer alone (rowHash of a row). CPU of this process only (user + system); the database's own work is not counted.
 * The last column is the longest the event loop went without a turn during the part (a 1 ms timer's worst lateness).
 *
 *   bun bench/audit-cost.ts [--rows=20000] [--batch=32] [--store=pglite]
 */
import { insertUnsealed, type AuditInput } from '../src/audit/repository.ts';
import { sealFromMemory, sealPending, type SealableRow } from '../src/audit/seal.ts';
import { rowHash } from '../src/audit/chain.ts';
import { onboard, startTestGateway } from '../test/support/gateway.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROWS = arg('rows', 20000);
const BATCH = arg('batch', 32);
const STORE = process.argv.includes('--store=pglite') ? 'pglite' : 'postgres';
const gateway = await startTestGateway(STORE, { TOOLGATE_WEBHOOK_WORKER: '0' });
const org = await onboard(gateway);
const db = gateway.deps.store.db;
const row = (): AuditInput => ({
  orgId: org.orgId,
  action: 'tool.called',
  actor: { type: 'api_key', id: 'k' },
  targetType: 'tool',
  targetId: 'query_postgresql_items',
  details: { tool_name: 'query_postgresql_items', connector_id: crypto.randomUUID(), duration_ms: 1.2, row_count: 10, counted: true, arguments_sha256: 'a'.repeat(64) },
});
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
async function measure(name: string, rows: number, op: () => Promise<unknown>): Promise<void> {
  let stall = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  const c = cpu();
  const t = performance.now();
  await op();
  const used = cpu() - c;
  const wall = performance.now() - t;
  clearInterval(probe);
  console.log(`| ${name} | ${(used / rows).toFixed(1)} | ${((wall * 1000) / rows).toFixed(1)} | ${stall.toFixed(1)} |`);
}
try {
  await gateway.deps.audit.drain();
  // warm-up
  for (let i = 0; i < 20; i++) await sealFromMemory(db, await insertUnsealed(db, Array.from({ length: BATCH }, row)));
  for (let i = 0; i < 20; i++) await insertUnsealed(db, Array.from({ length: BATCH }, row));
  await sealPending(db, 5000);
  console.log(`\nper audit row, ${ROWS} rows, batches of ${BATCH}, ${STORE} store (load ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')})\n`);
  console.log('| part | CPU µs/row | wall µs/row | longest stall ms |\n|:--|--:|--:|--:|');
  const inputs = Array.from({ length: ROWS }, row);
  let written: SealableRow[] = [];
  await measure('insertUnsealed (group-commit INSERT)', ROWS, async () => {
    for (let i = 0; i < ROWS; i += BATCH) written = written.concat(await insertUnsealed(db, inputs.slice(i, i + BATCH)));
  });
  await measure('sealFromMemory (2000 rows per transaction)', ROWS, async () => {
    for (let i = 0; i < written.length; i += 2000) await sealFromMemory(db, written.slice(i, i + 2000));
  });
  for (let i = 0; i < ROWS; i += BATCH) await insertUnsealed(db, inputs.slice(i, i + BATCH));
  await measure('sealPending (fallback, 5000 rows per transaction)', ROWS, async () => {
    while ((await sealPending(db, 5000)) > 0);
  });
  const fields = { orgId: org.orgId, seq: 1, prevHash: 'a'.repeat(64), createdAt: new Date(), action: 'tool.called', actorType: 'api_key', actorId: 'k', targetType: 'tool', targetId: 't', outcome: 'success', details: inputs[0]!.details! };
  await measure('rowHash alone', ROWS, async () => {
    for (let i = 0; i < ROWS; i++) rowHash({ ...fields, seq: i });
  });
} finally {
  await gateway.close();
}
process.exit(0);
