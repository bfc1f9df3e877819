/**
 * In-process CPU cost of one tools/call through `app.handle` (issue 15: what metrics, logs and tracing hooks cost).
 * Less sensitive to a loaded machine than req/s: it reports this process's CPU time per call (user + system), which
 * includes the gateway and its postgres.js clients but not PostgreSQL. Run it on two trees back to back to compare;
 * OTEL_EXPORTER_OTLP_ENDPOINT set measures with spans exported.
 *
 *   bun bench/ops-overhead.ts [--calls=4000] [--concurrency=16]
 */
import { onboard, startTestGateway, tokenFor } from '../test/support/gateway.ts';
import { createConnector } from '../test/support/mcp.ts';
import { createTargets } from '../test/support/targets.ts';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const CALLS = arg('calls', 4000);
const CONCURRENCY = arg('concurrency', 16);

const targets = await createTargets('tg_opscost', 'pg');
const env: Record<string, string> = { TOOLGATE_WEBHOOK_WORKER: '0', TOOLGATE_LOG_LEVEL: 'error' };
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) env.OTEL_EXPORTER_OTLP_ENDPOINT = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const g = await startTestGateway('postgres', env);
try {
  const org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  await createConnector(g, token, { name: 'items', type: 'postgresql', config: targets.pgConfig });
  const url = `http://gateway.test/mcp/${org.slug}`;
  const headers = { 'content-type': 'application/json', 'x-api-key': org.apiKey };
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'query_postgresql_items', arguments: { sql: 'SELECT id, name FROM items WHERE id > 1 ORDER BY id LIMIT 10' } },
  });
  const run = async (calls: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < calls) {
          // Straight to the app (no contract check of the response, which the test gateway's handle adds).
          const response = await g.app.handle(new Request(url, { method: 'POST', headers, body }));
          if (response.status !== 200) throw new Error(`call failed: ${response.status}`);
          await response.arrayBuffer();
        }
      }),
    );
  };
  await run(500); // warm-up
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await run(CALLS);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`ops-overhead: ${CALLS} calls, ${Math.round(CALLS / seconds)} calls/s, CPU ${((used.user + used.system) / CALLS).toFixed(1)} us/call`);
} finally {
  await g.close();
  await targets.drop();
}
process.exit(0);
