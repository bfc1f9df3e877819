// Decision 0287: the PostgreSQL guard's parser (libpg-query's WebAssembly, ~18 MB of RSS) loads with a connector's
// first call, not with validate or introspect (what `npm start`'s first start does to the demo's connector). The
// first calls wait for it: none runs unguarded, a refused statement is refused, an allowed one answers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const available = await serviceAvailable('postgres');

describe.skipIf(!available)('postgresql: the guard loaded with the first call', () => {
  let t: Targets;
  beforeAll(async () => {
    t = await createTargets('tg_lazyguard', 'pg');
  }, 60_000);
  afterAll(async () => {
    await t?.drop();
  }, 60_000);

  test('validate and introspect load no parser; the first calls wait for it and are guarded', async () => {
    // A fresh process: the test runner shares one module registry between suites, some of which import the guard.
    const script = `
const { postgresqlDriver } = await import(${JSON.stringify(`${import.meta.dir}/../src/connectors/postgresql/driver.ts`)});
const loaded = () => [Object.keys(require.cache).some((k) => k.includes('connectors/postgresql/guard/parser.ts')), Object.keys(require.cache).some((k) => k.includes('libpg-query'))];
const config = ${JSON.stringify(t.pgConfig)};
await postgresqlDriver.validate('lazy', config, null);
const items = (await postgresqlDriver.introspect('lazy', config, null)).find((s) => s.name === 'query_postgresql_items');
const before = loaded();
const ctx = { connectorId: 'lazy', config, credential: null, allowWrite: false, allowDdl: false, readOnly: true,
  limits: { statementTimeoutMs: 5000, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 1000000 } };
// Three first calls at once, before the parser is there: a write on a read-only tool, a function off the allow-list, a read.
const results = await Promise.all([
  postgresqlDriver.execute(items, { sql: 'DELETE FROM items' }, ctx),
  postgresqlDriver.execute(items, { sql: "SELECT pg_catalog.pg_sleep(0), id FROM items" }, ctx),
  postgresqlDriver.execute(items, { sql: 'SELECT id FROM items ORDER BY id' }, ctx),
]);
await postgresqlDriver.closeAll();
console.log(JSON.stringify({ before, after: loaded(), results: results.map((r) => ({ isError: r.isError === true, rows: r.structuredContent?.rows ?? null })) }));`;
    const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' });
    const out = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    const seen = JSON.parse(out.trim().split('\n').pop()!);
    expect(seen.before).toEqual([false, false]);
    expect(seen.after).toEqual([true, true]);
    expect(seen.results).toEqual([
      { isError: true, rows: null },
      { isError: true, rows: null },
      { isError: false, rows: [{ id: 1 }, { id: 2 }, { id: 3 }] },
    ]);
    // The refused write ran nothing.
    expect(await t.pg('SELECT count(*)::int AS n FROM items')).toEqual([{ n: 3 }]);
  }, 60_000);
});
