/**
 * One gateway instance in its own process (the connection budget is per process), on the PostgreSQL store named by
 * STORE_URL, driven over stdin by test/connectors/connection-budget-instances.test.ts; one JSON line per command:
 *   state            → {live, cap, held}: instances in the store, this one's cap and tokens on the store's server
 *   burst <n> <tag>  → {rows, errors}: n connectors on CONNECTOR_DB, each called once at the same time (a 50 ms statement)
 *   close            → {closed: true}, then the process ends
 */
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { pgCallErrorText } from '../../src/connectors/postgresql/errors.ts';
import { connectionBudget } from '../../src/connectors/shared/budget.ts';
import { startTestGateway } from './gateway.ts';

const SERVER = '127.0.0.1:5432';
const storeUrl = process.env.STORE_URL!;
const connectorDb = process.env.CONNECTOR_DB!;
const config = { host: '127.0.0.1', port: 5432, database: connectorDb, user: 'postgres', tls: 'disable' as const };

const gateway = await startTestGateway('postgres', { TOOLGATE_STORE_RESERVED_CONNECTIONS: process.env.RESERVE! }, storeUrl, {
  storeShareBeatMs: Number(process.env.BEAT_MS),
});
const store = postgres(storeUrl, { max: 1, onnotice: () => undefined });
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function burst(count: number, tag: string) {
  const outcomes = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      postgresqlPoolFor(`${tag}-${i}`, config, null, async (pool) => (await pool.sql`SELECT pg_sleep(0.05)`).length).then(
        () => 'rows',
        (err: unknown) => pgCallErrorText(err, { config, credential: null, connectTimeoutMs: 5000 }),
      ),
    ),
  );
  const errors = outcomes.filter((o) => o !== 'rows');
  return { rows: outcomes.length - errors.length, errors: errors.length, texts: [...new Set(errors)] };
}

say({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  const [command, ...args] = line.trim().split(' ');
  if (command === 'state') {
    const [row] = await store<{ n: number }[]>`SELECT count(*)::int AS n FROM gateway_instances`;
    say({ live: row!.n, cap: connectionBudget.capOf(SERVER), held: connectionBudget.usage(SERVER) });
  } else if (command === 'burst') {
    say(await burst(Number(args[0]), args[1]!));
  } else if (command === 'close') {
    await store.end();
    await gateway.close();
    say({ closed: true });
    process.exit(0);
  }
}
