// Issue 15: the scale-out proof (scripts/scale-out.ts) with smaller numbers: three gateway processes on one
// PostgreSQL and Redis behind a round-robin proxy, one SIGKILLed mid-load. The script checks the store itself; the
// test asserts each of its figures so a failure names what broke.
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import { runScaleOut } from '../scripts/scale-out.ts';
import { verifies } from './requirements.ts';
import { PG_URL, REDIS_URL, serviceAvailable } from './support/services.ts';

setDefaultTimeout(300_000);
const hasPg = await serviceAvailable('postgres');
const hasRedis = await serviceAvailable('redis');

describe.skipIf(!hasPg || !hasRedis)('scale-out: three instances, one killed mid-load', () => {
  test("no lost or duplicated audit rows or approvals, burst and quota exact across the survivors, only the killed instance's calls fail", async () => {
    verifies('OPS-SCALE-OUT');
    const report = await runScaleOut({ instances: 3, calls: 240, concurrency: 12, killAt: 0.4, port: 0, pgUrl: PG_URL, redisUrl: REDIS_URL, log: () => {} });
    expect(report.otherErrors).toEqual([]);
    expect(report.answered.other).toBe(0);
    expect(report.answered.ok + report.answered.held + report.answered.cutOff).toBe(240);
    expect(report.answered.cutOff).toBeLessThanOrEqual(report.inFlightAtKill + report.routedAfterKill);
    expect(report.audit).toMatchObject({ missing: 0, duplicated: 0, unknown: 0, chainsVerified: true });
    expect(report.audit.rowsForOk).toBe(report.answered.ok + report.answered.held);
    expect(report.audit.rowsForCutOff).toBeLessThanOrEqual(report.answered.cutOff);
    expect(report.approvals.held).toBeGreaterThan(0);
    expect(report.approvals.executedOnce).toBe(report.approvals.held);
    expect(report.approvals.doubleApproveConflicts).toBe(report.approvals.held);
    expect(report.approvals.rows).toBeGreaterThanOrEqual(report.approvals.held);
    expect(report.approvals.rows).toBeLessThanOrEqual(report.approvals.held + report.answered.cutOff);
    expect(report.burst).toEqual({ limit: 20, sent: 30, passed: 20, limited: 10 });
    expect(report.quota).toMatchObject({ ran: 5, refused: 7, counter: 20_000 });
    expect(report.ok).toBe(true);
  });
});
