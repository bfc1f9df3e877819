// Issue 38 item 6 through the MCP endpoint (decision 0306): a cut answer says so in the text the model reads, and
// TOOLGATE_MAX_RESULT_BYTES bounds the whole tools/call result (text, note and structuredContent together).
// Real PostgreSQL and MariaDB targets; the cap set the way an operator sets it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const available = (await serviceAvailable('postgres')) && (await serviceAvailable('mysql'));
const CAP = 4096;

let g: TestGateway;
let t: Targets;
let org: Onboarded;
const tools: Record<'pg' | 'my', string> = { pg: '', my: '' };

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_MAX_RESULT_BYTES: String(CAP) }), createTargets('tg_h5_answers')]);
  await t.pg("CREATE TABLE h5_rows AS SELECT g AS id, repeat('x', 100) AS filler FROM generate_series(1, 300) g");
  await t.my('CREATE TABLE h5_rows (id int PRIMARY KEY, filler varchar(200))');
  await t.my("INSERT INTO h5_rows SELECT seq, REPEAT('x', 100) FROM seq_1_to_300");
  org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
  await createConnector(g, token, { name: 'my', type: 'mysql', config: t.myConfig });
  const listed = (await sdk.listTools({ client: sdkFor(g, token).client, path: { orgId: org.orgId } })).data!.tools;
  tools.pg = listed.find((x) => x.tool_name === 'query_postgresql_h5_rows')!.name;
  tools.my = listed.find((x) => x.tool_name === 'query_mysql_h5_rows')!.name;
}, 120_000);
afterAll(async () => {
  await g?.close();
  await t?.drop();
});

describe.skipIf(!available)('answers the model can read', () => {
  for (const kind of ['pg', 'my'] as const) {
    test(`${kind}: the row limit and the size cap are told in a second text block; the whole result fits the cap`, async () => {
      const call = (args: Record<string, unknown>) => callTool(g, org.slug, { apiKey: org.apiKey }, tools[kind], args);
      const limited = (await call({ sql: 'SELECT id FROM h5_rows ORDER BY id', limit: 10 })).body.result;
      expect(JSON.parse(limited.content[0].text)).toEqual(Array.from({ length: 10 }, (_, i) => ({ id: i + 1 })));
      expect(limited.content[1]).toEqual({
        type: 'text',
        text:
          "Truncated: only the first 10 rows are shown; more rows exist beyond this call's limit of 10 rows. To see others, narrow the statement " +
          'with WHERE (or page: ORDER BY a key and WHERE it is past the last value shown), or aggregate (COUNT(*), GROUP BY), or raise the "limit" argument (at most 1000).',
      });

      const sized = (await call({ sql: 'SELECT id, filler FROM h5_rows ORDER BY id', limit: 1000 })).body.result;
      const whole = Buffer.byteLength(JSON.stringify(sized));
      expect(whole).toBeLessThanOrEqual(CAP);
      // Close to the cap, not far below it: the rows fill what the note and the envelope leave.
      expect(whole).toBeGreaterThan(CAP - 2 * 130 - 400);
      const n = sized.structuredContent.rows.length;
      expect(n).toBeGreaterThan(5);
      expect(JSON.parse(sized.content[0].text)).toEqual(sized.structuredContent.rows);
      expect(sized.content[1].text).toBe(
        `Truncated: only the first ${n} rows are shown; more rows exist, left out by the answer's size cap of ${CAP} bytes. ` +
          'Select fewer or shorter columns (leave out long text or binary values, or take a substring), or narrow the statement with WHERE.',
      );

      const all = (await call({ sql: 'SELECT id FROM h5_rows WHERE id <= 3 ORDER BY id' })).body.result;
      expect(all.content).toHaveLength(1);
      expect(all.structuredContent).toEqual({ rows: [{ id: 1 }, { id: 2 }, { id: 3 }], rowCount: 3, truncated: false });
    });
  }
});
