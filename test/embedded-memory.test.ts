// The embedded PostgreSQL instances (store and demo database) start with small shared buffers: PGlite's stock
// 128 MB are touched at start and made `npm start` hold ~500 MB before any request (docs/performance.md, Memory).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemo, type Demo } from '../src/demo/demo.ts';
import { openStore, rowsOf, type Store } from '../src/store/db.ts';
import { startTestGateway, type TestGateway } from './support/gateway.ts';

let store: Store;
let gateway: TestGateway;
let demo: Demo;

beforeAll(async () => {
  store = await openStore({ dataDir: null });
  gateway = await startTestGateway();
  demo = await startDemo(gateway, { inMemory: true });
}, 60_000);
afterAll(async () => {
  await demo?.stop();
  await gateway?.close();
  await store?.close();
}, 30_000);

test('the embedded store runs with 8 MB of shared buffers, 1 MB of temp buffers and 4 MB of WAL buffers', async () => {
  const show = async (name: string) => Object.values(rowsOf<Record<string, string>>(await store.db.execute(sql.raw(`SHOW ${name}`)))[0]!)[0];
  // wal_buffers would otherwise follow shared_buffers down to 512 kB (src/store/db.ts says why it stays at 4 MB).
  expect([await show('shared_buffers'), await show('temp_buffers'), await show('wal_buffers')]).toEqual(['8MB', '1MB', '4MB']);
});

test('the demo database runs with 8 MB of shared buffers and still serves its sample rows', async () => {
  const client = postgres({ path: demo.socketPath, user: 'postgres', database: 'postgres', max: 1, onnotice: () => {} });
  try {
    const [buffers] = await client.unsafe('SHOW shared_buffers');
    const [customers] = await client.unsafe('SELECT count(*)::int AS n FROM customers');
    expect([buffers?.shared_buffers, customers?.n]).toEqual(['8MB', 5]);
  } finally {
    await client.end();
  }
});

test('building a gateway loads no SQL driver, guard parser or explorer plugin (each loads with its first use)', async () => {
  // A fresh process: the test runner shares one module registry between suites, some of which import the guard.
  const script = `await import(${JSON.stringify(`${import.meta.dir}/../src/gateway.ts`)});
const loaded = (needle) => Object.keys(require.cache).some((k) => k.includes(needle));
console.log(JSON.stringify([loaded('sqlparser-ts'), loaded('connectors/mysql/guard/guard.ts'), loaded('connectors/mysql/driver.ts'), loaded('mysql2'), loaded('connectors/postgresql/driver.ts'), loaded('connectors/postgresql/guard/parser.ts'), loaded('libpg-query'), loaded('@elysiajs/swagger')]));`;
  const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'inherit' });
  const out = await new Response(child.stdout).text();
  expect(await child.exited).toBe(0);
  // The types are registered; their drivers (mysql2, postgres.js with the guard's parsers) load with the first
  // connector of the type, the /docs explorer's plugin with the first /docs request (decision 0192).
  expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual([false, false, false, false, false, false, false, false]);
}, 30_000);

// RSS is read from /proc: Linux only.
test.skipIf(process.platform !== 'linux')(
  'npm start on a fresh data folder (embedded store, demo on) idles under 250 MB of RSS',
  async () => {
    // Issue 27: 272-288 MB before the round of decisions 0190-0194, 177-195 MB after, 5-40 s after start (bench/memory.ts --idle). The
    // bound is generous, for a loaded machine; a regression of one PGlite instance or parser held at start crosses it.
    const dataDir = mkdtempSync(join(tmpdir(), 'toolgate-idle-'));
    const child = Bun.spawn([process.execPath, 'src/main.ts'], {
      cwd: join(import.meta.dir, '..'),
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        PORT: '0',
        HOST: '127.0.0.1',
        TOOLGATE_DATA_DIR: dataDir,
        TOOLGATE_LOG_LEVEL: 'error',
      },
      stdout: 'pipe',
      stderr: 'inherit',
    });
    try {
      // Ready once it prints the demo's banner (after the listener is up).
      const reader = child.stdout.getReader();
      let out = '';
      while (!out.includes('demo org')) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the gateway exited before it was ready: ${out}`);
        out += new TextDecoder().decode(value);
      }
      await Bun.sleep(5000);
      const rssMb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
      expect(rssMb).toBeLessThan(250);
    } finally {
      child.kill('SIGTERM');
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  120_000,
);
