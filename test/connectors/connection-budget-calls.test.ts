/**
 * Issue 42 item 4 through tools/call (decision 0411): the connections a call opens on the server — the pool's and the
 * side session that cancels its statements — all hold budget tokens, so many orgs' connectors called at once never
 * hold more connections on the server than the budget (counted by the server, pg_stat_activity, every 5 ms). Before
 * 0411 the cancel session was opened with a pool's first call outside the budget: twice the budget was seen.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import postgres from 'postgres';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import { connectionBudget } from '../../src/connectors/shared/budget.ts';
import { onboard, startTestGateway, tokenFor, type TestGateway } from '../support/gateway.ts';
import { callTool, createConnector } from '../support/mcp.ts';

const DB = `budget_calls_${process.pid}_${Date.now().toString(36)}`;
const BUDGET = 4;
const ORGS = 16;
const admin = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres', max: 2, onnotice: () => undefined });
const settingsBefore = { ...connectionBudget.settings };
let g: TestGateway;
const orgs: { slug: string; apiKey: string }[] = [];

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${DB}`);
  const data = postgres({ host: '127.0.0.1', port: 5432, user: 'postgres', database: DB, max: 1, onnotice: () => undefined });
  await data.unsafe('CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)');
  await data.unsafe(`INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, 100) i`);
  await data.end();
  await postgresqlDriver.closeAll?.();
  g = await startTestGateway('pglite', { TOOLGATE_CONNECTOR_CONNECTIONS_PER_SERVER_MAX: String(BUDGET), TOOLGATE_CONNECTOR_CONNECTIONS_WAIT_MS: '20000' });
  for (let i = 0; i < ORGS; i++) {
    const org = await onboard(g);
    const token = await tokenFor(g, org.clientId, org.clientSecret);
    const connector = await createConnector(g, token, {
      name: 'items',
      type: 'postgresql',
      config: { host: '127.0.0.1', port: 5432, database: DB, user: 'postgres', tls: 'disable' },
    });
    expect(connector.status).toBe('active');
    orgs.push({ slug: org.slug, apiKey: org.apiKey });
  }
}, 120_000);

afterAll(async () => {
  await g?.close();
  await postgresqlDriver.closeAll?.();
  connectionBudget.settings = settingsBefore;
  await admin.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
});

let id = 0;
async function call(org: { slug: string; apiKey: string }): Promise<string> {
  const sql = `SELECT id, name FROM items WHERE id > ${++id % 50} ORDER BY id LIMIT 5`;
  return (await callTool(g, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql })).text;
}

const connectionsOnDb = async () => (await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${DB}`)[0]!.n;

test('one call opens its pool connection and the cancel session, both in the budget; closing gives both back', async () => {
  await postgresqlDriver.closeAll?.();
  expect(connectionBudget.usage()).toBe(0);
  const text = await call(orgs[0]!);
  expect(text).toContain('"rowCount":5');
  // The cancel session is warmed after the call's read began; give it a moment to connect.
  const deadline = Date.now() + 3000;
  while ((await connectionsOnDb()) < 2 && Date.now() < deadline) await Bun.sleep(20);
  expect(await connectionsOnDb()).toBe(2);
  expect(connectionBudget.usage()).toBe(2);
  await postgresqlDriver.closeAll?.();
  expect(connectionBudget.usage()).toBe(0);
});

test(`${ORGS} orgs calling at once never hold more than the budget's ${BUDGET} connections on the server`, async () => {
  await postgresqlDriver.closeAll?.();
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await connectionsOnDb());
      await Bun.sleep(5);
    }
  })();
  const answers = await Promise.all(
    orgs.map(async (org) => {
      const texts: string[] = [];
      for (let i = 0; i < 2; i++) texts.push(await call(org));
      return texts;
    }),
  );
  sampling = false;
  await sampler;
  const all = answers.flat();
  const rows = all.filter((t) => t.includes('"rowCount":5')).length;
  console.log(`${ORGS} orgs x 2 calls, budget ${BUDGET}: ${rows} answered rows, peak ${peak} connections on the server`);
  expect(rows).toBe(ORGS * 2);
  expect(peak).toBeGreaterThan(0);
  expect(peak).toBeLessThanOrEqual(BUDGET);
  expect(connectionBudget.usage()).toBeLessThanOrEqual(BUDGET);
}, 60_000);

test('a lowered cap closes just the pools it must, counting their cancel sessions', async () => {
  await postgresqlDriver.closeAll?.();
  const server = '127.0.0.1:5432';
  connectionBudget.settings = { ...connectionBudget.settings, perServer: 10 };
  try {
    // Three pools, each with its connection and its cancel session: 6 tokens.
    for (const org of orgs.slice(0, 3)) expect(await call(org)).toContain('"rowCount":5');
    const deadline = Date.now() + 3000;
    while ((await connectionsOnDb()) < 6 && Date.now() < deadline) await Bun.sleep(20);
    expect(connectionBudget.usage(server)).toBe(6);
    // Down to 4: one pool (2 tokens) is enough; counting only pool connections would close two.
    connectionBudget.capServer(server, 4, 'lowered-cap-test');
    const settle = Date.now() + 3000;
    while (connectionBudget.usage(server) > 4 && Date.now() < settle) await Bun.sleep(20);
    await Bun.sleep(100);
    expect(connectionBudget.usage(server)).toBe(4);
    expect(await connectionsOnDb()).toBe(4);
  } finally {
    connectionBudget.dropCap(server, 'lowered-cap-test');
    connectionBudget.settings = { ...connectionBudget.settings, perServer: BUDGET };
  }
});
