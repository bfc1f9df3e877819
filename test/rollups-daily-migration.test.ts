/**
 * Migration 30 (issue 42 item 3, docs/decisions/0412): a store upgraded from migration 29 with months of audit rows
 * keeps every figure. The latency roll-ups are re-bucketed (logarithmic buckets, a bucket's count the sum of the
 * durations it takes in), and the daily level is built from the hours before the last one: each day holds the sums of
 * its folded hours. Rows written after the upgrade for a folded hour land in both levels; the last hour is folded by
 * the gateway's fold. Run on a real PostgreSQL store.
 */
import { describe, expect, test } from 'bun:test';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { bindAuditKey, deriveAuditMacKey } from '../src/audit/mac.ts';
import { appendAudit, type AuditInput } from '../src/audit/repository.ts';
import { foldRollupHours } from '../src/audit/rollup-fold-statements.ts';
import { migrate, type Db, type Store } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';
import * as schema from '../src/store/schema.ts';
import { freshDatabase } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

const hasPg = await serviceAvailable('postgres');
const HOUR = 3_600_000;

const call = (orgId: string, i: number): AuditInput => ({
  orgId,
  action: i % 7 === 0 ? 'tool.call_refused' : 'tool.called',
  actor: { type: 'api_key', id: `key-${i % 3}` },
  targetType: 'tool',
  targetId: `tool_${i % 4}`,
  outcome: i % 7 === 0 ? 'refused' : i % 5 === 0 ? 'error' : 'success',
  details: { connector_id: 'c-1', duration_ms: Math.round(((i * 7919) % 5000) + 1) / 10, counted: i % 7 !== 0 },
});

/** Rows where a folded day and the sums of its hours differ, per level (all 0: the days hold their hours' sums). */
const daysDiffer = async (client: postgres.Sql) =>
  (
    await client`SELECT
      (SELECT count(*) FROM (
        (SELECT org_id, audit_day_of(hour), action, outcome, tool_name, connector_id, actor_type, actor_id, sum(events), sum(counted)
          FROM audit_rollups WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
         EXCEPT SELECT org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted FROM audit_rollups_daily)
        UNION ALL
        (SELECT org_id, day, action, outcome, tool_name, connector_id, actor_type, actor_id, events, counted FROM audit_rollups_daily
         EXCEPT SELECT org_id, audit_day_of(hour), action, outcome, tool_name, connector_id, actor_type, actor_id, sum(events), sum(counted)
          FROM audit_rollups WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8)) a)::int AS counts,
      (SELECT count(*) FROM (
        (SELECT org_id, audit_day_of(hour), tool_name, connector_id, duration_ms, sum(calls) FROM audit_rollup_latency WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5
         EXCEPT SELECT org_id, day, tool_name, connector_id, duration_ms, calls FROM audit_rollup_latency_daily)
        UNION ALL
        (SELECT org_id, day, tool_name, connector_id, duration_ms, calls FROM audit_rollup_latency_daily
         EXCEPT SELECT org_id, audit_day_of(hour), tool_name, connector_id, duration_ms, sum(calls) FROM audit_rollup_latency WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5)) l)::int AS tools,
      (SELECT count(*) FROM (
        (SELECT org_id, audit_day_of(hour), actor_type, actor_id, duration_ms, sum(calls) FROM audit_rollup_agent_latency WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5
         EXCEPT SELECT org_id, day, actor_type, actor_id, duration_ms, calls FROM audit_rollup_agent_latency_daily)
        UNION ALL
        (SELECT org_id, day, actor_type, actor_id, duration_ms, calls FROM audit_rollup_agent_latency_daily
         EXCEPT SELECT org_id, audit_day_of(hour), actor_type, actor_id, duration_ms, sum(calls) FROM audit_rollup_agent_latency WHERE hour < (SELECT folded_before FROM audit_rollup_days) GROUP BY 1, 2, 3, 4, 5)) g)::int AS agents`
  )[0];

describe.skipIf(!hasPg)('migration 30: daily roll-ups and logarithmic latency buckets', () => {
  test('re-buckets the latencies, builds the days from the hours, and later rows land in both', async () => {
    const fresh = await freshDatabase('tg_m30');
    const client = postgres(fresh.url, { max: 2, onnotice: () => {} });
    try {
      const db = drizzle(client, { schema }) as unknown as Db;
      const store = { db, kind: 'postgres', execScript: async (s: string) => void (await client.unsafe(s)), close: async () => {} } as Store;
      bindAuditKey(db, deriveAuditMacKey(new Uint8Array(32).fill(7)));
      await migrate(
        store,
        migrations.filter((m) => m.version < 30),
      );
      const orgId = crypto.randomUUID();
      await client`INSERT INTO orgs (id, slug, name, plan, subscription_status, provision_status) VALUES (${orgId}, ${`m30-${orgId.slice(0, 8)}`}, 'M30', 'enterprise', 'active', 'provisioned')`;
      // 5 days of calls, 6 batches a day, under migration 29's roll-ups (exact tool latencies).
      const start = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - 4 * 24 * HOUR;
      for (let b = 0; b < 30; b++) {
        await appendAudit(
          db,
          Array.from({ length: 40 }, (_, k) => call(orgId, b * 40 + k)),
          new Date(start + b * 4 * HOUR + 60_000),
        );
      }
      const distinctBefore = Number((await client`SELECT count(DISTINCT duration_ms) AS n FROM audit_rollup_latency WHERE org_id = ${orgId}`)[0]!.n);
      const totalBefore = Number((await client`SELECT sum(calls) AS n FROM audit_rollup_latency WHERE org_id = ${orgId}`)[0]!.n);

      expect(
        await migrate(
          store,
          migrations.filter((m) => m.version <= 30),
        ),
      ).toEqual([30]);

      // Re-bucketed: the same calls in fewer keys, each key a bucket's value; every hour's bucket counts are what a
      // scan of the rows with the new bucket function gives.
      const distinctAfter = Number((await client`SELECT count(DISTINCT duration_ms) AS n FROM audit_rollup_latency WHERE org_id = ${orgId}`)[0]!.n);
      expect(Number((await client`SELECT sum(calls) AS n FROM audit_rollup_latency WHERE org_id = ${orgId}`)[0]!.n)).toBe(totalBefore);
      expect(distinctAfter).toBeLessThan(distinctBefore / 4);
      // The agent roll-up kept durations above 100 ms to 3 significant digits before (decision 0391): re-bucketed from
      // those, as the migration does; the tool roll-up kept them exactly.
      const d = `(details->>'duration_ms')::float8`;
      const agentKept = `audit_latency_bucket(CASE WHEN ${d} < 100 THEN ${d} ELSE round(${d}::numeric, 2 - floor(log(${d}::numeric))::int)::float8 END)`;
      const scanned = async (table: string, by: string, bucket = `audit_latency_bucket(${d})`) =>
        client.unsafe(
          `SELECT count(*)::int AS n FROM (
            (SELECT org_id, audit_hour_of(created_at) AS hour, ${by} AS k, ${bucket} AS d, count(*) AS calls
              FROM audit_events WHERE org_id = $1 AND action = 'tool.called' AND outcome NOT IN ('held', 'refused') GROUP BY 1, 2, 3, 4
            EXCEPT SELECT org_id, hour, ${table === 'audit_rollup_latency' ? 'tool_name' : 'actor_id'}, duration_ms, calls FROM ${table} WHERE org_id = $1)
            UNION ALL
            (SELECT org_id, hour, ${table === 'audit_rollup_latency' ? 'tool_name' : 'actor_id'}, duration_ms, calls FROM ${table} WHERE org_id = $1
            EXCEPT SELECT org_id, audit_hour_of(created_at), ${by}, ${bucket}, count(*)
              FROM audit_events WHERE org_id = $1 AND action = 'tool.called' AND outcome NOT IN ('held', 'refused') GROUP BY 1, 2, 3, 4)) d`,
          [orgId],
        );
      const differing = async (agentBucket?: string) => [
        (await scanned('audit_rollup_latency', 'target_id'))[0]!.n,
        (await scanned('audit_rollup_agent_latency', 'actor_id', agentBucket))[0]!.n,
      ];
      expect(await differing(agentKept)).toEqual([0, 0]);

      // Each day holds the sums of its hours before the last one (audit_rollup_days), at every level.
      expect(await daysDiffer(client)).toEqual({ counts: 0, tools: 0, agents: 0 });
      expect(Number((await client`SELECT count(*) AS n FROM audit_rollups_daily WHERE org_id = ${orgId}`)[0]!.n)).toBeGreaterThan(0);

      // Rows written after the upgrade for hours already folded (today's first minutes, a day before), then the oldest
      // day deleted (retention).
      await appendAudit(
        db,
        Array.from({ length: 50 }, (_, k) => call(orgId, 5000 + k)),
        new Date(start + 4 * 24 * HOUR + 90_000),
      );
      await appendAudit(
        db,
        Array.from({ length: 50 }, (_, k) => call(orgId, 6000 + k)),
        new Date(start + 24 * HOUR + 7 * HOUR),
      );
      await client`DELETE FROM audit_events WHERE org_id = ${orgId} AND created_at < ${new Date(start + 24 * HOUR).toISOString()}::timestamptz`;
      // Latencies of the later rows by the new buckets alone: compare the tool roll-up and the days.
      expect((await differing(agentKept))[0]).toBe(0);
      expect(await daysDiffer(client)).toEqual({ counts: 0, tools: 0, agents: 0 });
      expect(
        Number(
          (
            await client`SELECT count(*) AS n FROM audit_rollups_daily WHERE org_id = ${orgId} AND day < ${new Date(start + 24 * HOUR).toISOString()}::timestamptz`
          )[0]!.n,
        ),
      ).toBe(0);
      // The last hour folded by the gateway's fold (no margin): the days still hold their hours' sums.
      expect(await foldRollupHours(db, '0 seconds')).toBe(1);
      expect(await daysDiffer(client)).toEqual({ counts: 0, tools: 0, agents: 0 });
    } finally {
      await client.end();
      await fresh.drop();
    }
  }, 60_000);

  test('a fold racing writes of the day it folds loses none of them (the fold lock)', async () => {
    const fresh = await freshDatabase('tg_m30_race');
    const client = postgres(fresh.url, { max: 8, onnotice: () => {} });
    try {
      const db = drizzle(client, { schema }) as unknown as Db;
      const store = { db, kind: 'postgres', execScript: async (s: string) => void (await client.unsafe(s)), close: async () => {} } as Store;
      bindAuditKey(db, deriveAuditMacKey(new Uint8Array(32).fill(9)));
      await migrate(store);
      const orgIds = [crypto.randomUUID(), crypto.randomUUID()];
      for (const id of orgIds)
        await client`INSERT INTO orgs (id, slug, name, plan, subscription_status, provision_status) VALUES (${id}, ${`race-${id.slice(0, 8)}`}, 'Race', 'enterprise', 'active', 'provisioned')`;
      const yesterday = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - 24 * HOUR;
      let written = 0;
      for (let round = 0; round < 8; round++) {
        // Yesterday not folded yet; then writers add rows of yesterday (a late backlog) while the fold runs.
        await client`DELETE FROM audit_rollups_daily WHERE day >= ${new Date(yesterday).toISOString()}::timestamptz`;
        await client`DELETE FROM audit_rollup_latency_daily WHERE day >= ${new Date(yesterday).toISOString()}::timestamptz`;
        await client`DELETE FROM audit_rollup_agent_latency_daily WHERE day >= ${new Date(yesterday).toISOString()}::timestamptz`;
        await client`UPDATE audit_rollup_days SET folded_before = ${new Date(yesterday).toISOString()}::timestamptz`;
        const writers = orgIds.map(async (orgId, o) => {
          for (let k = 0; k < 6; k++) {
            await appendAudit(
              db,
              Array.from({ length: 10 }, (_, i) => call(orgId, round * 1000 + o * 100 + k * 10 + i)),
              new Date(yesterday + ((round * 6 + k) % 23) * HOUR + 1000),
            );
            written += 10;
          }
        });
        const fold = (async () => {
          await Bun.sleep(round * 3);
          return foldRollupHours(db, '0 seconds');
        })();
        await Promise.all([...writers, fold]);
        expect(await daysDiffer(client)).toEqual({ counts: 0, tools: 0, agents: 0 });
      }
      // Every row written is in yesterday's days, which the last fold made.
      const [day] =
        await client`SELECT coalesce(sum(events), 0)::int AS n FROM audit_rollups_daily WHERE day = ${new Date(yesterday).toISOString()}::timestamptz`;
      expect(day!.n).toBe(written);
    } finally {
      await client.end();
      await fresh.drop();
    }
  }, 60_000);
});
