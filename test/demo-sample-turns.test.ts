/**
 * The demo's sample database is one PGlite session behind a socket that takes one connection at a time. A second
 * connection (introspection while the call pool keeps its idle connection, a second pool connection) used to be
 * refused ("closed unexpectedly"); now it waits its turn, and an idle holder gives way (src/demo/one-connection.ts).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import postgres from 'postgres';
import { embeddedDatabaseFor } from '../src/connectors/shared/embedded.ts';
import { type Demo, SAMPLE_HOST, startDemo } from '../src/demo/demo.ts';
import { findOrgBySlug } from '../src/orgs/repository.ts';
import { startTestGateway, type TestGateway } from './support/gateway.ts';
import { callTool } from './support/mcp.ts';

let gateway: TestGateway;
let demo: Demo;
let connect: () => Promise<import('node:net').Socket>;
let apiKey: string;

beforeAll(async () => {
  gateway = await startTestGateway();
  demo = await startDemo(gateway, { inMemory: true });
  const org = await findOrgBySlug(gateway.deps.store.db, 'demo');
  connect = embeddedDatabaseFor(SAMPLE_HOST, org!.id)!;
  apiKey = /demo API key: (\S+)/.exec(demo.banner)![1]!;
}, 60_000);
afterAll(async () => {
  await demo?.stop();
  await gateway?.close();
}, 30_000);

/** A postgres.js client reaching the sample database as a connector does (through the embedded registry). */
function client() {
  // postgres.js takes a socket factory (as src/connectors/postgresql/pool.ts passes it); its types do not list it.
  const options = { host: SAMPLE_HOST, socket: connect, user: 'postgres', database: 'postgres', max: 1, onnotice: () => {}, idle_timeout: 30 };
  return postgres(options);
}

test('a second connection waits for its turn while the first is idle, and the first comes back after it', async () => {
  const a = client();
  const b = client();
  try {
    expect((await a.unsafe('SELECT count(*)::int AS n FROM customers'))[0]?.n).toBe(5);
    // a keeps its idle connection (idle_timeout 30 s): b is served anyway, a's connection gives way.
    expect((await b.unsafe('SELECT count(*)::int AS n FROM products'))[0]?.n).toBeGreaterThan(0);
    expect((await a.unsafe('SELECT 1 AS one'))[0]?.one).toBe(1);
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
});

test('two clients querying at once all get answers, and a transaction is never cut in two', async () => {
  const a = client();
  const b = client();
  try {
    const inTransaction = a.begin(async (tx) => {
      await tx.unsafe('CREATE TEMP TABLE turn_probe (n int)');
      await tx.unsafe('INSERT INTO turn_probe VALUES (1)');
      await new Promise((r) => setTimeout(r, 200));
      // Still the same session: the temp table is there, so no other connection took the session in between.
      return (await tx.unsafe('SELECT n FROM turn_probe'))[0]?.n;
    });
    const loops = [a, b].map(async (c) => {
      const answers: number[] = [];
      for (let i = 0; i < 10; i++) answers.push((await c.unsafe('SELECT $1::int AS i', [i]))[0]?.i);
      return answers;
    });
    const [inside, ...loopAnswers] = await Promise.all([inTransaction, ...loops]);
    expect(inside).toBe(1);
    for (const answers of loopAnswers) expect(answers).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
}, 30_000);

test("tools/call keeps working while another connection (introspection's) takes turns with the call pool", async () => {
  const first = await callTool(gateway, 'demo', { apiKey }, 'query_postgresql_customers', { sql: 'SELECT id FROM customers' });
  expect(first.body.error).toBeUndefined();
  expect(first.body.result.isError).toBeFalsy();
  // The call pool now holds an idle connection; a throwaway single connection, as validate and introspect open.
  const other = client();
  try {
    const calls = Promise.all([1, 2, 3].map(() => callTool(gateway, 'demo', { apiKey }, 'query_postgresql_customers', { sql: 'SELECT id FROM customers' })));
    expect((await other.unsafe('SELECT count(*)::int AS n FROM orders'))[0]?.n).toBeGreaterThan(0);
    for (const answer of await calls) expect([answer.body.error, answer.body.result?.isError ? answer.body.result.content : false]).toEqual([undefined, false]);
  } finally {
    await other.end();
  }
  const after = await callTool(gateway, 'demo', { apiKey }, 'query_postgresql_customers', { sql: 'SELECT id FROM customers' });
  expect([after.body.error, after.body.result?.isError ?? false]).toEqual([undefined, false]);
}, 30_000);
