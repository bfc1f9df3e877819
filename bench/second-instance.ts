/**
 * A second gateway instance as its own process (bench/thousand-orgs.ts): starts on an existing PostgreSQL store
 * (argv: DATABASE_URL, an org slug, its API key), answers one tools/list for that org, prints one JSON line
 * {ok, ms, status} and stops. Its own process, so it has its own connection budget and beats in the store like
 * any other instance (decision 0409).
 */
import { BASE, startTestGateway } from '../test/support/gateway.ts';

const [databaseUrl, slug, apiKey] = process.argv.slice(2);
const started = performance.now();
try {
  const reserve = process.env.TOOLGATE_STORE_RESERVED_CONNECTIONS;
  const g = await startTestGateway(
    'postgres',
    { TOOLGATE_WEBHOOK_WORKER: '0', ...(reserve ? { TOOLGATE_STORE_RESERVED_CONNECTIONS: reserve } : {}) },
    databaseUrl,
  );
  const res = await g.app.handle(
    new Request(`${BASE}/mcp/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey! },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    }),
  );
  const ms = performance.now() - started;
  await res.text();
  await g.close();
  console.log(JSON.stringify({ ok: res.status === 200, ms, status: res.status }));
  process.exit(0);
} catch (err) {
  console.log(JSON.stringify({ ok: false, ms: performance.now() - started, status: err instanceof Error ? err.message.split('\n')[0] : String(err) }));
  process.exit(1);
}
