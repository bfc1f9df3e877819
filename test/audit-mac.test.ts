/**
 * Issue 26, item 5: a row written into audit_events from outside the gateway (back-dated, or a genuine row's copy
 * with one value changed) is never sealed into the chain, by the orphan sweep of a running instance nor at start;
 * verify and the sweep agree on it, and GET /api/audit does not list it as genuine. PGlite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { createHmac, hkdfSync } from 'node:crypto';
import { genesisHash, rowHash, rowTail } from '../src/audit/chain.ts';
import { deriveAuditMacKey, rowAuthentic, rowMac } from '../src/audit/mac.ts';
import { sealOrphans, sealPending } from '../src/audit/seal.ts';
import { verifyChain } from '../src/audit/verify.ts';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate, rowsOf, type Db, type Store } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';
import * as schema from '../src/store/schema.ts';
import { verifies } from './requirements.ts';
import { api, freshDatabase, onboard, startTestGateway, tokenFor, type StoreKind, type TestGateway } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');
const kinds: StoreKind[] = hasPg ? ['pglite', 'postgres'] : ['pglite'];
if (!hasPg) console.warn('audit-mac: PostgreSQL is not reachable; only the PGlite store is tested');

describe('the row MAC (unit)', () => {
  test('is HMAC-SHA256 under the HKDF key of its own label, over [v1, id, org, ...rowTail]; any field changed fails', () => {
    verifies('AUDIT-ROW-MAC');
    const secret = new Uint8Array(32).fill(9);
    const key = deriveAuditMacKey(secret);
    const row = {
      id: crypto.randomUUID(),
      orgId: crypto.randomUUID(),
      createdAt: new Date('2026-11-26T10:00:00.000Z'),
      action: 'tool.called',
      actorType: 'api_key',
      actorId: 'k',
      targetType: 'tool',
      targetId: 't',
      outcome: 'success',
      details: { b: 1, a: [1, 'x'] },
    };
    // The same value by node:crypto directly (what a Deno instance computes), so instances on either runtime agree.
    const raw = new Uint8Array(hkdfSync('sha256', secret, new Uint8Array(0), 'toolgate audit row mac v1', 32));
    const expected = createHmac('sha256', raw)
      .update(`["v1",${JSON.stringify(row.id)},${JSON.stringify(row.orgId)}${rowTail(row)}`)
      .digest('hex');
    const mac = rowMac(key, row.id, row.orgId, rowTail(row));
    expect(mac).toBe(expected);
    expect(rowAuthentic(key, { ...row, mac })).toBe(true);
    // A key derived from another secret does not verify it.
    expect(rowAuthentic(deriveAuditMacKey(new Uint8Array(32).fill(8)), { ...row, mac })).toBe(false);
    for (const changed of [
      { id: crypto.randomUUID() },
      { orgId: crypto.randomUUID() },
      { createdAt: new Date(0) },
      { action: 'x' },
      { actorType: 'user' },
      { actorId: null },
      { targetType: null },
      { targetId: 'u' },
      { outcome: 'error' },
      { details: { b: 2, a: [1, 'x'] } },
    ]) {
      expect(rowAuthentic(key, { ...row, ...changed, mac })).toBe(false);
    }
    expect(rowAuthentic(key, { ...row, mac: null })).toBe(false);
  });
});

for (const kind of kinds) {
  describe(`rows written outside the gateway (${kind})`, () => {
    let g: TestGateway;
    beforeAll(async () => {
      g = await startTestGateway(kind, { TOOLGATE_WEBHOOK_WORKER: '0' });
    });
    afterAll(async () => {
      await g?.close();
    });

    const db = () => g.deps.store.db;
    const all = async (orgId: string): Promise<any[]> =>
      rowsOf<any>(await db().execute(sql`SELECT id, seq, action, details, mac, refused_at FROM audit_events WHERE org_id = ${orgId} ORDER BY seq NULLS LAST`));
    const listed = async (clientId: string, secret: string): Promise<any[]> => {
      const token = await tokenFor(g, clientId, secret);
      const response = await api(g, 'GET', '/api/audit?limit=200', token);
      expect(response.status).toBe(200);
      return ((await response.json()) as any).events;
    };
    /** What a running instance's sweep does, at a time when every row inserted here counts as an orphan. */
    const sweep = () => sealOrphans(db(), new Date(Date.now() + 60 * 60_000));

    test('a back-dated INSERT is refused by the running sweep, stays outside the chain, and verify and the list agree', async () => {
      verifies('AUDIT-ROW-MAC');
      const org = await onboard(g);
      await g.deps.audit.drain();
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: true });
      const forged = rowsOf<{ id: string }>(
        await db().execute(sql`INSERT INTO audit_events (org_id, created_at, action, actor_type, actor_id, outcome, details)
          VALUES (${org.orgId}, now() - interval '3 days', 'approval.approved', 'user', 'ceo@example.com', 'success', '{"tool_name":"query_payments"}'::jsonb) RETURNING id`),
      )[0]!.id;
      // Before any sweep: outside the chain and overdue.
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: false, broken: { reason: expect.stringContaining('outside the chain') } });
      expect(await sweep()).toBeGreaterThanOrEqual(1);
      const row = (await all(org.orgId)).find((r) => r.id === forged);
      expect(row.seq).toBeNull();
      expect(row.refused_at).not.toBeNull();
      // The refusal is reported in the org's own chain, naming the row.
      const report = (await all(org.orgId)).find((r) => r.action === 'audit.rows_refused');
      expect(report).toMatchObject({ details: { count: 1, ids: [forged] } });
      expect(report.seq).not.toBeNull();
      // After the sweep verify still names it (it does not turn intact), and says why.
      const after = await verifyChain(db(), org.orgId);
      expect(after).toMatchObject({ ok: false, refused: 1, broken: { reason: expect.stringContaining('without a valid MAC') } });
      if (g.databaseUrl) {
        // The CLI says the same (exit 1, the reason), as it did before the sweep.
        const proc = Bun.spawn([process.execPath, 'src/cli.ts', 'audit', 'verify', '--org', org.slug], {
          cwd: `${import.meta.dir}/..`,
          env: { ...process.env, DATABASE_URL: g.databaseUrl, TOOLGATE_SECRET_KEY: 'a'.repeat(64), TOOLGATE_LOG_LEVEL: 'silent' },
          stdout: 'pipe',
          stderr: 'pipe',
        });
        const out = await new Response(proc.stdout).text();
        expect(await proc.exited).toBe(1);
        expect(out).toContain('without a valid MAC');
      }
      // A second sweep and a start-up seal leave it alone (read once, not on every sweep).
      expect(await sweep()).toBe(0);
      expect(await sealPending(db())).toBe(0);
      const events = await listed(org.clientId, org.clientSecret);
      expect(events.some((e) => e.id === forged)).toBe(false);
      expect(events.some((e) => e.action === 'audit.rows_refused')).toBe(true);
    });

    test('a copy of a genuine row with one value changed, and an exact copy under a new id, are refused; the genuine rows are sealed', async () => {
      verifies('AUDIT-ROW-MAC');
      const org = await onboard(g);
      // A genuine hot-path row, written and left unsealed (its writer stopped before sealing it).
      const genuine = {
        orgId: org.orgId,
        action: 'tool.called',
        actor: { type: 'api_key' as const, id: 'k1' },
        targetType: 'tool',
        targetId: 'query_postgresql_items',
        details: { counted: true, row_count: 3 },
      };
      const { insertUnsealed } = await import('../src/audit/repository.ts');
      const [written] = await insertUnsealed(db(), [genuine]);
      const source = rowsOf<any>(await db().execute(sql`SELECT * FROM audit_events WHERE id = ${written!.id}`))[0];
      // Same fields and MAC, one value changed (row_count), new id; and the exact copy under a new id.
      const changed = rowsOf<{ id: string }>(
        await db().execute(sql`INSERT INTO audit_events (org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, mac)
          SELECT org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, jsonb_set(details, '{row_count}', '3000'), mac FROM audit_events WHERE id = ${source.id} RETURNING id`),
      )[0]!.id;
      const copied = rowsOf<{ id: string }>(
        await db().execute(sql`INSERT INTO audit_events (org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, mac)
          SELECT org_id, created_at, action, actor_type, actor_id, target_type, target_id, outcome, details, mac FROM audit_events WHERE id = ${source.id} RETURNING id`),
      )[0]!.id;
      // An alteration of the genuine unsealed row itself (its outcome) before any sealer saw it.
      const [altered] = await insertUnsealed(db(), [{ ...genuine, details: { counted: true, row_count: 1 } }]);
      await db().execute(sql`UPDATE audit_events SET outcome = 'error' WHERE id = ${altered!.id}`);
      expect(await sweep()).toBeGreaterThanOrEqual(4);
      const rows = await all(org.orgId);
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(written!.id).seq).not.toBeNull();
      for (const id of [changed, copied, altered!.id]) {
        expect(byId.get(id).seq).toBeNull();
        expect(byId.get(id).refused_at).not.toBeNull();
      }
      const report = rows.find((r) => r.action === 'audit.rows_refused');
      expect(report.details.count).toBe(3);
      expect(new Set(report.details.ids)).toEqual(new Set([changed, copied, altered!.id]));
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: false, refused: 3 });
      const listedIds = new Set((await listed(org.clientId, org.clientSecret)).map((e) => e.id));
      expect(listedIds.has(written!.id)).toBe(true);
      for (const id of [changed, copied, altered!.id]) expect(listedIds.has(id)).toBe(false);
    });

    test('a row forged straight into the chain (hash recomputed, head moved) is named by verify and not listed or exported', async () => {
      verifies('AUDIT-ROW-MAC');
      const org = await onboard(g);
      await g.deps.audit.drain();
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: true });
      const head = rowsOf<any>(await db().execute(sql`SELECT head_seq, head_hash FROM audit_chains WHERE org_id = ${org.orgId}`))[0];
      const fields = {
        orgId: org.orgId,
        seq: Number(head.head_seq) + 1,
        prevHash: head.head_hash as string,
        createdAt: new Date(Date.now() - 86_400_000),
        action: 'approval.approved',
        actorType: 'user',
        actorId: 'ceo@example.com',
        targetType: null,
        targetId: null,
        outcome: 'success',
        details: {},
      };
      const hash = rowHash(fields);
      const id = crypto.randomUUID();
      await db().execute(sql`INSERT INTO audit_events (id, org_id, seq, prev_hash, hash, created_at, action, actor_type, actor_id, outcome, details)
        VALUES (${id}, ${org.orgId}, ${fields.seq}, ${fields.prevHash}, ${hash}, ${fields.createdAt.toISOString()}::timestamptz, ${fields.action}, 'user', ${fields.actorId}, 'success', '{}'::jsonb)`);
      await db().execute(sql`UPDATE audit_chains SET head_seq = ${fields.seq}, head_hash = ${hash} WHERE org_id = ${org.orgId}`);
      expect(genesisHash(org.orgId)).not.toBe(hash);
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: false, broken: { id, reason: expect.stringContaining('MAC') } });
      expect((await listed(org.clientId, org.clientSecret)).some((e) => e.id === id)).toBe(false);
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      const exported = (await (await api(g, 'GET', '/api/audit/export-json', token)).json()) as any;
      expect(exported.events.length).toBeGreaterThan(0);
      expect(exported.events.some((e: any) => e.id === id)).toBe(false);
    });

    test('rows chained before rows carried a MAC (up to mac_from_seq) still verify; a MAC-less row after it does not', async () => {
      verifies('AUDIT-ROW-MAC');
      const org = await onboard(g);
      await g.deps.audit.drain();
      // As migration 10 leaves an existing chain: its rows have no MAC, and mac_from_seq is its head.
      await db().execute(sql`UPDATE audit_events SET mac = NULL WHERE org_id = ${org.orgId}`);
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: false, broken: { reason: expect.stringContaining('MAC') } });
      await db().execute(sql`UPDATE audit_chains SET mac_from_seq = head_seq WHERE org_id = ${org.orgId}`);
      expect(await verifyChain(db(), org.orgId)).toMatchObject({ ok: true });
      expect((await listed(org.clientId, org.clientSecret)).length).toBeGreaterThan(0);
    });
  });
}

describe.skipIf(!hasPg)('upgrading a store whose rows have no MAC (migration 10, postgres)', () => {
  test('rows chained before the upgrade still verify; a row left unsealed at the upgrade is refused at the first start, not adopted', async () => {
    verifies('AUDIT-ROW-MAC');
    const fresh = await freshDatabase('tg_mac_upgrade');
    const client = postgres(fresh.url, { max: 2, onnotice: () => {} });
    let g: TestGateway | null = null;
    try {
      const db = drizzle(client, { schema }) as unknown as Db;
      const store = { db, kind: 'postgres', execScript: async (script: string) => void (await client.unsafe(script)), close: async () => {} } as Store;
      expect(
        await migrate(
          store,
          migrations.filter((m) => m.version < 10),
        ),
      ).not.toContain(10);
      // The store as the previous release left it: an org, two chained rows, one row still unsealed (no MAC anywhere).
      const orgId = crypto.randomUUID();
      await client`INSERT INTO orgs (id, slug, name, plan, subscription_status, provision_status) VALUES (${orgId}, ${`legacy-${orgId.slice(0, 8)}`}, 'Legacy', 'enterprise', 'active', 'provisioned')`;
      let prev = genesisHash(orgId);
      for (const seq of [1, 2]) {
        const fields = {
          orgId,
          seq,
          prevHash: prev,
          createdAt: new Date(Date.now() - 3_600_000 + seq),
          action: 'connector.created',
          actorType: 'system',
          actorId: null,
          targetType: null,
          targetId: null,
          outcome: 'success',
          details: { n: seq },
        };
        const hash = rowHash(fields);
        await client`INSERT INTO audit_events (org_id, seq, prev_hash, hash, created_at, action, actor_type, outcome, details)
          VALUES (${orgId}, ${seq}, ${prev}, ${hash}, ${fields.createdAt.toISOString()}::timestamptz, 'connector.created', 'system', 'success', ${JSON.stringify({ n: seq })}::jsonb)`;
        prev = hash;
      }
      await client`INSERT INTO audit_chains (org_id, head_seq, head_hash, base_seq, base_hash) VALUES (${orgId}, 2, ${prev}, 0, ${genesisHash(orgId)})`;
      const unsealed = (
        await client`INSERT INTO audit_events (org_id, created_at, action, actor_type, outcome) VALUES (${orgId}, now() - interval '2 hours', 'tool.called', 'api_key', 'success') RETURNING id`
      )[0]!.id as string;
      // The new release starts on it: migration 10, then the start-up seal.
      g = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' }, fresh.url);
      const [chain] = await client`SELECT mac_from_seq FROM audit_chains WHERE org_id = ${orgId}`;
      expect(Number(chain!.mac_from_seq)).toBe(2);
      // The start seals (here: refuses) the backlog in the background (decision 0349): ready first, sealed moments later.
      let [left] = await client`SELECT seq, refused_at FROM audit_events WHERE id = ${unsealed}`;
      for (let i = 0; i < 100 && left!.refused_at === null; i++) {
        await Bun.sleep(50);
        [left] = await client`SELECT seq, refused_at FROM audit_events WHERE id = ${unsealed}`;
      }
      expect(left!.seq).toBeNull();
      expect(left!.refused_at).not.toBeNull();
      const report = await verifyChain(g.deps.store.db, orgId);
      // Rows 1-2 (legacy) and the refusal report (3, with a MAC) verify; the refused row fails the check.
      expect(report).toMatchObject({ ok: false, checked: 3, refused: 1 });
      await client`DELETE FROM audit_events WHERE id = ${unsealed}`;
      expect(await verifyChain(g.deps.store.db, orgId)).toEqual({ ok: true, checked: 3 });
    } finally {
      await g?.close();
      await client.end();
      await fresh.drop();
    }
  });
});
