/**
 * Issue 42 item 3: the insights and billing usage read hourly roll-ups (audit_rollups, audit_rollup_latency, migration
 * 23; per agent and per refused statement, migration 25, issue 41 item 3) kept by a trigger as rows are sealed, and
 * give what a scan of the raw log gives over the same rows: rows sealed
 * by a later UPDATE (the hot path) and rows inserted sealed (appendAudit), spread over days and hours, of several orgs,
 * tools, connectors, agents and outcomes; then again after the oldest rows were deleted.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { insightFigures, insightSeries } from '../src/audit/insights-statements.ts';
import { agentFigures, countedCallsByAgent } from '../src/audit/agent-insights-statements.ts';
import { refusalsByReason, refusedFingerprints } from '../src/audit/refusal-insights-statements.ts';
import { appendAudit, insertUnsealed, type AuditInput } from '../src/audit/repository.ts';
import { foldRollupHours, pruneRollupHours, ROLLUP_HOURS_KEPT_MS } from '../src/audit/rollup-fold-statements.ts';
import { sealPending } from '../src/audit/seal.ts';
import { countedCallsByConnector } from '../src/billing/repository.ts';
import { rowsOf, type Queryable } from '../src/store/db.ts';
import { onboard, startTestGateway, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(120_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('audit-rollups.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; its suite is skipped (PGlite runs)');

const HOUR = 3_600_000;

/** Durations as the latency roll-ups keep them: their logarithmic bucket (decision 0412). */
const kept = sql`audit_latency_bucket((details->>'duration_ms')::float8)`;

/** The insights as they were computed before the roll-ups: a scan of the window's sealed rows (durations bucketed). */
async function scanFigures(db: Queryable, orgId: string, since: Date) {
  const ran = sql`action = 'tool.called' AND outcome NOT IN ('held', 'refused')`;
  const rows = rowsOf<Record<string, unknown>>(
    await db.execute(sql`SELECT target_id AS tool_name, details->>'connector_id' AS connector_id,
        GROUPING(target_id, details->>'connector_id') AS level,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused') AS calls,
        count(*) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused') AS refusals,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'error') AS errors,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'held') AS held,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY ${kept}) FILTER (WHERE ${ran}) AS p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY ${kept}) FILTER (WHERE ${ran}) AS p95
      FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'tool.call_refused') AND created_at >= ${since.toISOString()}::timestamptz
        AND seq IS NOT NULL AND refused_at IS NULL
      GROUP BY GROUPING SETS ((target_id, details->>'connector_id'), (details->>'connector_id'), ())
      ORDER BY level DESC, calls DESC, refusals DESC, tool_name, connector_id`),
  );
  const ms = (v: unknown) => (v === null ? null : Math.round(Number(v) * 10) / 10);
  const fig = (r: Record<string, unknown>) => ({
    calls: Number(r.calls),
    refusals: Number(r.refusals),
    errors: Number(r.errors),
    held: Number(r.held),
    p50_ms: ms(r.p50),
    p95_ms: ms(r.p95),
  });
  const total = rows.find((r) => Number(r.level) === 3)!;
  return {
    totals: fig(total),
    byConnector: rows.filter((r) => Number(r.level) === 2).map((r) => ({ connector_id: r.connector_id, ...fig(r) })),
    byTool: rows
      .filter((r) => Number(r.level) === 0)
      .slice(0, 100)
      .map((r) => ({ tool_name: r.tool_name ?? '', connector_id: r.connector_id, ...fig(r) })),
  };
}

async function scanSeries(db: Queryable, orgId: string, since: Date, bucket: 'hour' | 'day') {
  const rows = rowsOf<Record<string, unknown>>(
    await db.execute(sql`SELECT to_char(date_trunc(${bucket}, created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:00:00.000"Z"') AS start,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused') AS calls,
        count(*) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused') AS refusals,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'error') AS errors
      FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'tool.call_refused') AND created_at >= ${since.toISOString()}::timestamptz
        AND seq IS NOT NULL AND refused_at IS NULL
      GROUP BY 1 ORDER BY 1`),
  );
  return rows.map((r) => ({ start: r.start, calls: Number(r.calls), refusals: Number(r.refusals), errors: Number(r.errors) }));
}

/** Billing's breakdown as it was computed before the roll-ups (committed rows not refused, sealed or not). */
async function scanCounted(db: Queryable, orgId: string, start: string) {
  const rows = rowsOf<{ connector_id: string | null; n: string | number }>(
    await db.execute(sql`SELECT details->>'connector_id' AS connector_id, count(*) AS n FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'approval.executed', 'approval.failed') AND details->>'counted' = 'true'
        AND refused_at IS NULL AND created_at >= ${`${start}T00:00:00Z`}::timestamptz
      GROUP BY 1 ORDER BY count(*) DESC, 1`),
  );
  return rows.map((r) => ({ connectorId: r.connector_id, calls: Number(r.n) }));
}

/** Per agent, as a scan gives it; durations taken as the agent roll-up keeps them (bucketed, decision 0412). */
async function scanAgents(db: Queryable, orgId: string, since: Date) {
  const ran = sql`action = 'tool.called' AND outcome NOT IN ('held', 'refused') AND details->>'duration_ms' IS NOT NULL`;
  const rows = rowsOf<Record<string, unknown>>(
    await db.execute(sql`SELECT actor_type, coalesce(actor_id, '') AS actor_id,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome <> 'refused') AS calls,
        count(*) FILTER (WHERE action = 'tool.call_refused' OR outcome = 'refused') AS refusals,
        count(*) FILTER (WHERE action = 'tool.called' AND outcome = 'error') AS errors,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY ${kept}) FILTER (WHERE ${ran}) AS p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY ${kept}) FILTER (WHERE ${ran}) AS p95
      FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'tool.call_refused') AND created_at >= ${since.toISOString()}::timestamptz
        AND seq IS NOT NULL AND refused_at IS NULL
      GROUP BY 1, 2 ORDER BY calls DESC, refusals DESC, 1, 2`),
  );
  const ms = (v: unknown) => (v === null ? null : Math.round(Number(v) * 10) / 10);
  return rows.map((r) => ({
    agent: { type: String(r.actor_type), id: r.actor_id === '' ? null : String(r.actor_id) },
    calls: Number(r.calls),
    refusals: Number(r.refusals),
    errors: Number(r.errors),
    p50_ms: ms(r.p50),
    p95_ms: ms(r.p95),
  }));
}

async function scanCountedByAgent(db: Queryable, orgId: string, start: string) {
  const rows = rowsOf<{ actor_type: string; actor_id: string | null; n: string | number }>(
    await db.execute(sql`SELECT actor_type, actor_id, count(*) AS n FROM audit_events
      WHERE org_id = ${orgId} AND action IN ('tool.called', 'approval.executed', 'approval.failed') AND details->>'counted' = 'true'
        AND refused_at IS NULL AND created_at >= ${`${start}T00:00:00Z`}::timestamptz
      GROUP BY 1, 2 ORDER BY count(*) DESC, 1, coalesce(actor_id, '')`),
  );
  return rows.map((r) => ({ agent: { type: r.actor_type, id: r.actor_id }, calls: Number(r.n) }));
}

/** Refusals by reason class, then the tool.call_refused rows (class null), as a scan gives them. */
async function scanReasons(db: Queryable, orgId: string, since: Date) {
  const rows = rowsOf<{ reason_class: string | null; n: string | number }>(
    await db.execute(sql`SELECT * FROM (
        SELECT details->>'reason_class' AS reason_class, count(*) AS n FROM audit_events
        WHERE org_id = ${orgId} AND action = 'tool.called' AND outcome = 'refused' AND details->>'reason_class' IS NOT NULL
          AND created_at >= ${since.toISOString()}::timestamptz AND seq IS NOT NULL AND refused_at IS NULL GROUP BY 1
        UNION ALL
        SELECT NULL, count(*) FROM audit_events
        WHERE org_id = ${orgId} AND action = 'tool.call_refused' AND created_at >= ${since.toISOString()}::timestamptz
          AND seq IS NOT NULL AND refused_at IS NULL HAVING count(*) > 0) r
      ORDER BY reason_class IS NULL, n DESC, reason_class`),
  );
  return rows.map((r) => ({ reason_class: r.reason_class, refusals: Number(r.n) }));
}

/** The most refused fingerprints (of a tool), with the text of each one's latest row, as a scan gives them. */
async function scanFingerprints(db: Queryable, orgId: string, since: Date, tool?: string) {
  const ofTool = tool === undefined ? sql`` : sql`AND target_id = ${tool}`;
  const rows = rowsOf<{ id: string; n: string | number; classes: string | null }>(
    await db.execute(sql`SELECT details->>'fingerprint_id' AS id, count(*) AS n,
        string_agg(DISTINCT details->>'reason_class', ',' ORDER BY details->>'reason_class') AS classes
      FROM audit_events
      WHERE org_id = ${orgId} AND action = 'tool.called' AND outcome = 'refused' AND details->>'fingerprint_id' IS NOT NULL ${ofTool}
        AND created_at >= ${since.toISOString()}::timestamptz AND seq IS NOT NULL AND refused_at IS NULL
      GROUP BY 1 ORDER BY n DESC, id LIMIT 10`),
  );
  const figures = [];
  for (const r of rows) {
    const [latest] = rowsOf<{ text: string | null }>(
      await db.execute(sql`SELECT details->>'fingerprint' AS text FROM audit_events
        WHERE org_id = ${orgId} AND details->>'fingerprint_id' = ${r.id} AND seq IS NOT NULL ORDER BY created_at DESC, seq DESC LIMIT 1`),
    );
    figures.push({ fingerprint_id: r.id, fingerprint: latest?.text ?? null, reason_classes: r.classes ? r.classes.split(',') : [], refusals: Number(r.n) });
  }
  return figures;
}

/** A deterministic mix of rows: tools, connectors (and none), agents, outcomes, durations at 0.1 ms, counted or not. */
function mixedRows(orgId: string, n: number, seed: number): AuditInput[] {
  let state = seed;
  const rand = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
  const connectors = ['6f1c0c52-0000-4000-8000-000000000001', '6f1c0c52-0000-4000-8000-000000000002', undefined];
  const refusal = (r: () => number) => {
    const fingerprint = ['delete from items where id = ?', 'select * from users', 'drop table items', ''][Math.floor(r() * 4)]!;
    return {
      reason_class: ['write', 'ddl', 'other_table'][Math.floor(r() * 3)],
      // Some rows keep the text (audit_statements fingerprint), some only its id (none), some have none (no statement).
      ...(fingerprint ? { fingerprint_id: fingerprint.length.toString(16).padStart(16, '0'), ...(r() < 0.5 ? { fingerprint } : {}) } : {}),
    };
  };
  return Array.from({ length: n }, () => {
    const action = pick(['tool.called', 'tool.called', 'tool.called', 'tool.call_refused', 'approval.executed', 'approval.failed', 'connector.created']);
    const outcome = pick(['success', 'success', 'success', 'error', 'held', 'refused'] as const);
    const connector = pick(connectors);
    return {
      orgId,
      action,
      actor: pick([
        { type: 'api_key', id: 'key-a' },
        { type: 'oauth_client', id: 'client-b' },
        { type: 'user', id: 'ann@example.com' },
        { type: 'system', id: null },
      ] as const),
      targetType: 'tool',
      targetId: rand() < 0.05 ? undefined : pick(['query_items', 'query_orders', 'search', 'nothing']),
      outcome,
      details: {
        ...(connector ? { connector_id: connector } : {}),
        // Mostly under 40 ms, some up to 4 s: many distinct durations per bucket.
        ...(rand() < 0.9 ? { duration_ms: Math.round(rand() * (rand() < 0.8 ? 400 : 40_000)) / 10 } : {}),
        counted: rand() < 0.7,
        ...(outcome === 'refused' ? refusal(rand) : {}),
      },
    };
  });
}

for (const kind of ['pglite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !hasPg)(`roll-ups equal a scan of the same rows (${kind})`, () => {
    let g: TestGateway;
    let orgs: string[];
    const now = new Date();
    const monthStart = `${now.toISOString().slice(0, 7)}-01`;

    beforeAll(async () => {
      g = await startTestGateway(kind);
      orgs = [(await onboard(g)).orgId, (await onboard(g)).orgId];
      const db = g.deps.store.db;
      // 40 hours back, 3 batches per hour and org: sealed later by UPDATE (hot path) or inserted sealed (appendAudit).
      for (let h = 40; h >= 0; h--) {
        for (const [i, orgId] of orgs.entries()) {
          const at = new Date(now.getTime() - h * HOUR - (i + 1) * 60_000);
          await insertUnsealed(db, mixedRows(orgId, 12, h * 7 + i + 1), at);
          await insertUnsealed(db, mixedRows(orgId, 5, h * 11 + i + 3), new Date(at.getTime() + 1000));
          await appendAudit(db, mixedRows(orgId, 3, h * 13 + i + 5), new Date(at.getTime() + 2000));
        }
      }
      // A counted call written beside the gateway (no MAC): counted from its commit, until the sealer refuses it.
      await db.execute(sql`INSERT INTO audit_events (org_id, action, actor_type, target_id, outcome, details)
        VALUES (${orgs[1]!}, 'tool.called', 'api_key', 'query_items', 'success', '{"counted": true, "connector_id": "forged"}'::jsonb)`);
      expect((await countedCallsByConnector(db, orgs[1]!, monthStart)).some((r) => r.connectorId === 'forged')).toBe(true);
      while ((await sealPending(db, 500)) > 0);
      expect((await countedCallsByConnector(db, orgs[1]!, monthStart)).some((r) => r.connectorId === 'forged')).toBe(false);
      // Rows committed and not sealed yet: counted calls for billing, not in the insights yet.
      await insertUnsealed(db, mixedRows(orgs[0]!, 4, 99), now);
    });
    afterAll(async () => g?.close(), 30_000);

    const compare = async () => {
      const db = g.deps.store.db;
      // Windows that start at an hour (the hourly roll-ups) and at a day (the daily ones: today, 2 and 3 days).
      const today = Math.floor(now.getTime() / (24 * HOUR)) * 24 * HOUR;
      const windows = [
        ...[1, 24, 48].map((hours) => new Date(Math.floor(now.getTime() / HOUR) * HOUR - (hours - 1) * HOUR)),
        ...[0, 1, 2].map((days) => new Date(today - days * 24 * HOUR)),
      ];
      for (const orgId of orgs) {
        for (const since of windows) {
          expect(await insightFigures(db, orgId, since, 100)).toEqual((await scanFigures(db, orgId, since)) as never);
          for (const bucket of ['hour', 'day'] as const)
            expect(await insightSeries(db, orgId, since, bucket)).toEqual((await scanSeries(db, orgId, since, bucket)) as never);
        }
        const counted = await countedCallsByConnector(db, orgId, monthStart);
        expect(counted.map((r) => ({ connectorId: r.connectorId, calls: r.calls }))).toEqual(await scanCounted(db, orgId, monthStart));
        for (const since of [windows[0]!, windows[2]!, windows[3]!, windows[5]!]) {
          expect(await agentFigures(db, orgId, since, 100)).toEqual(await scanAgents(db, orgId, since));
          expect(await refusalsByReason(db, orgId, since)).toEqual(await scanReasons(db, orgId, since));
          expect(await refusedFingerprints(db, orgId, since, 10)).toEqual(await scanFingerprints(db, orgId, since));
          expect(await refusedFingerprints(db, orgId, since, 10, 'query_items')).toEqual(await scanFingerprints(db, orgId, since, 'query_items'));
        }
        expect(await countedCallsByAgent(db, orgId, new Date(`${monthStart}T00:00:00Z`))).toEqual(await scanCountedByAgent(db, orgId, monthStart));
      }
    };

    test('insights and billing usage from the roll-ups equal the scan', async () => {
      const figures = await insightFigures(g.deps.store.db, orgs[0]!, new Date(now.getTime() - 48 * HOUR), 100);
      expect(figures.totals.calls).toBeGreaterThan(100);
      expect(figures.totals.p95_ms).not.toBeNull();
      const since = new Date(now.getTime() - 48 * HOUR);
      // The mix has what the comparisons need: agents with latencies, classes, fingerprints (of the tool too).
      expect((await agentFigures(g.deps.store.db, orgs[0]!, since, 100)).filter((a) => a.p95_ms !== null).length).toBeGreaterThanOrEqual(3);
      expect((await refusalsByReason(g.deps.store.db, orgs[0]!, since)).length).toBe(4);
      expect((await refusedFingerprints(g.deps.store.db, orgs[0]!, since, 10, 'query_items')).length).toBe(3);
      await compare();
    });

    test('hours folded into their days give the same figures; a window that starts at a day reads the days', async () => {
      const db = g.deps.store.db;
      const orgId = orgs[0]!;
      const DAY = 24 * HOUR;
      const today = new Date(Math.floor(now.getTime() / DAY) * DAY);
      const yesterday = new Date(today.getTime() - DAY);
      // Every hour that is over folded into its day (no margin): the current hour stays in the hours; the figures do
      // not move.
      await foldRollupHours(db, '0 seconds');
      const [days] = rowsOf<{ folded_before: string }>(await db.execute(sql`SELECT folded_before::text FROM audit_rollup_days`));
      expect(new Date(days!.folded_before).getTime()).toBe(Math.floor(Date.now() / HOUR) * HOUR);
      expect(await foldRollupHours(db, '0 seconds')).toBe(0);
      await compare();
      const count = async (table: string) =>
        Number(rowsOf<{ n: string }>(await db.execute(sql`SELECT count(*) AS n FROM ${sql.raw(table)} WHERE org_id = ${orgId}`))[0]!.n);
      // The days hold the hours' sums in fewer rows.
      for (const [daily, hourly] of [
        ['audit_rollups_daily', 'audit_rollups'],
        ['audit_rollup_latency_daily', 'audit_rollup_latency'],
        ['audit_rollup_agent_latency_daily', 'audit_rollup_agent_latency'],
      ] as const) {
        expect(await count(daily)).toBeGreaterThan(0);
        expect(await count(daily)).toBeLessThan(await count(hourly));
      }
      // A folded day's row changed by hand shows in a window from that day, not in one from an hour of it.
      const hourAfter = new Date(yesterday.getTime() + HOUR);
      const [key] = rowsOf<{ tool_name: string; connector_id: string; actor_type: string; actor_id: string }>(
        await db.execute(sql`SELECT tool_name, connector_id, actor_type, actor_id FROM audit_rollups_daily
          WHERE org_id = ${orgId} AND day = ${yesterday.toISOString()}::timestamptz AND action = 'tool.called' AND outcome = 'success' LIMIT 1`),
      );
      expect(key).toBeDefined();
      const bump = (by: number) =>
        db.execute(sql`UPDATE audit_rollups_daily SET events = events + ${by} WHERE org_id = ${orgId} AND day = ${yesterday.toISOString()}::timestamptz
          AND action = 'tool.called' AND outcome = 'success' AND tool_name = ${key!.tool_name} AND connector_id = ${key!.connector_id}
          AND actor_type = ${key!.actor_type} AND actor_id = ${key!.actor_id}`);
      const before = [(await insightFigures(db, orgId, yesterday, 100)).totals.calls, (await insightFigures(db, orgId, hourAfter, 100)).totals.calls];
      await bump(1000);
      try {
        expect((await insightFigures(db, orgId, yesterday, 100)).totals.calls).toBe(before[0]! + 1000);
        expect((await insightFigures(db, orgId, hourAfter, 100)).totals.calls).toBe(before[1]!);
      } finally {
        await bump(-1000);
      }
      // Rows written now for folded hours (a late seal of an old backlog) land in their days too.
      await appendAudit(db, mixedRows(orgId, 30, 4242), new Date(yesterday.getTime() + 5 * HOUR));
      await insertUnsealed(db, mixedRows(orgId, 20, 4343), new Date(yesterday.getTime() - 3 * HOUR));
      while ((await sealPending(db, 500)) > 0);
      await compare();
    });

    test('after the oldest rows were deleted (as retention deletes them), they still agree', async () => {
      const db = g.deps.store.db;
      const cutoff = new Date(now.getTime() - 20 * HOUR).toISOString();
      const deleted = rowsOf(await db.execute(sql`DELETE FROM audit_events WHERE org_id = ${orgs[0]!} AND created_at < ${cutoff}::timestamptz RETURNING 1`));
      expect(deleted.length).toBeGreaterThan(100);
      await compare();
    });

    test('folded hours older than three days are pruned (decision 0414); windows from a day still agree, and changes to a pruned hour land in its day', async () => {
      const db = g.deps.store.db;
      const orgId = orgs[1]!;
      const DAY = 24 * HOUR;
      const today = Math.floor(Date.now() / DAY) * DAY;
      // Rows of 4, 5 and 6 days ago (hours the folder folds, then prunes) and of 2 days ago (kept).
      for (const [i, back] of [6, 5, 4, 2].entries()) {
        await appendAudit(db, mixedRows(orgId, 40, 900 + i), new Date(today - back * DAY + 7 * HOUR));
        await insertUnsealed(db, mixedRows(orgId, 20, 950 + i), new Date(today - back * DAY + 9 * HOUR));
      }
      while ((await sealPending(db, 500)) > 0);
      const hours = async (table: string, before: number) =>
        Number(
          rowsOf<{ n: string }>(
            await db.execute(sql`SELECT count(*) AS n FROM ${sql.raw(table)} WHERE hour < ${new Date(before).toISOString()}::timestamptz`),
          )[0]!.n,
        );
      const TABLES = ['audit_rollups', 'audit_rollup_latency', 'audit_rollup_agent_latency'];
      const horizon = Math.floor((Date.now() - ROLLUP_HOURS_KEPT_MS) / HOUR) * HOUR;
      // (Their hours were folded by the test above: rows of folded hours land in their days as they are sealed.)
      for (const table of TABLES) expect(await hours(table, horizon)).toBeGreaterThan(0);
      const sixDays = new Date(today - 6 * DAY);
      const windows = [sixDays, new Date(today - 5 * DAY), new Date(today - 2 * DAY)];
      const before = await Promise.all(windows.map((since) => insightFigures(db, orgId, since, 100)));
      const kept = (await hours('audit_rollups', Date.now() + HOUR)) - (await hours('audit_rollups', horizon));
      await pruneRollupHours(db);
      for (const table of TABLES) expect(await hours(table, horizon)).toBe(0);
      // The hours within the three days stay (the insights' last 24 hours read them).
      expect(await hours('audit_rollups', Date.now() + HOUR)).toBe(kept);
      for (const [i, since] of windows.entries()) {
        expect(await insightFigures(db, orgId, since, 100)).toEqual(before[i]!);
        expect(await insightFigures(db, orgId, since, 100)).toEqual((await scanFigures(db, orgId, since)) as never);
        expect(await agentFigures(db, orgId, since, 100)).toEqual(await scanAgents(db, orgId, since));
      }
      await compare();
      // A window that starts at an hour before the hours kept would miss the pruned ones: refused, never answered short.
      await expect(insightFigures(db, orgId, new Date(sixDays.getTime() + HOUR), 100)).rejects.toThrow(/hours kept/);
      // Retention deleting rows of a pruned hour, and a late seal of one: the days follow, no hourly row is left
      // negative, a positive one goes at the next prune.
      await db.execute(sql`DELETE FROM audit_events WHERE org_id = ${orgId} AND created_at < ${new Date(today - 5 * DAY).toISOString()}::timestamptz`);
      await insertUnsealed(db, mixedRows(orgId, 25, 990), new Date(today - 4 * DAY + 11 * HOUR));
      while ((await sealPending(db, 500)) > 0);
      for (const since of windows) expect(await insightFigures(db, orgId, since, 100)).toEqual((await scanFigures(db, orgId, since)) as never);
      const negative = rowsOf(
        await db.execute(sql`SELECT 1 FROM audit_rollups WHERE events < 0 OR counted < 0
        UNION ALL SELECT 1 FROM audit_rollup_latency WHERE calls < 0 UNION ALL SELECT 1 FROM audit_rollup_agent_latency WHERE calls < 0`),
      );
      expect(negative).toEqual([]);
      await pruneRollupHours(db);
      for (const table of TABLES) expect(await hours(table, horizon)).toBe(0);
      await compare();
      // Hours not folded yet are never pruned, whatever the age asked for (here none: every folded hour goes).
      const [days] = rowsOf<{ folded_before: string }>(await db.execute(sql`SELECT folded_before::text FROM audit_rollup_days`));
      const folded = new Date(days!.folded_before).getTime();
      const unfolded = (await hours('audit_rollups', Date.now() + HOUR)) - (await hours('audit_rollups', folded));
      expect(unfolded).toBeGreaterThan(0);
      await pruneRollupHours(db, 0);
      expect(await hours('audit_rollups', folded)).toBe(0);
      expect(await hours('audit_rollups', Date.now() + HOUR)).toBe(unfolded);
    });
  });
}
