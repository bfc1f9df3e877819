/**
 * Issue 42 item 4 (decision 0323): 300 connectors on one server, each called once at the same time, never hold more
 * connections than the budget (counted by the server, pg_stat_activity); every call answers rows or the budget's
 * tool error; a server that refuses connections (too many for the role) answers a clear tool error.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import postgres from 'postgres';
import { postgresqlDriver, postgresqlPoolFor } from '../../src/connectors/postgresql/driver.ts';
import { pgCallErrorText } from '../../src/connectors/postgresql/errors.ts';
import { connectionBudget } from '../../src/connectors/shared/budget.ts';

const DB = 'h10_budget';
const ROLE = 'h10_budget_full';
const admin = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres', max: 1, onnotice: () => undefined });
const config = (database: string, user = 'postgres') => ({ host: '127.0.0.1', port: 5432, database, user, tls: 'disable' as const });

beforeAll(async () => {
  await admin.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE ${DB}`);
  await admin.unsafe(`DROP ROLE IF EXISTS ${ROLE}`);
  // A role allowed no connection: the server refuses it with 53300, as a server at max_connections does.
  await admin.unsafe(`CREATE ROLE ${ROLE} LOGIN CONNECTION LIMIT 0`);
});

afterAll(async () => {
  await postgresqlDriver.closeAll?.();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.unsafe(`DROP ROLE IF EXISTS ${ROLE}`);
  await admin.end();
});

test('300 connectors called at once stay within the budget; every call answers rows or the budget error', async () => {
  const budget = 20;
  connectionBudget.settings = { total: budget, perServer: budget, waitMs: 3000 };
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${DB}`;
      peak = Math.max(peak, row!.n);
      await Bun.sleep(10);
    }
  })();
  const started = performance.now();
  const outcomes = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      postgresqlPoolFor(`h10-budget-${i}`, config(DB), null, async (pool) => (await pool.sql`SELECT ${i}::int AS i, pg_sleep(0.02)`)[0]!.i).then(
        (i) => ({ ok: i }),
        (err: unknown) => ({ error: pgCallErrorText(err, { config: config(DB), credential: null, connectTimeoutMs: 5000 }) }),
      ),
    ),
  );
  sampling = false;
  await sampler;
  const rows = outcomes.filter((o): o is { ok: number } => 'ok' in o);
  const errors = outcomes.filter((o): o is { error: string } => 'error' in o);
  console.log(
    `300 connectors, budget ${budget}: ${rows.length} rows, ${errors.length} budget errors, peak ${peak} connections, ${Math.round(performance.now() - started)} ms`,
  );
  expect(peak).toBeGreaterThan(0);
  expect(peak).toBeLessThanOrEqual(budget);
  expect(connectionBudget.usage()).toBeLessThanOrEqual(budget);
  expect(rows.length + errors.length).toBe(300);
  expect(rows.length).toBeGreaterThan(budget);
  for (const e of errors) expect(e.error).toMatch(/connection budget is exhausted.*Retry shortly/);
  for (const r of rows) expect(typeof r.ok).toBe('number');
}, 60_000);

test('a tiny wait turns queued calls into the budget tool error, not a server refusal', async () => {
  await postgresqlDriver.closeAll?.();
  expect(connectionBudget.usage()).toBe(0);
  connectionBudget.settings = { total: 2, perServer: 2, waitMs: 1 };
  const outcomes = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      postgresqlPoolFor(`h10-tiny-${i}`, config(DB), null, async (pool) => (await pool.sql`SELECT pg_sleep(0.2)`).length).then(
        () => 'rows',
        (err: unknown) => pgCallErrorText(err, { config: config(DB), credential: null, connectTimeoutMs: 5000 }),
      ),
    ),
  );
  expect(outcomes.filter((o) => o === 'rows').length).toBe(2);
  expect(outcomes.filter((o) => /connection budget is exhausted/.test(o)).length).toBe(8);
}, 30_000);

test('a server refusing connections (too many) answers a clear tool error, not a stack trace', async () => {
  connectionBudget.settings = { total: 20, perServer: 20, waitMs: 3000 };
  const text = await postgresqlPoolFor('h10-full', config(DB, ROLE), null, async (pool) => pool.sql`SELECT 1`).then(
    () => 'rows',
    (err: unknown) => pgCallErrorText(err, { config: config(DB, ROLE), credential: null, connectTimeoutMs: 5000 }),
  );
  expect(text).toBe('The database is unavailable: 127.0.0.1:5432 has no connection slot left (too many connections).');
});
