/**
 * tools/call with and without a subscribed tool.called webhook (issue 11), in process through app.handle on real
 * PostgreSQL: 16 concurrent callers, 5 interleaved rounds of 2,000 calls per setting, medians reported.
 * BENCH_WORKER=0 measures the hot path alone: no relay and no delivery worker in the process (tool.called is relayed
 * from the sealed audit rows by the worker, webhooks/relay.ts, so the two orgs' calls run the same code).
 * Run: node_modules/.bin/bun bench/webhooks-tool-called.ts
 */
import { startTestGateway, onboard, tokenFor, api } from '../test/support/gateway.ts';
import { createTargets } from '../test/support/targets.ts';
import { callTool, createConnector } from '../test/support/mcp.ts';
import { startReceiver } from '../test/support/webhooks.ts';

const receiver = startReceiver();
const targets = await createTargets('tg_hookbench', 'pg');
const gateway = await startTestGateway('postgres', {
  TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort,
  TOOLGATE_WEBHOOK_POLL_MS: '200',
  TOOLGATE_WEBHOOK_WORKER: process.env.BENCH_WORKER ?? '1',
});
const plain = await onboard(gateway);
const hooked = await onboard(gateway);
for (const org of [plain, hooked])
  await createConnector(gateway, await tokenFor(gateway, org.clientId, org.clientSecret), { name: 'items', type: 'postgresql', config: targets.pgConfig });
await api(gateway, 'POST', '/api/org/webhooks', await tokenFor(gateway, hooked.clientId, hooked.clientSecret), {
  url: receiver.url(),
  events: ['tool.called'],
});

async function round(org: typeof plain, calls: number, concurrency: number): Promise<{ perSecond: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < calls) {
        const t = performance.now();
        const res = await callTool(gateway, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' });
        if (res.status !== 200) throw new Error(`call failed: ${res.status}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { perSecond: Math.round(calls / ((performance.now() - started) / 1000)), p99: Number(latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2)) };
}

// Interleaved rounds (the machine is shared; load drifts), median of each setting.
const results: Record<string, { perSecond: number; p99: number }[]> = { 'no webhook': [], 'tool.called webhook': [] };
await round(plain, 500, 16); // warm-up
for (let i = 0; i < 5; i++) {
  results['no webhook']!.push(await round(plain, 2000, 16));
  results['tool.called webhook']!.push(await round(hooked, 2000, 16));
}
for (const [name, rows] of Object.entries(results)) {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(
    `${name}: median ${median(rows.map((r) => r.perSecond))} calls/s, p99 median ${median(rows.map((r) => r.p99))} ms (rounds: ${rows.map((r) => r.perSecond).join(', ')})`,
  );
}
await Bun.sleep(2000);
console.log(`deliveries received so far: ${receiver.received.length}`);
await gateway.close();
receiver.stop();
await targets.drop();
