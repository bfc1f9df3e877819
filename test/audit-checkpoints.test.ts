/**
 * Issue 42 item 3, the audit log flat as it grows: `audit verify` from a verified checkpoint (decision 0348), the
 * export of a range seeking to its first hour (0348), a backlog sealed batch after batch from a cursor (0349), and
 * retention in bounded batches that each move the chain's base, beside writers that keep appending (0350).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { auditExportStream } from '../src/audit/export.ts';
import { appendAudit, chainState, insertUnsealed, pruneAudit, seqBefore, type AuditInput } from '../src/audit/repository.ts';
import { sealBacklog } from '../src/audit/seal.ts';
import { verifyChain } from '../src/audit/verify.ts';
import { rowsOf } from '../src/store/db.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(120_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('audit-checkpoints.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; the suite is skipped');

const DAY = 86_400_000;
const rowsOf_ = (orgId: string, n: number, tag: string): AuditInput[] =>
  Array.from({ length: n }, (_, i) => ({ orgId, action: 'test.row', actor: { type: 'system' as const, id: null }, details: { tag, i } }));

describe.skipIf(!hasPg)('audit checkpoints (postgres)', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' });
  });
  afterAll(async () => g?.close(), 30_000);

  test('verify --incremental starts at the verified checkpoint, catches what changed after it, and a forged checkpoint is ignored', async () => {
    verifies('AUDIT-SEAL');
    const db = g.deps.store.db;
    const { orgId } = await onboard(g);
    await appendAudit(db, rowsOf_(orgId, 300, 'first'));
    const full = await verifyChain(db, orgId);
    expect(full.ok).toBe(true);
    const head = (await chainState(db, orgId)).headSeq;
    await appendAudit(db, rowsOf_(orgId, 20, 'second'));
    // Only the rows after the checkpoint are walked.
    expect(await verifyChain(db, orgId, new Date(), { incremental: true })).toEqual({ ok: true, checked: 20, fromSeq: head });
    expect(await verifyChain(db, orgId, new Date(), { incremental: true })).toEqual({ ok: true, checked: 0, fromSeq: head + 20 });

    // A row changed after the checkpoint is named by the incremental run.
    await appendAudit(db, rowsOf_(orgId, 5, 'third'));
    await db.execute(sql`UPDATE audit_events SET details = '{"tag":"changed"}' WHERE org_id = ${orgId} AND seq = ${head + 22}`);
    expect(await verifyChain(db, orgId, new Date(), { incremental: true })).toMatchObject({ ok: false, broken: { seq: head + 22 } });

    // A checkpoint moved without the key is ignored: the walk starts at the base and names the first break.
    await db.execute(sql`UPDATE audit_events SET details = '{"tag":"changed early"}' WHERE org_id = ${orgId} AND seq = 10`);
    await db.execute(sql`UPDATE audit_chains SET verified_seq = verified_seq + 3 WHERE org_id = ${orgId}`);
    expect(await verifyChain(db, orgId, new Date(), { incremental: true })).toMatchObject({ ok: false, fromSeq: 0, broken: { seq: 10 } });
  });

  test('the export of a day seeks to the day: exactly the rows since, without walking the older ones', async () => {
    verifies('AUDIT-RETENTION');
    const db = g.deps.store.db;
    const { orgId } = await onboard(g);
    // The org's chain holds only the rows below (its onboarding rows, written now, would come first in it).
    await db.execute(sql`DELETE FROM audit_events WHERE org_id = ${orgId}`);
    await db.execute(sql`DELETE FROM audit_chains WHERE org_id = ${orgId}`);
    const now = Date.now();
    for (const days of [9, 6, 3]) await appendAudit(db, rowsOf_(orgId, 200, `d${days}`), new Date(now - days * DAY));
    await appendAudit(db, rowsOf_(orgId, 30, 'today'), new Date(now - 3_600_000));
    const since = new Date(now - DAY);
    // The seek starts past every older row (they are older than a whole hour before `since`).
    const start = await seqBefore(db, orgId, since);
    const older = rowsOf<{ n: number }>(
      await db.execute(sql`SELECT count(*)::int AS n FROM audit_events WHERE org_id = ${orgId} AND created_at < ${since.toISOString()}::timestamptz`),
    )[0]!.n;
    expect(start).toBeGreaterThanOrEqual(older - 10);
    const text = await new Response(auditExportStream(db, orgId, { since }, false)).text();
    const events = (JSON.parse(text) as { events: { created_at: string; details: { tag?: string } }[] }).events;
    const expected = rowsOf<{ n: number }>(
      await db.execute(sql`SELECT count(*)::int AS n FROM audit_events WHERE org_id = ${orgId} AND created_at >= ${since.toISOString()}::timestamptz`),
    )[0]!.n;
    expect(events.length).toBe(expected);
    expect(events.filter((e) => e.details.tag === 'today')).toHaveLength(30);
    expect(events.every((e) => Date.parse(e.created_at) >= since.getTime())).toBe(true);
    // A range with no rows in it yet starts at the head.
    expect(await seqBefore(db, orgId, new Date(now + DAY))).toBe((await chainState(db, orgId)).headSeq);
  });

  test('a backlog of unsealed rows is sealed batch after batch from a cursor, all of it, and the chain verifies', async () => {
    verifies('AUDIT-SEAL');
    const db = g.deps.store.db;
    const { orgId } = await onboard(g);
    // Younger than the orphan sweep's age, so the gateway's own sweep leaves them to this one.
    const at = Date.now();
    for (let i = 0; i < 6; i++) await insertUnsealed(db, rowsOf_(orgId, 1000, `backlog${i}`), new Date(at + i));
    expect(await sealBacklog(db)).toBeGreaterThanOrEqual(6000);
    const left = rowsOf<{ n: number }>(await db.execute(sql`SELECT count(*)::int AS n FROM audit_events WHERE org_id = ${orgId} AND seq IS NULL`))[0]!;
    expect(left.n).toBe(0);
    expect(await verifyChain(db, orgId)).toMatchObject({ ok: true });
  });

  test('retention deletes in bounded batches, each moving the base, while writers append; the chain verifies after', async () => {
    verifies('AUDIT-RETENTION');
    const db = g.deps.store.db;
    const { orgId } = await onboard(g);
    await db.execute(sql`DELETE FROM audit_events WHERE org_id = ${orgId}`);
    await db.execute(sql`DELETE FROM audit_chains WHERE org_id = ${orgId}`);
    const now = Date.now();
    await appendAudit(db, rowsOf_(orgId, 230, 'old'), new Date(now - 400 * DAY));
    await appendAudit(db, rowsOf_(orgId, 10, 'young'), new Date(now - DAY));
    const bases: number[] = [];
    const writers = (async () => {
      for (let i = 0; i < 20; i++) {
        await appendAudit(db, rowsOf_(orgId, 2, `during${i}`));
        bases.push((await chainState(db, orgId)).baseSeq);
      }
    })();
    const removed = await pruneAudit(db, orgId, new Date(now - 365 * DAY), new Date(), 50);
    await writers;
    expect(removed).toBe(230);
    const state = await chainState(db, orgId);
    expect(state.baseSeq).toBe(230);
    const pruned = rowsOf<{ details: Record<string, unknown> }>(
      await db.execute(sql`SELECT details FROM audit_events WHERE org_id = ${orgId} AND action = 'audit.pruned'`),
    );
    expect(pruned.map((r) => r.details)).toEqual([expect.objectContaining({ through_seq: 230, deleted: 230 })]);
    expect(await verifyChain(db, orgId)).toEqual({ ok: true, checked: 10 + 40 + 1 });
    expect(await pruneAudit(db, orgId, new Date(now - 365 * DAY))).toBe(0);
    // The insights' and billing's roll-ups lost the deleted rows with them.
    const hours = rowsOf<{ n: string }>(
      await db.execute(
        sql`SELECT coalesce(sum(events), 0)::text AS n FROM audit_hours WHERE org_id = ${orgId} AND hour < ${new Date(now - 300 * DAY).toISOString()}::timestamptz`,
      ),
    )[0]!;
    expect(Number(hours.n)).toBe(0);
  });
});
