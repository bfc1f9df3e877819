/**
 * One gateway instance in its own process (the connection budget is per process), on the PostgreSQL store named by
 * STORE_URL, driven over stdin by test/connectors/connection-budget-instances.test.ts; one JSON line per command:
 *   start            → {started: true} once the gateway is up (the process says {ready: true} once loaded, so a
 *                      test can load it ahead of time)
 *   state            → {live, cap, held}: instances in the store, this one's cap and tokens on the store's server
 *   burst <n> <tag>  → {rows, errors, texts, heldPeak}: n connectors on CONNECTOR_DB, each called once at the same
 *                      time (a 50 ms statement); heldPeak: the most budget tokens this process held on the server
 *                      meanwhile (sampled every millisecond)
 *   close            → {closed: true}, then the process ends
 */
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { configurePostgresqlPools, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { pgCallErrorText } from '../../src/connectors/postgresql/errors.ts';
import { connectionBudget } from '../../src/connectors/shared/budget.ts';
import { loadConfig } from '../../src/config.ts';
import { createGateway, type Gateway } from '../../src/gateway.ts';

const SERVER = '127.0.0.1:5432';
const storeUrl = process.env.STORE_URL!;
const connectorDb = process.env.CONNECTOR_DB!;
const config = { host: '127.0.0.1', port: 5432, database: connectorDb, user: 'postgres', tls: 'disable' as const };

let gateway: Gateway | null = null;

/** A gateway on the store, as test/support/gateway.ts builds one, without its contract checks (seconds to load). */
function startGateway(): Promise<Gateway> {
  const config = loadConfig({
    TOOLGATE_PUBLIC_URL: 'http://gateway.test',
    TOOLGATE_OPERATOR_TOKEN: 'test-operator-token-0123456789abcdef',
    TOOLGATE_LOG_LEVEL: 'silent',
    TOOLGATE_DEMO: '0',
    TOOLGATE_CONNECTOR_PROBE_INTERVAL_MS: '0',
    DATABASE_URL: storeUrl,
    TOOLGATE_SECRET_KEY: 'a'.repeat(64),
    TOOLGATE_STORE_RESERVED_CONNECTIONS: process.env.RESERVE!,
  });
  return createGateway(config, { inMemory: true, storeShareBeatMs: Number(process.env.BEAT_MS) });
}
const store = postgres(storeUrl, { max: 1, onnotice: () => undefined });
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function burst(count: number, tag: string) {
  let heldPeak = 0;
  let capMin = Number.POSITIVE_INFINITY;
  const sampler = setInterval(() => {
    heldPeak = Math.max(heldPeak, connectionBudget.usage(SERVER));
    capMin = Math.min(capMin, connectionBudget.capOf(SERVER));
  }, 1);
  const outcomes = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      postgresqlPoolFor(`${tag}-${i}`, config, null, async (pool) => (await pool.sql`SELECT pg_sleep(0.05)`).length).then(
        () => 'rows',
        (err: unknown) => pgCallErrorText(err, { config, credential: null, connectTimeoutMs: 5000 }),
      ),
    ),
  );
  clearInterval(sampler);
  const errors = outcomes.filter((o) => o !== 'rows');
  return { rows: outcomes.length - errors.length, errors: errors.length, texts: [...new Set(errors)], heldPeak, capMin };
}

say({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  const [command, ...args] = line.trim().split(' ');
  if (command === 'start') {
    gateway = await startGateway();
    // Idle pools stay open past the test (10 s by default): only a lowered cap closes them.
    configurePostgresqlPools({ idleMs: 120_000 });
    say({ started: true });
  } else if (command === 'state') {
    const [row] = await store<{ n: number }[]>`SELECT count(*)::int AS n FROM gateway_instances`;
    say({ live: row!.n, cap: connectionBudget.capOf(SERVER), held: connectionBudget.usage(SERVER) });
  } else if (command === 'burst') {
    say(await burst(Number(args[0]), args[1]!));
  } else if (command === 'close') {
    await store.end();
    await gateway?.close();
    say({ closed: true });
    process.exit(0);
  }
}
