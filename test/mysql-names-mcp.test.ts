// Issue 7, items 2-3 end to end: a MySQL connector created over REST on a real gateway, its tools called over MCP.
// What introspection records for the guard (name mode, shadowing stored functions) must survive the store and
// reach every call; case twins of the table and of the database never answer through the tool.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { verifies } from './requirements.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { callTool, createConnector, restTools, rpc, rowsOf, type Credential } from './support/mcp.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('mysql');

let g: TestGateway;
let org: Onboarded;
let key: Credential;
let t: Targets;
let twinDb: string;
let caseSensitive = false;
let token: string;

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_mcp_names', 'my')]);
  caseSensitive = Number((await t.my('SELECT @@lower_case_table_names AS l'))[0]?.l) === 0;
  twinDb = t.name.toUpperCase();
  if (caseSensitive) {
    await t.my('CREATE TABLE ITEMS (id integer, name varchar(50))');
    await t.my("INSERT INTO ITEMS VALUES (1, 'TWIN-TABLE-SECRET')");
    await t.my(`CREATE DATABASE \`${twinDb}\``);
    await t.my(`CREATE TABLE \`${twinDb}\`.items (id integer, name varchar(50))`);
    await t.my(`INSERT INTO \`${twinDb}\`.items VALUES (1, 'TWIN-DB-SECRET')`);
  }
  await t.my('CREATE FUNCTION lower(a TEXT) RETURNS TEXT READS SQL DATA RETURN (SELECT body FROM notes LIMIT 1)');
  org = await onboard(g);
  token = await tokenFor(g, org.clientId, org.clientSecret);
  key = { apiKey: org.apiKey };
  const connector = await createConnector(g, token, { name: 'shop', type: 'mysql', config: t.myConfig });
  expect(connector.status).toBe('active');
}, 120_000);
afterAll(async () => {
  if (caseSensitive) await t?.my(`DROP DATABASE IF EXISTS \`${twinDb}\``);
  await g?.close();
  await t?.drop();
}, 60_000);

const text = (answer: { body: any }): string => (answer.body.result.content as { text: string }[]).map((c) => c.text).join('\n');

describe.skipIf(!available)('mysql names over MCP', () => {
  test('tools/list: one tool per case twin, columns listed once, nothing from the twin database', async () => {
    const answer = await rpc(g, org.slug, key, 'tools/list', {});
    const tools = answer.body.result.tools as { name: string; description: string }[];
    const items = tools.find((x) => x.name === 'query_mysql_items')!;
    expect(items.description).toContain(`${t.name}.items (columns: id int(11), name varchar(50), price int(11))`);
    expect(
      tools
        .map((x) => x.name)
        .filter((n) => n.startsWith('query_'))
        .sort(),
    ).toEqual((caseSensitive ? ['query_mysql_items', 'query_mysql_items_2', 'query_mysql_notes'] : ['query_mysql_items', 'query_mysql_notes']).sort());
    if (caseSensitive) expect(tools.find((x) => x.name === 'query_mysql_items_2')!.description).toContain(`${t.name}.ITEMS`);
  });

  test("the items tool never answers with a twin's rows unless the twin's own row allows it", async () => {
    verifies('SQL-OTHER-TABLE');
    if (!caseSensitive) return; // no twins can exist on a case-insensitive server
    // The twin table is a table of the connector with its own tool row (decision 0292): disabled, no statement reads it.
    const twin = (await restTools(g, token, org.orgId)).find((x) => x.tool_name === 'query_mysql_items_2')!;
    const setTwin = (enabled: boolean) => api(g, 'PATCH', `/api/mcp/${org.orgId}/tools/${twin.id}/metadata`, token, { enabled });
    expect((await setTwin(false)).status).toBe(200);
    for (const sql of [
      'SELECT * FROM ITEMS',
      `SELECT * FROM ${twinDb}.items`,
      `SELECT * FROM \`${t.name}\`.\`ITEMS\``,
      'SELECT * FROM items UNION SELECT id, name, 0 FROM ITEMS',
    ]) {
      const answer = await callTool(g, org.slug, key, 'query_mysql_items', { sql });
      expect({ sql, isError: answer.body.result.isError }).toEqual({ sql, isError: true });
      expect(text(answer)).not.toContain('SECRET');
    }
    expect((await setTwin(true)).status).toBe(200);
    // The twin database is no table of the connector: refused whatever the rows say.
    const other = await callTool(g, org.slug, key, 'query_mysql_items', { sql: `SELECT * FROM ${twinDb}.items` });
    expect([other.body.result.isError, text(other).includes('SECRET')]).toEqual([true, false]);
    expect(rowsOf(await callTool(g, org.slug, key, 'query_mysql_items', { sql: 'SELECT name FROM items WHERE id = 1' }))).toEqual([{ name: 'apple' }]);
    expect(rowsOf(await callTool(g, org.slug, key, 'query_mysql_items_2', { sql: 'SELECT name FROM ITEMS' }))).toEqual([{ name: 'TWIN-TABLE-SECRET' }]);
  });

  test('a stored function named like an allowed built-in is refused on every call (recorded at introspection, kept in the store)', async () => {
    const answer = await callTool(g, org.slug, key, 'query_mysql_items', { sql: 'SELECT LOWER(name) AS l FROM items' });
    expect(answer.body.result.isError).toBe(true);
    expect(text(answer)).toContain('stored function');
    expect(text(answer)).not.toContain('first');
    expect(rowsOf(await callTool(g, org.slug, key, 'query_mysql_items', { sql: 'SELECT UPPER(name) AS u FROM items WHERE id = 1' }))).toEqual([{ u: 'APPLE' }]);
  });
});
