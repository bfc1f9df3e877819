// A pooled connection whose backend dies (terminated, server restarted, network dropped) must cost at most the calls
// that meet it: they get a clear tool error, the next ones reconnect, nothing hangs and nothing throws outside the
// call. Seen before the fix: postgres.js left the last query of a pipeline pending for ever (the call and its
// connector slot hung), and releasing the dead reserved connection made the next query throw inside a timer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import postgres from 'postgres';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import type { ExecutionContext, ToolResult } from '../../src/connectors/types.ts';

const available = await serviceAvailable('postgres');
const TIMEOUT_MS = 2000;

describe.skipIf(!available)('postgresql: a connection lost under the pool', () => {
  let t: Targets;
  let admin: postgres.Sql;
  let spec: any;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown): void => void uncaught.push(err);

  beforeAll(async () => {
    t = await createTargets('tg_loss', 'pg');
    admin = postgres(`postgres://${t.pgConfig.user}@${t.pgConfig.host}:${t.pgConfig.port}/${t.name}`, { max: 1, onnotice: () => {} });
    spec = (await postgresqlDriver.introspect('loss', t.pgConfig as any, null)).find((s) => s.name === 'query_postgresql_items');
    process.on('uncaughtException', onUncaught);
  }, 60_000);
  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await postgresqlDriver.close('loss');
    await admin?.end();
    await t?.drop();
  }, 60_000);

  const ctx = (statementTimeoutMs: number): ExecutionContext =>
    ({
      connectorId: 'loss',
      config: t.pgConfig,
      credential: null,
      allowWrite: false,
      allowDdl: false,
      readOnly: true,
      limits: { statementTimeoutMs, lockTimeoutMs: 1000, maxRows: 100, maxResultBytes: 1_000_000 },
    }) as ExecutionContext;

  /** The call, or a failure when it has not answered within the limit: a hang is the bug. */
  async function call(sql: string, statementTimeoutMs = TIMEOUT_MS): Promise<ToolResult> {
    // Past the pipeline's own deadline (statement timeout + 5 s, pipeline.ts): a call still pending then hangs.
    const hang = Bun.sleep(statementTimeoutMs + 7000).then(() => 'hung' as const);
    const result = await Promise.race([postgresqlDriver.execute(spec, { sql, limit: 10 }, ctx(statementTimeoutMs)), hang]);
    if (result === 'hung') throw new Error(`the call did not answer: ${sql}`);
    return result;
  }

  const killBackends = async (): Promise<number> =>
    (await admin.unsafe("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'toolgate' and datname = current_database()")).length;

  // Each case kills the pool's connections, then calls through one execution path: the resolution check (a new
  // statement), the one-statement read path (a statement already judged), the explicit transaction path (limits
  // that differ from the pool's session). The last two used to hang in about 1 run in 3: a reserve waiting for a
  // connection was dropped by postgres.js when a dead one closed meanwhile (see reserveConnection in pipeline.ts).
  const paths: [string, string, number][] = [
    ['the resolution check', 'SELECT id FROM items WHERE id = 2', TIMEOUT_MS],
    ['the one-statement read path', 'SELECT id FROM items WHERE id = 2', TIMEOUT_MS],
    ['the transaction path', 'SELECT id FROM items WHERE id = 2', TIMEOUT_MS + 1],
  ];
  for (const [path, sql, statementTimeoutMs] of paths) {
    test(`through ${path}: clear errors while the pool meets its dead connections, no hang, then the connector answers again`, async () => {
      expect((await call('SELECT id FROM items WHERE id = 1', statementTimeoutMs)).isError).toBeFalsy();
      // No pause: the next calls take connections before the pool has seen them close (the race that hung).
      const killed = await killBackends();
      expect(killed).toBeGreaterThan(0);
      // Calls until one answers: each dead connection may fail a call that meets it (how many depends on when the
      // pool sees each close), with the database's own words; a hang or an internal error is the bug.
      const errors: string[] = [];
      let answered: ToolResult | null = null;
      for (let i = 0; i < 2 * killed + 4 && !answered; i++) {
        const result = await call(sql, statementTimeoutMs);
        if (result.isError) errors.push(String((result.content[0] as { text?: unknown }).text));
        else answered = result;
      }
      for (const text of errors) expect(text).toMatch(/^(The database is unavailable|Toolgate could not check)/);
      for (const text of errors) expect(text).not.toMatch(/TypeError|socket\.|undefined|null is not/);
      expect(answered?.structuredContent?.rows).toEqual([{ id: 2 }]);
      // And it stays answering.
      for (let i = 0; i < 3; i++) expect((await call(sql, statementTimeoutMs)).structuredContent?.rows).toEqual([{ id: 2 }]);
      await Bun.sleep(200); // a throw inside a timer would land here
      expect(uncaught).toEqual([]);
    }, 60_000);
  }
});
