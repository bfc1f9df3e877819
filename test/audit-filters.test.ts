// Issue 41 item 2: GET /api/audit filters by outcome (one or several), actor (API key, OAuth client, member or IdP
// subject), tool, connector, reason class, fingerprint and time range, each combined with cursor pagination; through
// REST and through the generated client (listAuditEvents and the Toolgate iterator). Rows written through the
// gateway's own recorder (the tool-call write path) and sealed, on PGlite and on PostgreSQL (migration 22 on both).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type StoreKind, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';

setDefaultTimeout(60_000);
const hasPg = await serviceAvailable('postgres');

const C1 = crypto.randomUUID();
const C2 = crypto.randomUUID();
const KEY = crypto.randomUUID();

interface Written {
  mark: string;
  action: string;
  outcome: 'success' | 'error' | 'held' | 'refused' | 'denied';
  actor: { type: 'api_key' | 'oauth_client' | 'user'; id: string };
  tool: string;
  connector: string;
  reasonClass?: string;
  fingerprintId?: string;
  batch: number;
}

const ACTORS = [
  { type: 'api_key', id: KEY },
  { type: 'oauth_client', id: 'client-b' },
  { type: 'user', id: 'alice@example.com' },
  { type: 'user', id: 'idp|subject-42' },
] as const;
const OUTCOMES = ['success', 'error', 'held', 'refused', 'denied'] as const;

/** 40 rows over two batches: every combination the filters tell apart. */
function plan(): Written[] {
  return Array.from({ length: 40 }, (_, i) => {
    const outcome = OUTCOMES[i % 5]!;
    return {
      mark: `m${String(i).padStart(2, '0')}`,
      action: outcome === 'denied' ? 'tool.call_refused' : 'tool.called',
      outcome,
      actor: ACTORS[i % 4]!,
      tool: i % 3 === 0 ? 'query_a' : 'query_b',
      connector: i % 2 === 0 ? C1 : C2,
      ...(outcome === 'refused'
        ? { reasonClass: i % 2 === 0 ? 'write' : 'other_table', fingerprintId: i % 4 < 2 ? 'aaaaaaaaaaaaaaaa' : 'bbbbbbbbbbbbbbbb' }
        : {}),
      batch: i < 20 ? 0 : 1,
    };
  });
}

for (const kind of ['pglite', 'postgres'] as StoreKind[]) {
  describe.skipIf(kind === 'postgres' && !hasPg)(`audit filters (${kind})`, () => {
    let g: TestGateway;
    let org: Onboarded;
    let token: string;
    let between: string;
    const rows = plan();

    async function write(w: Written) {
      await g.deps.audit.toolCall({
        orgId: org.orgId,
        action: w.action,
        actor: w.actor,
        targetType: 'tool',
        targetId: w.tool,
        outcome: w.outcome,
        details: {
          tool_name: w.tool,
          connector_id: w.connector,
          arguments_sha256: w.mark,
          ...(w.reasonClass ? { reason_class: w.reasonClass, reason: 'refused', fingerprint_id: w.fingerprintId } : {}),
        },
      });
    }

    beforeAll(async () => {
      g = await startTestGateway(kind);
      org = await onboard(g);
      token = await tokenFor(g, org.clientId, org.clientSecret);
      for (const w of rows.filter((r) => r.batch === 0)) await write(w);
      await g.deps.audit.drain();
      await Bun.sleep(30);
      between = new Date().toISOString();
      await Bun.sleep(30);
      for (const w of rows.filter((r) => r.batch === 1)) await write(w);
      await g.deps.audit.drain();
    });
    afterAll(async () => {
      await g?.close();
    });

    /** Every page of a filter through REST, 3 rows a page: the marks, newest first. */
    async function viaRest(query: string): Promise<string[]> {
      const marks: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 50; pages++) {
        const res = await api(g, 'GET', `/api/audit?limit=3&${query}${cursor ? `&cursor=${cursor}` : ''}`, token);
        expect(res.status).toBe(200);
        const body = (await res.json()) as sdk.ListAuditEventsResponse;
        marks.push(...body.events.map((e) => String((e.details as Record<string, unknown>).arguments_sha256 ?? '')).filter((m) => m.startsWith('m')));
        cursor = body.next_cursor;
        if (!cursor) return marks;
      }
      throw new Error('too many pages');
    }

    /** The marks the rows matching `keep` should list, newest first (later rows first: one batch per row). */
    const expected = (keep: (w: Written) => boolean) =>
      rows
        .filter(keep)
        .map((w) => w.mark)
        .reverse();

    const CASES: [string, Omit<NonNullable<sdk.ListAuditEventsData['query']>, 'cursor'>, (w: Written) => boolean][] = [
      ['outcome', { outcome: 'refused' }, (w) => w.outcome === 'refused'],
      ['several outcomes', { outcome: 'refused,denied' }, (w) => w.outcome === 'refused' || w.outcome === 'denied'],
      ['actor: an API key', { actor: `api_key:${KEY}` }, (w) => w.actor.type === 'api_key'],
      ['actor: an OAuth client', { actor: 'oauth_client:client-b' }, (w) => w.actor.id === 'client-b'],
      ['actor: a member', { actor: 'user:alice@example.com' }, (w) => w.actor.id === 'alice@example.com'],
      ['actor: an IdP subject', { actor: 'user:idp|subject-42' }, (w) => w.actor.id === 'idp|subject-42'],
      ['tool', { tool: 'query_a' }, (w) => w.tool === 'query_a'],
      ['connector', { connector_id: C1 }, (w) => w.connector === C1],
      ['reason class', { reason_class: 'other_table' }, (w) => w.reasonClass === 'other_table'],
      ['fingerprint', { fingerprint_id: 'aaaaaaaaaaaaaaaa' }, (w) => w.fingerprintId === 'aaaaaaaaaaaaaaaa'],
      [
        'combined: tool, connector and outcome',
        { tool: 'query_b', connector_id: C2, outcome: 'success,error' },
        (w) => w.tool === 'query_b' && w.connector === C2 && (w.outcome === 'success' || w.outcome === 'error'),
      ],
    ];

    for (const [name, query, keep] of CASES) {
      test(`${name}: REST pages and the generated client list exactly its rows, newest first`, async () => {
        const want = expected(keep);
        expect(want.length).toBeGreaterThan(0);
        expect(await viaRest(new URLSearchParams(query as Record<string, string>).toString())).toEqual(want);
        const client = sdkFor(g, token);
        const page = (await sdk.listAuditEvents({ client: client.client, throwOnError: true, query: { ...query, limit: 200 } })).data;
        expect(page.events.map((e) => (e.details as Record<string, unknown>).arguments_sha256)).toEqual(want);
        const iterated: unknown[] = [];
        for await (const e of client.auditEvents({ ...query, limit: 4 })) iterated.push((e.details as Record<string, unknown>).arguments_sha256);
        expect(iterated).toEqual(want);
      });
    }

    test('time range: from and until split the two batches, through REST and the client', async () => {
      const later = expected((w) => w.batch === 1);
      const earlier = expected((w) => w.batch === 0);
      expect(await viaRest(`from=${encodeURIComponent(between)}`)).toEqual(later);
      expect(await viaRest(`until=${encodeURIComponent(between)}&action=tool.`)).toEqual(earlier);
      const client = sdkFor(g, token).client;
      const page = (await sdk.listAuditEvents({ client, throwOnError: true, query: { until: between, outcome: 'refused', limit: 200 } })).data;
      expect(page.events.map((e) => (e.details as Record<string, unknown>).arguments_sha256)).toEqual(
        expected((w) => w.batch === 0 && w.outcome === 'refused'),
      );
    });

    test('malformed filters are 400 from the contract', async () => {
      for (const query of ['outcome=gone', 'outcome=refused,', 'actor=robot:1', 'actor=user', 'fingerprint_id=xyz', 'connector_id=nope', 'from=yesterday']) {
        expect((await api(g, 'GET', `/api/audit?${query}`, token)).status, query).toBe(400);
      }
    });

    test('a cursor from before a filter change still continues by position; an unknown cursor ends the list', async () => {
      const first = (await (await api(g, 'GET', '/api/audit?limit=5&action=tool.called', token)).json()) as sdk.ListAuditEventsResponse;
      const next = (await (
        await api(g, 'GET', `/api/audit?limit=5&action=tool.called&cursor=${first.next_cursor}`, token)
      ).json()) as sdk.ListAuditEventsResponse;
      const lastSeq = first.events[first.events.length - 1]!.seq;
      expect(next.events.every((e) => e.seq < lastSeq)).toBe(true);
      const gone = (await (await api(g, 'GET', '/api/audit?cursor=999999999', token)).json()) as sdk.ListAuditEventsResponse;
      expect(gone).toEqual({ events: [], next_cursor: null });
    });
  });
}
