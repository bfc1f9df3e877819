// Issue 41 item 1, the org's side: `audit_statements` (PATCH /api/org) decides what a refused statement's row keeps
// (none: class, reason, fingerprint id; fingerprint: also the fingerprint; full: also the statement as sent, literals
// and all); a redacted export drops the statement whatever the setting; the opt-in `tool.refused` webhook event is
// relayed from refused rows only. Live PostgreSQL and MariaDB targets, through MCP tools/call on app.handle.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import * as sdk from '../sdk/index.ts';
import { rowsOf } from '../src/store/db.ts';
import { relayToolCalled } from '../src/webhooks/relay.ts';
import { statementFingerprint, fingerprintId } from '../src/audit/fingerprint.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, rpc, type Credential } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { startReceiver, type Receiver } from './support/webhooks.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));

const SECRET = 'wd-secret-literal';
const NUMBER = '737373';

let g: TestGateway;
let org: Onboarded;
let token: string;
let key: Credential;
let t: Targets;
let receiver: Receiver;
const toolOf: Record<'pg' | 'my', string> = { pg: '', my: '' };

beforeAll(async () => {
  if (!available) return;
  receiver = startReceiver();
  [g, t] = await Promise.all([
    startTestGateway('pglite', { TOOLGATE_OUTBOUND_ALLOW_HOSTS: receiver.hostPort, TOOLGATE_WEBHOOK_WORKER: '0' }),
    createTargets('wd_statements'),
  ]);
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
  expect((await createConnector(g, token, { name: 'pgshop', type: 'postgresql', config: t.pgConfig })).status).toBe('active');
  expect((await createConnector(g, token, { name: 'myshop', type: 'mysql', config: t.myConfig })).status).toBe('active');
  const tools = (await rpc(g, org.slug, key, 'tools/list', {})).body.result.tools as { name: string; description: string }[];
  toolOf.pg = tools.find((x) => x.description.includes('public.items'))!.name;
  toolOf.my = tools.find((x) => x.description.includes(`${t.name}.items`))!.name;
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
  receiver?.stop();
}, 60_000);

interface Row {
  id: string;
  outcome: string;
  details: Record<string, unknown>;
}

/** The org's refused tools/call rows, oldest first. */
async function refusedRows(): Promise<Row[]> {
  await g.deps.audit.drain();
  const rows = rowsOf<Row>(
    await g.deps.store.db.execute(
      sql`SELECT id, outcome, details FROM audit_events WHERE org_id = ${org.orgId} AND action = 'tool.called' AND outcome = 'refused' ORDER BY seq`,
    ),
  );
  return rows.map((r) => ({ ...r, details: typeof r.details === 'string' ? JSON.parse(r.details) : r.details }));
}

const setting = (value: string) => sdk.updateOrg({ client: sdkFor(g, token).client, body: { audit_statements: value as sdk.AuditStatements } });

const ATTEMPTS: Record<'pg' | 'my', string> = {
  pg: `DELETE FROM items WHERE name = '${SECRET}' OR id = ${NUMBER}`,
  my: `SELECT name FROM items WHERE name = '${SECRET}'; DROP TABLE items`,
};

describe.skipIf(!available)('audit_statements: what a refused row keeps', () => {
  test('the org says fingerprint by default; only an admin changes it, to one of the three values', async () => {
    const client = sdkFor(g, token).client;
    expect((await sdk.getOrg({ client, throwOnError: true })).data.audit_statements).toBe('fingerprint');
    expect((await api(g, 'PATCH', '/api/org', token, { audit_statements: 'everything' })).status).toBe(400);
    expect((await api(g, 'PATCH', '/api/org', token, {})).status).toBe(400);
    const contributor = await tokenFor(g, org.clientId, org.clientSecret, 'mcp:call');
    expect((await api(g, 'PATCH', '/api/org', contributor, { audit_statements: 'full' })).status).toBe(403);
  });

  for (const keep of ['full', 'none', 'fingerprint'] as const) {
    test(`${keep}: on PostgreSQL and MariaDB the row keeps ${keep === 'full' ? 'the statement as sent' : keep === 'none' ? 'no statement text at all' : 'the fingerprint, no literal'}`, async () => {
      const changed = await setting(keep);
      expect(changed.response.status).toBe(200);
      expect(changed.data?.audit_statements).toBe(keep);
      const before = (await refusedRows()).length;
      for (const dialect of ['pg', 'my'] as const) {
        const answer = await callTool(g, org.slug, key, toolOf[dialect], { sql: ATTEMPTS[dialect] });
        expect(answer.body.result.isError).toBe(true);
      }
      const rows = (await refusedRows()).slice(before);
      expect(rows.map((r) => r.details.reason_class)).toEqual(['write', 'multiple_statements']);
      for (const [i, dialect] of (['pg', 'my'] as const).entries()) {
        const d = rows[i]!.details;
        const fingerprint = statementFingerprint(ATTEMPTS[dialect]);
        expect(d.fingerprint_id).toBe(fingerprintId(fingerprint));
        if (keep === 'full') {
          expect(d.statement).toBe(ATTEMPTS[dialect]);
          expect(d.fingerprint).toBe(fingerprint);
        } else {
          expect(d.statement).toBeUndefined();
          expect(d.fingerprint).toBe(keep === 'fingerprint' ? fingerprint : undefined);
          expect(JSON.stringify(rows[i])).not.toContain(SECRET);
          expect(JSON.stringify(rows[i])).not.toContain(NUMBER);
        }
      }
    });
  }

  test('the change is audited as org.updated, naming the value', async () => {
    const res = await api(g, 'GET', '/api/audit?action=org.updated', token);
    const events = ((await res.json()) as { events: { details: Record<string, unknown> }[] }).events;
    expect(events.map((e) => e.details.audit_statements)).toEqual(['fingerprint', 'none', 'full']);
  });

  test('the redacted export holds no statement text even from full rows; the plain export has it', async () => {
    const redacted = await api(g, 'GET', '/api/audit/export-json?redact=true', token);
    const text = await redacted.text();
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('items WHERE');
    expect(text).not.toContain('"statement"');
    expect(text).not.toContain('"fingerprint"');
    const plain = await (await api(g, 'GET', '/api/audit/export-json', token)).text();
    expect(plain).toContain(SECRET);
  });
});

describe.skipIf(!available)('the tool.refused webhook event (opt-in)', () => {
  test('an endpoint taking tool.refused gets refused calls only; one taking tool.called never gets them', async () => {
    const client = sdkFor(g, token).client;
    const refusedHook = (await sdk.createWebhook({ client, throwOnError: true, body: { url: receiver.url('/refused'), events: ['tool.refused'] } })).data;
    const calledHook = (await sdk.createWebhook({ client, throwOnError: true, body: { url: receiver.url('/called'), events: ['tool.called'] } })).data;
    await setting('fingerprint');
    await callTool(g, org.slug, key, toolOf.pg, { sql: ATTEMPTS.pg });
    await callTool(g, org.slug, key, toolOf.my, { sql: 'SELECT name FROM items' });
    await g.deps.audit.drain();
    await relayToolCalled(g.deps.store.db);
    const outbox = rowsOf<{ type: string; body: string; webhook_id: string }>(
      await g.deps.store.db.execute(
        sql`SELECT e.type, e.body, d.webhook_id FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.org_id = ${org.orgId}`,
      ),
    );
    const refused = outbox.filter((o) => o.webhook_id === refusedHook.id);
    const called = outbox.filter((o) => o.webhook_id === calledHook.id);
    expect(refused.map((o) => o.type)).toEqual(['tool.refused']);
    expect(called.map((o) => o.type)).toEqual(['tool.called']);
    const [row] = (await refusedRows()).slice(-1);
    const body = JSON.parse(refused[0]!.body);
    expect(body.id).toBe(`evt_${row!.id}`);
    expect(body.data).toEqual({
      tool_name: toolOf.pg,
      connector_id: expect.any(String),
      connector_type: 'postgresql',
      reason_class: 'write',
      reason: expect.any(String),
      fingerprint_id: fingerprintId(statementFingerprint(ATTEMPTS.pg)),
      fingerprint: statementFingerprint(ATTEMPTS.pg),
      caller: { type: 'api_key', id: expect.any(String) },
    });
    expect(refused[0]!.body).not.toContain(SECRET);
  });
});
