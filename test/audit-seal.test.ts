/**
 * Issue 14, sealing the hot path's audit rows: the writer seals its rows from memory (audit/seal.ts sealFromMemory),
 * with the same hash a verifier recomputes from the stored row (tricky details included), several instances seal
 * side by side without gaps or double sealing, orphans (rows their writer never sealed) are sealed by the sweep and
 * at start, and a seal that meets rows sealed elsewhere rolls back whole. Real PostgreSQL (and PGlite for the hashes).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { canonicalJson, rowHash } from '../src/audit/chain.ts';
import { AuditRecorder } from '../src/audit/recorder.ts';
import { appendAudit, insertUnsealed, type AuditInput } from '../src/audit/repository.ts';
import { ORPHAN_AGE_MS, SealConflict, sealFromMemory, sealOrphans, sealPending } from '../src/audit/seal.ts';
import { storable, storableJson } from '../src/audit/storable.ts';
import { verifyChain } from '../src/audit/verify.ts';
import { rowsOf, type Db } from '../src/store/db.ts';
import { createLogger } from '../src/util/log.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
if (!hasPg) console.warn('audit-seal.test.ts: PostgreSQL is not reachable on 127.0.0.1:5432; its suites are skipped');

/** Details a tool call could carry that jsonb and JSON handle differently from plain JS, each on its own. */
function trickyDetails(): Record<string, unknown>[] {
  const circularFree = { z: 1, a: { y: [3, { b: 2, a: 1 }], x: null }, '10': 'ten', '9': 'nine', B: 'upper', b: 'lower', é: 'e-acute', '': 'empty key' };
  return [
    circularFree,
    { text: 'naïve café – 日本語 – 👩‍👩‍👧 – \u2028\u2029 – "quoted" \\ back\\slash \t tab \n newline', rtl: 'שלום עולם' },
    { nul: 'before\u0000after', 'key\u0000nul': 'v', lone: 'a\uD800b', trailing: '\uDC00', pair: '\uD83D\uDE00' },
    {
      big: 2 ** 60,
      // biome-ignore lint/correctness/noPrecisionLoss: lossy on purpose; the seal must cover the value JavaScript holds
      bigger: 12345678901234567890,
      huge: 1.7976931348623157e308,
      tiny: 5e-324,
      small: 1e-7,
      exp: 1e21,
      negZero: -0,
      sum: 0.1 + 0.2,
      neg: -42.125,
    },
    { nonFinite: [NaN, Infinity, -Infinity], holes: [1, undefined, 3], gone: undefined, fn: () => 1, sym: Symbol('s'), date: new Date(0) },
    { deep: { c: { b: { a: { '~': 1, '!': 2, Z: 3, a: 4, '\u00ff': 5, '\u0100': 6, '😀': 7, '\uFF01': 8 } } } }, arr: [[], {}, [{}], ''] },
    // Two keys that clean to the same one (the later wins), and __proto__ (dropped, as a plain object assignment does).
    { 'dup\u0000': 1, 'dup\uFFFD': 2, ['__proto__']: { polluted: true } },
    JSON.parse('{"__proto__": {"x": 1}, "kept": true}'),
  ];
}

/** Random JSON-ish values: nested objects and arrays of strings (any code unit), numbers, booleans, null. */
function randomValue(depth: number, rand: () => number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.35) {
    const kind = Math.floor(rand() * 6);
    if (kind === 0) return Array.from({ length: Math.floor(rand() * 6) }, () => String.fromCharCode(Math.floor(rand() * 0x10000))).join('');
    if (kind === 1) return (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
    if (kind === 2) return Math.floor((rand() - 0.5) * 2 ** 62);
    if (kind === 3) return rand() < 0.5;
    if (kind === 4) return null;
    return 'plain';
  }
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(depth + 1, rand));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 5); i > 0; i--) out[randomValue(99, rand) as string] = randomValue(depth + 1, rand);
  return out;
}

function seeded(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('the hashed form of a row', () => {
  test('storableJson is canonicalJson(storable(x)), and reading it back as JSON gives the same text', () => {
    verifies('AUDIT-SEAL');
    const rand = seeded(14);
    const values: unknown[] = [...trickyDetails(), ...Array.from({ length: 2000 }, () => ({ v: randomValue(0, rand) }))];
    for (const value of values) {
      const text = storableJson(value);
      expect(text).toBe(canonicalJson(storable(value)));
      expect(canonicalJson(JSON.parse(text))).toBe(text);
    }
  });

  test('rowHash is still the hash of the canonical JSON of [prev_hash, org, seq, created_at, ..., details]', () => {
    verifies('AUDIT-SEAL');
    // The format of every chain already stored: changing it would make `audit verify` fail on existing rows.
    for (const details of trickyDetails().map((d) => storable(d) as Record<string, unknown>)) {
      const row = {
        prevHash: 'p'.repeat(64),
        orgId: crypto.randomUUID(),
        seq: 7,
        createdAt: new Date(),
        action: 'tool.called',
        actorType: 'api_key',
        actorId: null,
        targetType: 'tool',
        targetId: 'x',
        outcome: 'success',
        details,
      };
      const legacy = createHash('sha256')
        .update(
          canonicalJson([
            row.prevHash,
            row.orgId,
            row.seq,
            row.createdAt.toISOString(),
            row.action,
            row.actorType,
            row.actorId,
            row.targetType,
            row.targetId,
            row.outcome,
            row.details,
          ]),
        )
        .digest('hex');
      expect(rowHash(row)).toBe(legacy);
    }
  });
});

const call = (orgId: string, details: Record<string, unknown>): AuditInput => ({
  orgId,
  action: 'tool.called',
  actor: { type: 'api_key', id: 'key-1' },
  targetType: 'tool',
  targetId: 'query_items',
  details,
});
const silent = createLogger('silent');

async function q<T>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

/** The org's sealed seqs are exactly 1..n, no row is left unsealed, and the head is at n. */
async function expectContiguous(db: Db, orgId: string): Promise<number> {
  const seqs = (await q<{ seq: string | number | null }>(db, sql`SELECT seq FROM audit_events WHERE org_id = ${orgId} ORDER BY seq`)).map((r) =>
    r.seq === null ? null : Number(r.seq),
  );
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  const [head] = await q<{ head_seq: string | number }>(db, sql`SELECT head_seq FROM audit_chains WHERE org_id = ${orgId}`);
  expect(Number(head!.head_seq)).toBe(seqs.length);
  return seqs.length;
}

for (const kind of ['postgres', 'pglite'] as const) {
  describe.skipIf(kind === 'postgres' && !hasPg)(`sealing from memory (${kind})`, () => {
    let g: TestGateway;
    beforeAll(async () => {
      g = await startTestGateway(kind, { TOOLGATE_WEBHOOK_WORKER: '0' });
    }, 60_000);
    afterAll(async () => g?.close(), 30_000);

    test('rows with tricky details, sealed by their writer in the INSERT that commits them, verify (hash recomputed from the stored rows)', async () => {
      verifies('AUDIT-SEAL');
      const org = await onboard(g);
      const recorder = new AuditRecorder({ db: g.deps.store.db, log: silent, queueMax: 10_000 });
      const rand = seeded(1014);
      const all = [...trickyDetails(), ...Array.from({ length: 300 }, () => ({ v: randomValue(0, rand), w: randomValue(1, rand) }))];
      await Promise.all(all.map((details) => recorder.toolCall(call(org.orgId, details))));
      recorder.denial({ orgId: org.orgId, action: 'auth.refused', actor: { type: 'anonymous', id: null }, outcome: 'denied', details: trickyDetails()[2] });
      await recorder.drain();
      // Issue 42: every row sealed in its INSERT; not one seal UPDATE.
      expect(recorder.sealStats()).toEqual({ atInsert: all.length + 1, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 0 });
      const rows = await expectContiguous(g.deps.store.db, org.orgId);
      expect(await verifyChain(g.deps.store.db, org.orgId)).toEqual({ ok: true, checked: rows });
      // The check can fail: one changed character in a stored detail is caught.
      const [victim] = await q<{ id: string }>(g.deps.store.db, sql`SELECT id FROM audit_events WHERE org_id = ${org.orgId} AND details ? 'rtl'`);
      await g.deps.store.db.execute(sql`UPDATE audit_events SET details = jsonb_set(details, '{rtl}', '"שלום עולם!"') WHERE id = ${victim!.id}`);
      expect(await verifyChain(g.deps.store.db, org.orgId)).toMatchObject({ ok: false, broken: { id: victim!.id } });
    });
  });
}

describe.skipIf(!hasPg)('sealing across instances, orphans and conflicts (postgres)', () => {
  let g1: TestGateway;
  let g2: TestGateway;
  beforeAll(async () => {
    g1 = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' });
    g2 = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' }, g1.databaseUrl!);
  }, 60_000);
  afterAll(async () => {
    await g2?.close();
    await g1?.close();
  }, 30_000);

  test('two instances writing and sealing the same orgs at once: contiguous seq per org, every row sealed once, chains verify', async () => {
    verifies('AUDIT-SEAL');
    const orgs = [await onboard(g1), await onboard(g1), await onboard(g2)];
    const recorders = [g1.deps.audit, g2.deps.audit];
    const sealedSoFar = () =>
      recorders.map((r) => r.sealStats()).map((s) => ({ atInsert: s.atInsert, moved: s.headMoved, all: s.atInsert + s.fromMemory + s.readBack }));
    const before = sealedSoFar();
    let written = 0;
    for (let wave = 0; wave < 8; wave++) {
      const calls: Promise<void>[] = [];
      for (let i = 0; i < 120; i++) calls.push(recorders[i % 2]!.toolCall(call(orgs[i % 3]!.orgId, { wave, i })));
      // Management rows are chained at once (appendAudit), between the hot path's rows.
      calls.push(appendAudit(g2.deps.store.db, [{ orgId: orgs[wave % 3]!.orgId, action: 'test.managed', actor: { type: 'system', id: null } }]).then(() => {}));
      await Promise.all(calls);
      written += 120;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await Promise.all(recorders.map((r) => r.drain()));
    const after = sealedSoFar();
    // Both instances sealed rows in their INSERTs, met heads the other (or a management row) had moved, and together
    // sealed exactly the rows they wrote (none twice: the unique (org, seq) index would have refused a statement).
    expect(after[0]!.atInsert - before[0]!.atInsert).toBeGreaterThan(0);
    expect(after[1]!.atInsert - before[1]!.atInsert).toBeGreaterThan(0);
    expect(after[0]!.moved - before[0]!.moved + after[1]!.moved - before[1]!.moved).toBeGreaterThan(0);
    expect(after[0]!.all - before[0]!.all + after[1]!.all - before[1]!.all).toBe(written);
    let total = 0;
    for (const org of orgs) {
      total += await expectContiguous(g1.deps.store.db, org.orgId);
      expect(await verifyChain(g1.deps.store.db, org.orgId)).toMatchObject({ ok: true });
    }
    const [counted] = await q<{ n: number }>(
      g1.deps.store.db,
      sql`SELECT count(*)::int AS n FROM audit_events WHERE action IN ('tool.called', 'test.managed') AND org_id IN (${orgs[0]!.orgId}, ${orgs[1]!.orgId}, ${orgs[2]!.orgId})`,
    );
    expect(counted!.n).toBe(written + 8);
    expect(total).toBeGreaterThanOrEqual(written + 8);
  });

  test("issue 42: a call's row is in its chain when the call is answered (sealed in its INSERT, no seal after); a head moved behind the writer's back is read again", async () => {
    verifies('AUDIT-SEAL');
    const db = g1.deps.store.db;
    const org = await onboard(g1);
    // A seal interval far longer than the test: any row left for the sealer would still be unsealed below.
    const recorder = new AuditRecorder({ db, log: silent, queueMax: 100, sealIntervalMs: 60_000 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => recorder.toolCall(call(org.orgId, { i }))));
    const unsealed = async () =>
      Number((await q<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM audit_events WHERE org_id = ${org.orgId} AND seq IS NULL`))[0]!.n);
    expect(await unsealed()).toBe(0);
    expect(recorder.sealStats()).toEqual({ atInsert: 20, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 0 });
    // A management row (another writer) moves the head: the next sealed INSERT finds it moved, reads it, retries.
    await appendAudit(db, [{ orgId: org.orgId, action: 'test.managed', actor: { type: 'system', id: null } }]);
    await recorder.toolCall(call(org.orgId, { after: true }));
    expect(await unsealed()).toBe(0);
    expect(recorder.sealStats()).toEqual({ atInsert: 21, headMoved: 1, fromMemory: 0, readBack: 0, conflicts: 0 });
    await expectContiguous(db, org.orgId);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true });
    await recorder.drain();
  });

  test("the hot path's INSERT runs prepared: one statement text whatever the batch size and orgs (store/db.ts executePrepared)", async () => {
    verifies('AUDIT-SEAL');
    const orgs = [await onboard(g1), await onboard(g1), await onboard(g1)].map((o) => o.orgId);
    const texts = await g1.deps.store.db.transaction(async (tx) => {
      await insertUnsealed(tx, [call(orgs[0]!, { n: 1 })]);
      await insertUnsealed(
        tx,
        orgs.flatMap((orgId, i) => [call(orgId, { i }), call(orgId, { i, again: true })]),
      );
      // The transaction's own connection: what it holds prepared (drizzle's execute would have left nothing here).
      return q<{ statement: string }>(tx as unknown as Db, sql`SELECT statement FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO audit_events%'`);
    });
    expect(texts.length).toBe(1);
    // What it wrote is sealed and verifies like any other row.
    await sealPending(g1.deps.store.db);
    for (const orgId of orgs) expect(await verifyChain(g1.deps.store.db, orgId)).toMatchObject({ ok: true });
  });

  test('orphans: rows a stopped writer never sealed are sealed by the sweep once old enough, and all of them at start', async () => {
    verifies('AUDIT-SEAL');
    const db = g1.deps.store.db;
    const org = await onboard(g1);
    // The writer "stops" between insert and seal: its rows are committed, nobody holds them in memory.
    const dead = new AuditRecorder({ db, log: silent, queueMax: 100, sealIntervalMs: 60_000, sealAtInsert: false });
    await Promise.all(Array.from({ length: 5 }, (_, i) => dead.toolCall(call(org.orgId, { orphan: i }))));
    const young = await insertUnsealed(db, [call(org.orgId, { young: true })]);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true, pending: 6 });
    // Not yet old enough for the sweep: a live writer may be about to seal them.
    expect(await sealOrphans(db)).toBe(0);
    // Later: the dead writer's rows (and the young one, now old too) are sealed by the sweep.
    expect(await sealOrphans(db, new Date(Date.now() + ORPHAN_AGE_MS + 1000))).toBe(6);
    await expectContiguous(db, org.orgId);
    expect(await verifyChain(db, org.orgId)).toEqual({ ok: true, checked: expect.any(Number) });
    // Had the writer come back, its seal meets rows sealed elsewhere: it rolls back whole and finds nothing left.
    const head = await expectContiguous(db, org.orgId);
    await expect(sealFromMemory(db, young)).rejects.toBeInstanceOf(SealConflict);
    await dead.drain();
    expect(dead.sealStats()).toEqual({ atInsert: 0, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 1 });
    expect(await expectContiguous(db, org.orgId)).toBe(head);

    // A fresh orphan and a start of another instance on the store: the start seals it, whatever its age.
    await insertUnsealed(db, [call(org.orgId, { orphanAtStart: true })]);
    const g3 = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' }, g1.databaseUrl!);
    await g3.close();
    expect(await expectContiguous(db, org.orgId)).toBe(head + 1);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true });
  });

  test('a forced conflict: a seal from memory waiting behind a concurrent fallback seal rolls back with no gap; the rest is sealed after', async () => {
    verifies('AUDIT-SEAL');
    const db = g1.deps.store.db;
    const org = await onboard(g1);
    const rows = await insertUnsealed(
      db,
      Array.from({ length: 5 }, (_, i) => call(org.orgId, { conflict: i })),
    );
    const headBefore = await expectContiguousSealed(db, org.orgId);
    let memorySeal: Promise<number> | null = null;
    let settled = false;
    await db.transaction(async (tx) => {
      // The fallback seals two of the rows and holds the chain head until this transaction commits.
      expect(await sealPending(tx, 10, { ids: rows.slice(0, 2).map((r) => r.id) })).toBe(2);
      memorySeal = sealFromMemory(db, rows);
      memorySeal.then(
        () => (settled = true),
        () => (settled = true),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false); // waiting for the head, not sealing beside it
    });
    await expect(memorySeal!).rejects.toBeInstanceOf(SealConflict);
    // Rolled back whole: the head moved by the fallback's two rows only, the other three are still unsealed.
    expect(await expectContiguousSealed(db, org.orgId)).toBe(headBefore + 2);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true, pending: 3 });
    expect(await sealPending(db, 10, { ids: rows.map((r) => r.id) })).toBe(3);
    expect(await expectContiguous(db, org.orgId)).toBe(headBefore + 5);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true });
  });

  test('the recorder after a conflict: part of its rows sealed behind its back, it seals the rest from the store', async () => {
    verifies('AUDIT-SEAL');
    const db = g1.deps.store.db;
    const org = await onboard(g1);
    const recorder = new AuditRecorder({ db, log: silent, queueMax: 100, sealIntervalMs: 1500, sealAtInsert: false });
    await Promise.all(Array.from({ length: 6 }, (_, i) => recorder.toolCall(call(org.orgId, { part: i }))));
    // While the recorder waits to seal, another sealer takes three of its rows.
    const ids = (await q<{ id: string }>(db, sql`SELECT id FROM audit_events WHERE org_id = ${org.orgId} AND seq IS NULL ORDER BY id LIMIT 3`)).map(
      (r) => r.id,
    );
    expect(await sealPending(db, 10, { ids })).toBe(3);
    await recorder.drain();
    expect(recorder.sealStats()).toEqual({ atInsert: 0, headMoved: 0, fromMemory: 0, readBack: 3, conflicts: 1 });
    await expectContiguous(db, org.orgId);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true });
  });
});

describe.skipIf(!hasPg)('a seal the store refuses (postgres)', () => {
  let g: TestGateway;
  beforeAll(async () => {
    g = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' });
  }, 60_000);
  afterAll(async () => g?.close(), 30_000);

  test('nothing half-written, the recorder gives the rows up (no endless retry), and the orphan sweep seals them later', async () => {
    verifies('AUDIT-SEAL');
    const db = g.deps.store.db;
    const org = await onboard(g);
    const before = await expectContiguous(db, org.orgId);
    // A real failure of the store, not a mock: moving this org's chain head is refused.
    await db.execute(
      sql.raw(`CREATE OR REPLACE FUNCTION tg_refuse_head() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'chain store down'; END $$ LANGUAGE plpgsql`),
    );
    await db.execute(
      sql.raw(
        `CREATE TRIGGER tg_refuse_head BEFORE UPDATE ON audit_chains FOR EACH ROW WHEN (NEW.org_id = '${org.orgId}' AND NEW.head_seq <> OLD.head_seq) EXECUTE FUNCTION tg_refuse_head()`,
      ),
    );
    const recorder = new AuditRecorder({ db, log: silent, queueMax: 100 });
    try {
      // The calls are answered: their rows are committed; only sealing fails.
      await Promise.all(Array.from({ length: 4 }, (_, i) => recorder.toolCall(call(org.orgId, { refused: i }))));
      await recorder.drain();
      // The sealed INSERT was refused (it moves the head): the rows went in unsealed, and their seal failed too.
      expect(recorder.sealStats()).toEqual({ atInsert: 0, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 0 });
      expect(await expectContiguousSealed(db, org.orgId)).toBe(before);
      expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true, pending: 4 });
    } finally {
      await db.execute(sql.raw('DROP TRIGGER tg_refuse_head ON audit_chains'));
    }
    // Another batch later does not retry the given-up rows from memory (they may have been sealed meanwhile).
    await recorder.toolCall(call(org.orgId, { after: true }));
    await recorder.drain();
    expect(recorder.sealStats()).toEqual({ atInsert: 1, headMoved: 0, fromMemory: 0, readBack: 0, conflicts: 0 });
    expect(await sealOrphans(db, new Date(Date.now() + ORPHAN_AGE_MS + 1000))).toBe(4);
    expect(await expectContiguous(db, org.orgId)).toBe(before + 5);
    expect(await verifyChain(db, org.orgId)).toMatchObject({ ok: true });
  });
});

/** Like expectContiguous, for an org that may still have unsealed rows: sealed seqs are 1..n and the head is n. */
async function expectContiguousSealed(db: Db, orgId: string): Promise<number> {
  const seqs = (await q<{ seq: string | number }>(db, sql`SELECT seq FROM audit_events WHERE org_id = ${orgId} AND seq IS NOT NULL ORDER BY seq`)).map((r) =>
    Number(r.seq),
  );
  expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  const [head] = await q<{ head_seq: string | number }>(db, sql`SELECT head_seq FROM audit_chains WHERE org_id = ${orgId}`);
  expect(Number(head!.head_seq)).toBe(seqs.length);
  return seqs.length;
}
