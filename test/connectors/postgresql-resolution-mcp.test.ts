/**
 * The PostgreSQL resolution check through the whole gateway (issue 7 items 1, 2): a tools/call on the MCP endpoint
 * whose text resolves to a user function is refused as a tool error, the TTL comes from
 * TOOLGATE_PG_RESOLUTION_CACHE_TTL_SECONDS, and a connector whose role lacks TEMPORARY is reported as failed with the
 * reason in status_reason. The per-class cases are in postgresql-resolution.test.ts.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from '../support/gateway.ts';
import { callTool, createConnector, listToolNames, type Credential } from '../support/mcp.ts';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');
const SECRET = 'mcp-secret-5b2e';
const role = `tg_notemp_${randomBytes(4).toString('hex')}`;

let g: TestGateway;
let t: Targets;
let org: Onboarded;
let token: string;
let key: Credential;
let tool: string;

const text = (answer: { body: any }): string => (answer.body.result.content as { text: string }[]).map((c) => c.text).join('\n');

describe.skipIf(!available)('postgresql resolution check through the MCP endpoint', () => {
  beforeAll(async () => {
    [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_PG_RESOLUTION_CACHE_TTL_SECONDS: '0' }), createTargets('tg_res_mcp', 'pg')]);
    await t.pg(`create table secrets (s text); insert into secrets values ('${SECRET}')`);
    await t.pg('create function leak(items) returns text language sql as $$ select s from secrets limit 1 $$');
    org = await onboard(g);
    token = await tokenFor(g, org.clientId, org.clientSecret);
    key = { apiKey: org.apiKey };
    const connector = await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    expect(connector.status).toBe('active');
    tool = (await listToolNames(g, org.slug, key)).find((n) => n.includes('items'))!;
    expect(tool).toBeDefined();
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    await t?.pg(`drop owned by ${role}; drop role if exists ${role}`).catch(() => undefined);
    await t?.drop();
  }, 60_000);

  test('attribute notation to a user function is a tool error, and the secret never appears', async () => {
    const answer = await callTool(g, org.slug, key, tool, { sql: 'SELECT i.leak FROM items i' });
    expect(answer.status).toBe(200);
    expect(answer.body.result.isError).toBe(true);
    expect(text(answer)).toContain('function leak(items)');
    expect(JSON.stringify(answer.body)).not.toContain(SECRET);
  });

  test('with TOOLGATE_PG_RESOLUTION_CACHE_TTL_SECONDS=0 a function created later is refused at the next call', async () => {
    const sql = 'SELECT initcap(name) AS n FROM items ORDER BY id';
    const before = await callTool(g, org.slug, key, tool, { sql });
    expect(before.body.result.isError, text(before)).toBeFalsy();
    await t.pg('create function public.initcap(text) returns text language sql as $$ select s from secrets limit 1 $$');
    const after = await callTool(g, org.slug, key, tool, { sql });
    expect(after.body.result.isError).toBe(true);
    expect(JSON.stringify(after.body)).not.toContain(SECRET);
  });

  test('a role without TEMPORARY: the connector fails validation with the reason in status_reason', async () => {
    await t.pg(`create role ${role} login; revoke temporary on database ${t.name} from public; grant select on items to ${role}`);
    const failed = await createConnector(g, token, { name: 'no temp', type: 'postgresql', config: { ...t.pgConfig, user: role } });
    expect(failed.status).toBe('failed');
    expect(failed.status_reason).toContain('lacks the TEMPORARY privilege');
  });
});
