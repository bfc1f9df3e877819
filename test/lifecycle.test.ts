// Issue 15: graceful shutdown of a real gateway process (`bun src/main.ts`). SIGTERM stops accepting, lets the
// calls in flight finish within TOOLGATE_SHUTDOWN_DEADLINE_MS, releases pools and the data folder, and exits 0.
// A call is held in flight deterministically by a lock the test holds on the tool's table.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import * as sdk from '../sdk/index.ts';
import { lockHolder } from '../src/util/datadir.ts';
import { startInstance, type Instance } from '../scripts/lib/instances.ts';
import { verifies } from './requirements.ts';
import { freshDatabase } from './support/gateway.ts';
import { sdkAt } from './support/sdk.ts';
import { databaseAllowHosts, PG_URL, serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(180_000);
const hasPg = await serviceAvailable('postgres');
const OPERATOR = 'lifecycle-operator-token-0123456789';
const ITEMS = 'query_postgresql_items';

/** Onboards an org on a running instance and gives it a PostgreSQL connector on the targets; returns its slug and key. */
async function seed(instance: Instance, t: Targets): Promise<{ slug: string; apiKey: string }> {
  const operator = sdkAt(instance.url, fetch, OPERATOR).client;
  const slug = `life-${Date.now().toString(36)}`;
  const { data: onboarded } = await sdk.createOrg({
    client: operator,
    throwOnError: true,
    body: { slug, name: slug, plan: 'enterprise', burst_limit_per_second: 10_000 },
  });
  const client = sdkAt(instance.url, fetch, { clientId: onboarded.oauth_client.client_id, clientSecret: onboarded.oauth_client.client_secret }).client;
  const { data: created } = await sdk.createConnector({ client, throwOnError: true, body: { name: 'items', type: 'postgresql', config: t.pgConfig } });
  for (let i = 0; i < 100; i++) {
    const { data } = await sdk.getConnector({ client, throwOnError: true, path: { connectorId: created.id } });
    if (data.status === 'active') return { slug, apiKey: onboarded.api_key.key };
    if (data.status === 'failed') throw new Error(`connector failed: ${JSON.stringify(data)}`);
    await Bun.sleep(100);
  }
  throw new Error('connector never became active');
}

function call(instance: Instance, slug: string, apiKey: string, id: number) {
  return fetch(`${instance.url}/mcp/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: ITEMS, arguments: { sql: 'SELECT name FROM items ORDER BY id' } } }),
  });
}

/** Holds ACCESS EXCLUSIVE on items in an open transaction until release() (calls on the table wait for it). */
async function lockItems(t: Targets): Promise<{ release: () => Promise<void> }> {
  const url = new URL(PG_URL);
  url.pathname = `/${t.pgConfig.database}`;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  const reserved = await sql.reserve();
  await reserved`BEGIN`;
  await reserved`LOCK TABLE items IN ACCESS EXCLUSIVE MODE`;
  return {
    release: async () => {
      await reserved`COMMIT`;
      reserved.release();
      await sql.end();
    },
  };
}

/** Waits until `n` sessions of the targets wait for a lock (calls reached the database and are in flight). */
async function waitForLockWaiters(t: Targets, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [row] = await t.pg(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (Number(row!.n) >= n) return;
    await Bun.sleep(50);
  }
  throw new Error(`fewer than ${n} calls reached the database`);
}

describe.skipIf(!hasPg)('graceful shutdown of a gateway process', () => {
  let t: Targets;
  beforeAll(async () => {
    t = await createTargets('tg_life', 'pg');
  }, 60_000);
  afterAll(async () => {
    await t?.drop();
  }, 60_000);

  test('embedded store: SIGTERM lets in-flight calls finish, refuses new connections, releases the data folder, exits 0', async () => {
    verifies('OPS-SHUTDOWN');
    const dataDir = mkdtempSync(join(tmpdir(), 'tg-life-'));
    let instance: Instance | undefined;
    try {
      instance = await startInstance('embedded', {
        TOOLGATE_DATA_DIR: dataDir,
        TOOLGATE_OPERATOR_TOKEN: OPERATOR,
        TOOLGATE_OUTBOUND_ALLOW_HOSTS: databaseAllowHosts().join(','),
        TOOLGATE_LOCK_TIMEOUT_MS: '60000',
        TOOLGATE_STATEMENT_TIMEOUT_MS: '60000',
        TOOLGATE_SHUTDOWN_DEADLINE_MS: '30000',
      });
      expect(lockHolder(dataDir)?.pid).toBe(instance.proc.pid);
      const { slug, apiKey } = await seed(instance, t);
      const lock = await lockItems(t);
      const inFlight = [1, 2, 3].map((id) => call(instance!, slug, apiKey, id));
      // The first call waits on the lock (the others wait behind its check of the statement, or on the lock too).
      await waitForLockWaiters(t, 1);
      await Bun.sleep(300);
      instance.proc.kill('SIGTERM');
      // The listener closes at once: a new connection is refused while the three calls are still waiting.
      let refused = false;
      for (let i = 0; i < 40 && !refused; i++) {
        await Bun.sleep(50);
        refused = await fetch(`${instance.url}/healthz`).then(
          () => false,
          () => true,
        );
      }
      expect(refused).toBe(true);
      await Bun.sleep(300);
      await lock.release();
      const answers = await Promise.all(inFlight);
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        const body = (await answer.json()) as any;
        expect(body.result.isError).toBeFalsy();
        expect(JSON.stringify(body.result.structuredContent)).toContain('pear');
      }
      expect(await instance.exited).toBe(0);
      expect(instance.output()).toContain('SIGTERM, shutting down (3 requests in flight');
      // The folder is free: its lock is gone, and a new process opens the same store.
      expect(lockHolder(dataDir)).toBeNull();
      const again = await startInstance('embedded-again', {
        TOOLGATE_DATA_DIR: dataDir,
        TOOLGATE_OPERATOR_TOKEN: OPERATOR,
        TOOLGATE_OUTBOUND_ALLOW_HOSTS: databaseAllowHosts().join(','),
      });
      const ready = await fetch(`${again.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', migrations: 'done' });
      again.proc.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    } finally {
      if (instance && instance.proc.exitCode === null) instance.proc.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL store: a call still running at the deadline is cut off and the process exits 0 soon after', async () => {
    verifies('OPS-SHUTDOWN');
    const db = await freshDatabase('tg_life_store');
    let instance: Instance | undefined;
    try {
      instance = await startInstance('server-store', {
        DATABASE_URL: db.url,
        TOOLGATE_SECRET_KEY: 'b'.repeat(64),
        TOOLGATE_OPERATOR_TOKEN: OPERATOR,
        TOOLGATE_OUTBOUND_ALLOW_HOSTS: databaseAllowHosts().join(','),
        TOOLGATE_LOCK_TIMEOUT_MS: '60000',
        TOOLGATE_STATEMENT_TIMEOUT_MS: '60000',
        TOOLGATE_SHUTDOWN_DEADLINE_MS: '1000',
      });
      const { slug, apiKey } = await seed(instance, t);
      const lock = await lockItems(t);
      try {
        const stuck = call(instance!, slug, apiKey, 1).then(
          (r) => r.status,
          () => 'connection closed',
        );
        await waitForLockWaiters(t, 1);
        const signalled = Date.now();
        instance.proc.kill('SIGTERM');
        expect(await instance.exited).toBe(0);
        // Deadline 1 s, then closing the store; far less than the 60 s lock timeout the call would have waited.
        expect(Date.now() - signalled).toBeLessThan(20_000);
        expect(await stuck).toBe('connection closed');
        expect(instance.output()).toContain('requests still in flight at the deadline');
      } finally {
        await lock.release();
      }
    } finally {
      if (instance && instance.proc.exitCode === null) instance.proc.kill('SIGKILL');
      await instance?.exited;
      await db.drop();
    }
  });
});
