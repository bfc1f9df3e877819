// Issue 41 item 1: a statement the SQL guard or a policy refuses is an audit row of its own kind, outcome `refused`,
// with its reason class (set where the guard refuses), the reason the agent got and the statement's fingerprint;
// no literal value of the statement is kept, and the redacted export holds no statement text. Live PostgreSQL and
// MariaDB, through MCP tools/call on app.handle.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, rpc, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { rowsOf } from '../src/store/db.ts';
import { statementFingerprint } from '../src/audit/fingerprint.ts';
import { canonicalJson } from '../src/audit/chain.ts';
import { sha256Hex } from '../src/util/crypto.ts';

setDefaultTimeout(60_000);
const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));

const SECRET = 'h9-secret-literal';
const NUMBER = '424242';

let g: TestGateway;
let org: Onboarded;
let token: string;
let key: Credential;
let t: Targets;
const toolOf: Record<'pg' | 'my', string> = { pg: '', my: '' };

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('h9_refusals')]);
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
  expect((await createConnector(g, token, { name: 'pgshop', type: 'postgresql', config: t.pgConfig })).status).toBe('active');
  expect((await createConnector(g, token, { name: 'myshop', type: 'mysql', config: t.myConfig })).status).toBe('active');
  // Created after introspection: not a table of either connector.
  await t.pg("CREATE TABLE h9_other (id integer, secret text); INSERT INTO h9_other VALUES (1, 'x')");
  await t.my('CREATE TABLE h9_other (id integer, secret text)');
  const tools = (await rpc(g, org.slug, key, 'tools/list', {})).body.result.tools as { name: string; description: string }[];
  toolOf.pg = tools.find((x) => x.description.includes('public.items'))!.name;
  toolOf.my = tools.find((x) => x.description.includes(`${t.name}.items`))!.name;
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
}, 60_000);

interface Row {
  action: string;
  outcome: string;
  target_id: string;
  details: Record<string, unknown>;
}

/** The row of the last call with these arguments (rows of one batch share created_at: found by the arguments' digest). */
async function lastRow(args: Record<string, unknown>): Promise<Row> {
  const digest = sha256Hex(canonicalJson(args));
  const rows = rowsOf<Row>(
    await g.deps.store.db.execute(
      sql`SELECT action, outcome, target_id, details FROM audit_events WHERE org_id = ${org.orgId} AND action = 'tool.called'
        AND details->>'arguments_sha256' = ${digest} ORDER BY created_at DESC LIMIT 1`,
    ),
  );
  const row = rows[0]!;
  return { ...row, details: typeof row.details === 'string' ? JSON.parse(row.details) : row.details };
}

const CASES: Record<'pg' | 'my', [string, string][]> = {
  pg: [
    ['write', `DELETE FROM items WHERE name = '${SECRET}' OR id = ${NUMBER}`],
    ['multiple_statements', `SELECT name FROM items WHERE name = '${SECRET}'; DROP TABLE items`],
    ['function_not_allowed', `SELECT pg_sleep(${NUMBER}) FROM items WHERE name = '${SECRET}'`],
    ['other_table', `SELECT secret FROM h9_other WHERE secret = '${SECRET}' AND id = ${NUMBER}`],
    ['parse_error', `SELEC name FROM items WHERE name = '${SECRET}' AND id = ${NUMBER}`],
    ['ddl', `DROP TABLE items`],
    ['row_lock', `SELECT name FROM items WHERE name = '${SECRET}' FOR UPDATE`],
    ['statement_not_allowed', `SET work_mem = '${SECRET}'`],
    ['too_long', `SELECT name FROM items WHERE name = '${SECRET}' ${'AND id > 1 '.repeat(10_000)}`],
  ],
  my: [
    ['write', `DELETE FROM items WHERE name = '${SECRET}' OR id = ${NUMBER}`],
    ['multiple_statements', `SELECT name FROM items WHERE name = '${SECRET}'; DROP TABLE items`],
    ['function_not_allowed', `SELECT SLEEP(${NUMBER}) FROM items WHERE name = '${SECRET}'`],
    ['other_table', `SELECT secret FROM h9_other WHERE secret = '${SECRET}' AND id = ${NUMBER}`],
    ['parse_error', `SELEC name FROM items WHERE name = '${SECRET}' AND id = ${NUMBER}`],
    ['ddl', `DROP TABLE items`],
    ['row_lock', `SELECT name FROM items WHERE name = '${SECRET}' FOR UPDATE`],
    ['statement_not_allowed', `SHOW TABLES LIKE '${SECRET}'`],
    ['too_long', `SELECT name FROM items WHERE name = '${SECRET}' ${'AND id > 1 '.repeat(10_000)}`],
  ],
};

describe.skipIf(!available)('refusals recorded as refusals', () => {
  for (const dialect of ['pg', 'my'] as const) {
    for (const [reasonClass, statement] of CASES[dialect]) {
      test(`${dialect}: ${reasonClass} is a refused row with its class, reason and fingerprint, no literal`, async () => {
        const answer = await callTool(g, org.slug, key, toolOf[dialect], { sql: statement });
        expect(answer.body.result.isError).toBe(true);
        const told = (answer.body.result.content as { text: string }[])[0]!.text;
        const row = await lastRow({ sql: statement });
        expect({ outcome: row.outcome, class: row.details.reason_class, tool: row.target_id }).toEqual({
          outcome: 'refused',
          class: reasonClass,
          tool: toolOf[dialect],
        });
        expect(row.details.counted).toBe(false);
        expect(row.details.reason).toBe(told.replace(/'(?:[^'\\]|\\.|'')*'?/g, '?').slice(0, 1000));
        expect(row.details.fingerprint).toBe(statementFingerprint(statement));
        expect(row.details.fingerprint_id).toMatch(/^[0-9a-f]{16}$/);
        expect(row.details.statement).toBeUndefined();
        const stored = JSON.stringify(row);
        expect(stored).not.toContain(SECRET);
        expect(stored).not.toContain(NUMBER);
      });
    }
  }

  test('a database error stays `error`; a call that ran is `success`', async () => {
    const failing = { sql: 'SELECT 1 / (id - id) FROM items' };
    expect((await callTool(g, org.slug, key, toolOf.pg, failing)).body.result.isError).toBe(true);
    expect((await lastRow(failing)).outcome).toBe('error');
    const fine = { sql: 'SELECT name FROM items' };
    await callTool(g, org.slug, key, toolOf.my, fine);
    expect((await lastRow(fine)).outcome).toBe('success');
  });

  test('the redacted export keeps the class and fingerprint id, never the reason, fingerprint or statement', async () => {
    await g.deps.audit.drain();
    const res = await api(g, 'GET', '/api/audit/export-json?redact=true', token);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { events: { outcome: string; details: Record<string, unknown> }[] };
    const refused = body.events.filter((e) => e.outcome === 'refused');
    expect(refused.length).toBe(CASES.pg.length + CASES.my.length);
    for (const e of refused) {
      expect(Object.keys(e.details)).not.toContain('reason');
      expect(Object.keys(e.details)).not.toContain('fingerprint');
      expect(e.details.reason_class).toBeString();
      expect(e.details.fingerprint_id).toBeString();
    }
    const text = JSON.stringify(body);
    expect(text).not.toContain('items WHERE');
    expect(text).not.toContain(SECRET);
  });

  test('insights count the refused rows as refusals, not calls', async () => {
    const res = await api(g, 'GET', '/api/insights?days=1', token);
    const body = (await res.json()) as { totals: { calls: number; refusals: number; errors: number } };
    expect(body.totals.refusals).toBe(CASES.pg.length + CASES.my.length);
    expect(body.totals.calls).toBe(2);
    expect(body.totals.errors).toBe(1);
  });
});
