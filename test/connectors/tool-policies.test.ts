/**
 * Hidden and masked columns and row filters bound to the caller (issue 30 items 3-4), on live PostgreSQL and MariaDB
 * through the MCP endpoint: one attack case per class, each written to fail if the class reopens (a secret value or
 * another tenant's row in the answer, or a refused statement let through). The defence each relies on is named in the
 * case and in docs/tool-policies.md: G = guard refusal, R = the derived-table rewrite (the server resolves names
 * against a table without the hidden column and with only the caller's rows), F = the fence (OFFSET 0 / LIMIT max),
 * B = caller values bound as parameters. Guard-level cases for mssql and oracle are in test/sqlguard/policy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from '../support/gateway.ts';
import { callTool, createConnector, rpc, type Credential, type RpcAnswer } from '../support/mcp.ts';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { sdkFor } from '../support/sdk.ts';
import * as sdk from '../../sdk/index.ts';
import { idpConfig, idpGatewayEnv, idpToken, makeKey, pgHostPort, saveIdpConfig, startFakeIdp, type FakeIdp, type TestKey } from '../support/idp.ts';

setDefaultTimeout(60_000);
const [pgUp, myUp] = await Promise.all([serviceAvailable('postgres'), serviceAvailable('mysql')]);
const SECRET_KEY = 'b7'.repeat(32);
/** Values that must never come back: the hidden column's and the masked columns' raw values. */
const SSN_A = 'ssn-secret-a-111';
const SSN_B = 'ssn-secret-b-222';
const EMAIL_A = 'alice@tenant-a.example';
const EMAIL_B = 'bob@tenant-b.example';

const PEOPLE = [
  'CREATE TABLE people (id integer PRIMARY KEY, tenant varchar(20) NOT NULL, email varchar(100), phone varchar(30), ssn varchar(30))',
  `INSERT INTO people VALUES (1, 'a', '${EMAIL_A}', '+44 20 7946 0001', '${SSN_A}'), (2, 'a', NULL, '555-0102', '${SSN_A}x'),` +
    ` (3, 'b', '${EMAIL_B}', '555-0103', '${SSN_B}'), (4, 'b', 'carol@tenant-b.example', '555-0104', '${SSN_B}x')`,
];

const POLICY = {
  hidden_columns: ['ssn'],
  masked_columns: [
    { column: 'email', mask: 'hash' as const },
    { column: 'phone', mask: 'last_n' as const, n: 4 },
  ],
  // Deliberately costlier than the attack's expression (PostgreSQL evaluates cheaper conditions first): without the
  // fence, the side-channel case below would see the other tenant's rows before this filter removed them.
  row_filter: 'upper(lower(upper(tenant))) = upper(:caller.tenant)',
};

const textOf = (a: RpcAnswer): string => JSON.stringify(a.body);
const rows = (a: RpcAnswer): Record<string, unknown>[] => {
  const result = a.body?.result;
  if (!result || result.isError) throw new Error(`tool call failed: ${a.text}`);
  return JSON.parse(result.content[0].text);
};
/** Fails when any raw protected value appears anywhere in the answer (rows, error text, structured content). */
function expectNoLeak(a: RpcAnswer): void {
  const t = textOf(a);
  for (const secret of [SSN_A, SSN_B, EMAIL_A, EMAIL_B, 'carol@']) expect(t).not.toContain(secret);
}
function expectRefused(a: RpcAnswer, why?: string): void {
  expect(a.status).toBe(200);
  expect(a.body.result?.isError, a.text).toBe(true);
  if (why) expect(a.body.result.content[0].text).toContain(why);
  expectNoLeak(a);
}

interface Setup {
  g: TestGateway;
  t: Targets;
  org: Onboarded;
  tool: string;
  /** The `items` tool, which has no policy. */
  plain: string;
  keys: Record<'a' | 'b' | 'none' | 'sqlish', Credential>;
  maskKey: Buffer;
  /** The org-level token's REST client, and the connector's id (saved tools). */
  client: ReturnType<typeof sdkFor>['client'];
  connectorId: string;
}

async function setUp(kind: 'pg' | 'my'): Promise<Setup> {
  const [g, t] = await Promise.all([startTestGateway('pglite', { TOOLGATE_SECRET_KEY: SECRET_KEY }), createTargets('tg_pol', kind)]);
  for (const s of PEOPLE) await t[kind](s);
  const org = await onboard(g);
  const token = await tokenFor(g, org.clientId, org.clientSecret);
  const connector = await createConnector(g, token, {
    name: kind,
    type: kind === 'pg' ? 'postgresql' : 'mysql',
    config: kind === 'pg' ? t.pgConfig : t.myConfig,
  });
  expect(connector.status).toBe('active');
  const client = sdkFor(g, token).client;
  const tools = (await sdk.listTools({ client, path: { orgId: org.orgId } })).data!.tools;
  const people = tools.find((x) => x.tool_name.includes('people'))!;
  const patched = await sdk.updateToolMetadata({ client, path: { orgId: org.orgId, toolId: people.id }, body: { policy: POLICY } });
  expect(patched.response.status, JSON.stringify(patched.error)).toBe(200);
  expect(patched.data!.policy).toEqual(POLICY);
  const key = async (attributes?: Record<string, string>): Promise<Credential> => {
    const made = await sdk.createApiKey({ client, body: { name: `k${Math.random()}`, ...(attributes ? { attributes } : {}) } });
    expect(made.response.status).toBe(201);
    return { apiKey: made.data!.key };
  };
  const keys = { a: await key({ tenant: 'a' }), b: await key({ tenant: 'b' }), none: await key(), sqlish: await key({ tenant: "a' OR '1'='1" }) };
  const maskKey = createHmac('sha256', Buffer.from(SECRET_KEY, 'hex')).update(`toolgate mask key v1:${org.orgId}`).digest();
  const plain = tools.find((x) => x.tool_name.includes('items'))!.name;
  return { g, t, org, tool: people.name, plain, keys, maskKey, client, connectorId: connector.id };
}

for (const kind of ['pg', 'my'] as const) {
  const up = kind === 'pg' ? pgUp : myUp;
  describe.skipIf(!up)(`tool policies on ${kind === 'pg' ? 'PostgreSQL' : 'MariaDB'} through the MCP endpoint`, () => {
    let s: Setup;
    const call = (sql: string, who: keyof Setup['keys'] = 'a') => callTool(s.g, s.org.slug, s.keys[who], s.tool, { sql });
    const ids = async (sql: string, who: keyof Setup['keys'] = 'a') => rows(await call(sql, who)).map((r) => Number(Object.values(r)[0]));
    beforeAll(async () => {
      s = await setUp(kind);
    }, 120_000);
    afterAll(async () => {
      await s?.g.close();
      await s?.t.drop();
    }, 60_000);

    test('tools/list describes only the columns the caller may see', async () => {
      const listed = await rpc(s.g, s.org.slug, s.keys.a, 'tools/list', {});
      const tool = (listed.body.result.tools as { name: string; description: string; annotations: { readOnlyHint: boolean } }[]).find(
        (t) => t.name === s.tool,
      )!;
      expect(tool.description).not.toContain('ssn');
      expect(tool.description).toContain('email text (masked: hash)');
      expect(tool.description).toContain('phone text (masked: last-n)');
      expect(tool.description).toContain('Rows are limited');
      expect(tool.annotations.readOnlyHint).toBe(true);
    });

    describe('hidden column', () => {
      test('named (bare, qualified, quoted, any case) [G]', async () => {
        const q = kind === 'pg' ? '"ssn"' : '`SSN`';
        for (const sql of ['SELECT ssn FROM people', 'SELECT p.ssn FROM people p', `SELECT ${q} FROM people`]) expectRefused(await call(sql), 'not available');
      });
      test('*, t.* and a derived table over * [R]', async () => {
        for (const sql of ['SELECT * FROM people', 'SELECT p.* FROM people p', 'SELECT * FROM (SELECT * FROM people) x']) {
          const a = await call(sql);
          expectNoLeak(a);
          for (const r of rows(a)) expect(Object.keys(r).sort()).toEqual(['email', 'id', 'phone', 'tenant']);
        }
      });
      test('whole-row values and functions over the row [R]', async () => {
        const sqls =
          kind === 'pg'
            ? [
                'SELECT p FROM people p',
                'SELECT ROW(p.*) FROM people p',
                'SELECT to_json(p) FROM people p',
                'SELECT row_to_json(p)::text FROM people p',
                'SELECT people FROM people',
              ]
            : ["SELECT JSON_OBJECT('r', CONCAT_WS(',', p.id, p.email)) FROM people p"];
        for (const sql of sqls) {
          const a = await call(sql);
          expect(a.body.result.isError, a.text).toBeFalsy();
          expectNoLeak(a);
        }
      });
      test('WHERE / ORDER BY / GROUP BY / HAVING / join conditions naming it [G]', async () => {
        for (const sql of [
          "SELECT id FROM people WHERE ssn LIKE 'ssn-secret-a%'",
          'SELECT id FROM people ORDER BY ssn',
          'SELECT count(*) FROM people GROUP BY ssn',
          'SELECT tenant FROM people GROUP BY tenant HAVING max(ssn) > 0',
          'SELECT a.id FROM people a JOIN people b ON a.ssn = b.ssn',
        ]) {
          expectRefused(await call(sql), 'not available');
        }
      });
      test('filtering or ordering over the whole row cannot reach it [R]', async () => {
        const sql =
          kind === 'pg'
            ? "SELECT count(*) AS n FROM people p WHERE to_json(p)::text LIKE '%ssn-secret%'"
            : "SELECT count(*) AS n FROM people p WHERE CONCAT_WS(',', p.id, p.tenant, p.email, p.phone) LIKE '%ssn-secret%'";
        expect(await ids(sql)).toEqual([0]);
      });
      test('subqueries, CTEs and UNION [G+R]', async () => {
        expectRefused(await call('SELECT (SELECT ssn FROM people LIMIT 1) AS s'), 'not available');
        expectRefused(await call('SELECT id, email FROM people UNION SELECT id, ssn FROM people'), 'not available');
        for (const sql of ['WITH x AS (SELECT * FROM people) SELECT * FROM x', 'SELECT * FROM people UNION ALL SELECT * FROM people']) {
          const a = await call(sql);
          expectNoLeak(a);
          for (const r of rows(a)) expect(Object.keys(r)).not.toContain('ssn');
        }
      });
      test('error messages: a failing cast of the whole row shows no hidden or raw value [R]', async () => {
        const sql = kind === 'pg' ? 'SELECT CAST(to_json(p)::text AS integer) FROM people p' : 'SELECT CAST(p.tenant AS DECIMAL(2,1)) / 0 FROM people p';
        const a = await call(sql);
        expectNoLeak(a);
        if (kind === 'pg') expect(a.body.result.isError).toBe(true);
      });
      test('positional column aliases and system columns cannot reach it [R]', async () => {
        if (kind === 'pg') {
          expectRefused(await call('SELECT * FROM people AS p(a, b, c, d, e)'));
          expectRefused(await call('SELECT ctid, xmin FROM people'));
        } else {
          expectRefused(await call('SELECT _rowid FROM people'));
        }
      });
      test('writes on a tool with a policy are refused [G]', async () => {
        expectRefused(await call("UPDATE people SET phone = 'x' WHERE ssn = 'y'"));
      });
    });

    test('values come back in the same JSON form as from a tool without a policy (MariaDB: binary protocol)', async () => {
      const cast =
        kind === 'pg'
          ? "'2024-01-02'::date AS d, 12.50::numeric(10,2) AS m, 9007199254740993::bigint AS b, now()::date = current_date AS t"
          : "CAST('2024-01-02' AS DATE) AS d, CAST(12.5 AS DECIMAL(10,2)) AS m, CAST(9007199254740993 AS UNSIGNED) AS b, CAST('2024-01-02 03:04:05.5' AS DATETIME(1)) AS t";
      const policed = rows(await call(`SELECT ${cast} FROM people LIMIT 1`));
      const plain = rows(await callTool(s.g, s.org.slug, s.keys.a, s.plain, { sql: `SELECT ${cast} FROM items LIMIT 1` }));
      expect(policed).toEqual(plain);
    });

    describe('masked columns', () => {
      test('come back transformed (HMAC-SHA256 with the org key, last 4 characters)', async () => {
        const got = rows(await call('SELECT id, email, phone FROM people ORDER BY id'));
        expect(got).toEqual([
          { id: 1, email: createHmac('sha256', s.maskKey).update(EMAIL_A).digest('hex'), phone: '************0001' },
          { id: 2, email: null, phone: '****0102' },
        ]);
      });
      test('functions over them and filters on them see only the masked value [R]', async () => {
        const a = await call('SELECT upper(email) AS e, lower(phone) AS p FROM people');
        expectNoLeak(a);
        expect(await ids(`SELECT count(*) AS n FROM people WHERE email = '${EMAIL_A}' OR email LIKE 'alice%' OR phone LIKE '+44%'`)).toEqual([0]);
      });
    });

    describe('row filter bound to the caller', () => {
      test('each caller sees its own rows only', async () => {
        expect(await ids('SELECT id FROM people ORDER BY id', 'a')).toEqual([1, 2]);
        expect(await ids('SELECT id FROM people ORDER BY id', 'b')).toEqual([3, 4]);
      });
      test('a CTE named like the table, a self-join and subqueries still read the filtered table [R]', async () => {
        const cte = 'WITH people AS (SELECT * FROM people) SELECT id FROM people ORDER BY id';
        expect(await ids(cte)).toEqual([1, 2]);
        expect(await ids('SELECT (SELECT count(*) FROM people) AS n')).toEqual([2]);
        expect(await ids('SELECT count(*) AS n FROM people a, people b')).toEqual([4]);
        expect(await ids("SELECT id FROM people WHERE id IN (SELECT id FROM people WHERE tenant = 'b')")).toEqual([]);
      });
      test('UNION and set-returning functions [R]', async () => {
        expect(await ids("SELECT id FROM people UNION SELECT id FROM people WHERE tenant <> 'a' ORDER BY 1")).toEqual([1, 2]);
        if (kind === 'pg')
          expect(await ids("SELECT regexp_split_to_table((SELECT string_agg(id::text, ',' ORDER BY id) FROM people), ',') AS i")).toEqual([1, 2]);
        if (kind === 'pg') expect(await ids('SELECT jsonb_array_elements((SELECT jsonb_agg(p) FROM people p)) AS r')).toHaveLength(2);
        if (kind === 'pg') expect(await ids('SELECT unnest(array_agg(id)) AS i FROM people')).toEqual([1, 2]);
      });
      test("errors as a side channel: an expression that fails on other tenants' rows never sees them [F]", async () => {
        const sql =
          kind === 'pg'
            ? "SELECT id FROM people WHERE 1 / (CASE WHEN tenant = 'b' THEN 0 ELSE 1 END) = 1 ORDER BY id"
            : "SELECT id FROM people WHERE EXP(CASE WHEN tenant = 'b' THEN 1000 ELSE 0 END) > 0 ORDER BY id";
        const a = await call(sql);
        expect(a.body.result.isError, a.text).toBeFalsy();
        expect(rows(a).map((r) => r.id)).toEqual([1, 2]);
      });
      test('LIMIT / OFFSET count only visible rows [R+F]', async () => {
        expect(await ids('SELECT id FROM people ORDER BY id LIMIT 1 OFFSET 1')).toEqual([2]);
        expect(await ids('SELECT id FROM people ORDER BY id LIMIT 10 OFFSET 2')).toEqual([]);
      });
      test('a caller without the attribute sees no rows, never all [R]', async () => {
        expect(await ids('SELECT count(*) AS n FROM people', 'none')).toEqual([0]);
        expect(await ids('SELECT id FROM people', 'none')).toEqual([]);
      });
      test('an attribute carrying SQL is bound as a value, never spliced [B]', async () => {
        expect(await ids('SELECT count(*) AS n FROM people', 'sqlish')).toEqual([0]);
      });
      test('the statement cannot bind or read the parameters itself [G]', async () => {
        expectRefused(await call(kind === 'pg' ? 'SELECT $1::text AS t FROM people' : 'SELECT ? AS t FROM people'), 'parameters');
      });
      test("a held call, once approved, runs as its requester: the requester's rows, never another's or none", async () => {
        const path = {
          orgId: s.org.orgId,
          toolId: (await sdk.listTools({ client: s.client, path: { orgId: s.org.orgId } })).data!.tools.find((t) => t.name === s.tool)!.id,
        };
        expect((await sdk.updateToolMetadata({ client: s.client, path, body: { requires_approval: true } })).response.status).toBe(200);
        try {
          const outcome = async (who: keyof Setup['keys']) => {
            const held = await call('SELECT id FROM people ORDER BY id', who);
            const approvalId = held.body.result.structuredContent.approvalId as string;
            expect((await sdk.approveApproval({ client: s.client, path: { approvalId } })).response.status).toBe(200);
            for (let i = 0; i < 100; i++) {
              const polled = await callTool(s.g, s.org.slug, s.keys[who], 'check_approval_status', { approvalId });
              const status = polled.body.result.structuredContent;
              if (status.status !== 'pending' && status.status !== 'executing') return status;
              await Bun.sleep(50);
            }
            throw new Error('the approved call did not finish');
          };
          const forA = await outcome('a');
          expect(forA.status).toBe('executed');
          expect(forA.result.structuredContent.rows.map((r: { id: number }) => r.id)).toEqual([1, 2]);
          const forB = await outcome('b');
          expect(forB.result.structuredContent.rows.map((r: { id: number }) => r.id)).toEqual([3, 4]);
          const forNone = await outcome('none');
          expect(forNone.result.structuredContent.rows).toEqual([]);
        } finally {
          await sdk.updateToolMetadata({ client: s.client, path, body: { requires_approval: false } });
        }
      });
    });

    describe("a saved-statement tool under its table's policy (policies belong to the table: decision 0292)", () => {
      const SAVED = {
        name: `people_from_${kind}`,
        description: 'People from an id on, with a label',
        // A parameter before the table reference and two after it: MariaDB binds `?` by position, so the policy's
        // values (key pads, the caller's tenant) must land between them; `p.*` must not bring the hidden column.
        statement: 'SELECT :label AS label, p.* FROM people p WHERE p.id >= :min AND p.tenant <> :skip ORDER BY p.id',
        parameters: [
          { name: 'label', type: 'string' as const, description: 'A label' },
          { name: 'min', type: 'integer' as const, description: 'First id' },
          { name: 'skip', type: 'string' as const, description: 'A tenant to leave out', default: 'zzz' },
        ],
      };
      let savedId: string;
      const callSaved = (args: Record<string, unknown>, who: keyof Setup['keys'] = 'a') => callTool(s.g, s.org.slug, s.keys[who], SAVED.name, args);
      const policyOn = (toolId: string) => sdk.updateToolMetadata({ client: s.client, path: { orgId: s.org.orgId, toolId }, body: { policy: POLICY } });
      beforeAll(async () => {
        // No policy is set on the saved tool: the table's (set on its tool in setUp) governs the statement.
        const made = await sdk.createSavedTool({ client: s.client, path: { connectorId: s.connectorId }, body: SAVED });
        expect(made.response.status, JSON.stringify(made.error)).toBe(201);
        savedId = made.data!.id;
      });

      test('its rows are the caller’s, masked, without the hidden column; its arguments stay bound in their places [R+B]', async () => {
        const label = "x' OR '1'='1";
        const a = await callSaved({ label, min: 1 });
        expectNoLeak(a);
        const hash = createHmac('sha256', s.maskKey).update(EMAIL_A).digest('hex');
        expect(rows(a)).toEqual([
          { label, id: 1, tenant: 'a', email: hash, phone: '************0001' },
          { label, id: 2, tenant: 'a', email: null, phone: '****0102' },
        ]);
        expect(rows(await callSaved({ label: 'b', min: 4 }, 'b')).map((r) => r.id)).toEqual([4]);
        expect(rows(await callSaved({ label: 'a', min: 1, skip: 'a' })).map((r) => r.id)).toEqual([]);
        expect(rows(await callSaved({ label: 'none', min: 1 }, 'none'))).toEqual([]);
        expect(rows(await callSaved({ label: 'sql', min: 1 }, 'sqlish'))).toEqual([]);
      });

      test('a saved tool takes no policy of its own (422): the policy is set on the table’s tool', async () => {
        const refused = await policyOn(savedId);
        expect([refused.response.status, (refused.error as { error?: string }).error]).toEqual([422, 'policy_invalid']);
        expect((refused.error as { message: string }).message).toContain("table's tool");
      });

      test('saving a statement never widens the table’s policy: one naming the hidden column is refused, new or replacing (issue 38 item 7a) [G]', async () => {
        const leaky = { ...SAVED, name: `people_ssn_${kind}`, statement: 'SELECT id, ssn FROM people WHERE id >= :min', parameters: [SAVED.parameters[1]!] };
        const made = await sdk.createSavedTool({ client: s.client, path: { connectorId: s.connectorId }, body: leaky });
        expect([made.response.status, (made.error as { error?: string }).error]).toEqual([422, 'saved_tool_invalid']);
        expect((made.error as { message: string }).message).toContain('ssn');
        const replaced = await sdk.updateSavedTool({
          client: s.client,
          path: { connectorId: s.connectorId, toolId: savedId },
          body: { ...SAVED, statement: 'SELECT :label AS label, ssn FROM people WHERE id >= :min AND tenant <> :skip' },
        });
        expect([replaced.response.status, (replaced.error as { error?: string }).error]).toEqual([422, 'saved_tool_invalid']);
        // The tool still runs its old statement under the table's policy.
        expect(rows(await callSaved({ label: 'x', min: 2 })).map((r) => r.id)).toEqual([2]);
      });
    });
  });
}

describe.skipIf(!pgUp)('tool policies over REST', () => {
  let g: TestGateway;
  let t: Targets;
  let org: Onboarded;
  let token: string;
  let toolId: string;
  beforeAll(async () => {
    [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_pol_rest', 'pg')]);
    for (const s of PEOPLE) await t.pg(s);
    org = await onboard(g);
    token = await tokenFor(g, org.clientId, org.clientSecret);
    await createConnector(g, token, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    const tools = (await sdk.listTools({ client: sdkFor(g, token).client, path: { orgId: org.orgId } })).data!.tools;
    toolId = tools.find((x) => x.tool_name.includes('people'))!.id;
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 60_000);

  const patch = (policy: unknown) =>
    sdk.updateToolMetadata({ client: sdkFor(g, token).client, path: { orgId: org.orgId, toolId }, body: { policy: policy as never } });

  test('a policy that does not fit the table is refused with 422 policy_invalid, and nothing is stored', async () => {
    for (const [policy, why] of [
      [{ hidden_columns: ['nope'] }, 'not a column'],
      [{ hidden_columns: ['email'], masked_columns: [{ column: 'email', mask: 'hash' }] }, 'both hidden and masked'],
      [{ row_filter: 'tenant IN (SELECT tenant FROM people)' }, 'SELECT'],
      [{ row_filter: "tenant = 'a') UNION (SELECT 1" }, 'UNION'],
      [{ row_filter: 'tenant = :caller.tenant -- x' }, 'comments'],
      [{ row_filter: 'pg_sleep(1) IS NULL' }, 'refused'],
      [{ row_filter: 'tenant = :caller.tenant)' }, 'parentheses'],
    ] as const) {
      const answer = await patch(policy);
      expect([JSON.stringify(policy), answer.response.status]).toEqual([JSON.stringify(policy), 422]);
      expect(JSON.stringify(answer.error)).toContain('policy_invalid');
      expect(JSON.stringify(answer.error)).toContain(why);
    }
    const tools = (await sdk.listTools({ client: sdkFor(g, token).client, path: { orgId: org.orgId } })).data!.tools;
    expect(tools.find((x) => x.id === toolId)!.policy ?? null).toBeNull();
  });

  test('null removes a policy; the audit row keeps the old and the new policy', async () => {
    expect((await patch(POLICY)).response.status).toBe(200);
    const cleared = await patch(null);
    expect(cleared.response.status).toBe(200);
    expect(cleared.data!.policy).toBeNull();
    const audit = await g.deps.store.db.execute(
      `SELECT details FROM audit_events WHERE org_id = '${org.orgId}' AND action = 'tool.updated' ORDER BY created_at` as never,
    );
    const details = ((audit as unknown as { rows: { details: any }[] }).rows ?? (audit as unknown as { details: any }[])).map((r) => r.details);
    expect(details.at(-2).policy).toEqual({ old: null, new: POLICY });
    expect(details.at(-1).policy).toEqual({ old: POLICY, new: null });
  });

  test('attributes on an API key and an OAuth client are stored and shown', async () => {
    const client = sdkFor(g, token).client;
    const key = await sdk.createApiKey({ client, body: { name: 'tenant a', attributes: { tenant: 'a' } } });
    expect(key.data!.attributes).toEqual({ tenant: 'a' });
    const oc = await sdk.createOAuthClient({ client, body: { name: 'tenant b', scopes: ['mcp:call'], attributes: { tenant: 'b' } } });
    expect(oc.data!.attributes).toEqual({ tenant: 'b' });
    const bad = await sdk.createApiKey({ client, body: { name: 'bad', attributes: { 'no-dash': 'x' } as never } });
    expect(bad.response.status).toBe(400);
  });
});

describe.skipIf(!pgUp)('caller attributes from an IdP token and an OAuth client (PostgreSQL)', () => {
  let g: TestGateway;
  let t: Targets;
  let org: Onboarded;
  let manage: string;
  let tool: string;
  let toolId: string;
  let idp: FakeIdp;
  let key: TestKey;
  const AUD = 'toolgate-policies';
  const idpUser = (claims: Record<string, unknown>) => idpToken(key, idp.issuer, AUD, { role: 'admin', email: 'u@example.com', ...claims });
  const count = async (bearer: string): Promise<number> => {
    const a = await callTool(g, org.slug, { token: bearer }, tool, { sql: 'SELECT count(*) AS n FROM people' });
    return Number(Object.values(rows(a)[0]!)[0]);
  };
  beforeAll(async () => {
    key = await makeKey('kp');
    idp = startFakeIdp([key]);
    [g, t] = await Promise.all([startTestGateway('pglite', idpGatewayEnv(idp, [pgHostPort()])), createTargets('tg_pol_idp', 'pg')]);
    for (const s of PEOPLE) await t.pg(s);
    org = await onboard(g);
    manage = await tokenFor(g, org.clientId, org.clientSecret);
    await saveIdpConfig(g, manage, idpConfig(idp, AUD));
    await createConnector(g, manage, { name: 'pg', type: 'postgresql', config: t.pgConfig });
    const tools = (await sdk.listTools({ client: sdkFor(g, manage).client, path: { orgId: org.orgId } })).data!.tools;
    const people = tools.find((x) => x.tool_name.includes('people'))!;
    [tool, toolId] = [people.name, people.id];
    const set = await sdk.updateToolMetadata({
      client: sdkFor(g, manage).client,
      path: { orgId: org.orgId, toolId },
      body: { policy: { row_filter: 'tenant = :caller.tenant' } },
    });
    expect(set.response.status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    idp?.stop();
    await t?.drop();
  }, 60_000);

  test('an IdP claim is the attribute: each tenant its rows, no claim no rows, a nested claim is no attribute', async () => {
    expect(await count(await idpUser({ tenant: 'a' }))).toBe(2);
    expect(await count(await idpUser({ tenant: 'b' }))).toBe(2);
    expect(await count(await idpUser({}))).toBe(0);
    expect(await count(await idpUser({ tenant: ['a', 'b'] }))).toBe(0);
    expect(await count(await idpUser({ tenant: "a' OR 'x'='x" }))).toBe(0);
  });

  test("an OAuth client's attributes reach its tokens", async () => {
    const oc = await sdk.createOAuthClient({ client: sdkFor(g, manage).client, body: { name: 'b', scopes: ['mcp:call'], attributes: { tenant: 'b' } } });
    const bearer = await tokenFor(g, oc.data!.client_id, oc.data!.client_secret);
    expect(await count(bearer)).toBe(2);
    const ids = rows(await callTool(g, org.slug, { token: bearer }, tool, { sql: 'SELECT id FROM people ORDER BY id' })).map((r) => r.id);
    expect(ids).toEqual([3, 4]);
  });

  test('a contributor may change other settings but not the policy (403); an admin may', async () => {
    const contributor = sdkFor(g, await idpUser({ role: 'contributor', tenant: 'a' })).client;
    const denied = await sdk.updateToolMetadata({ client: contributor, path: { orgId: org.orgId, toolId }, body: { policy: null } });
    expect(denied.response.status).toBe(403);
    const allowed = await sdk.updateToolMetadata({ client: contributor, path: { orgId: org.orgId, toolId }, body: { approval_ttl_seconds: 600 } });
    expect(allowed.response.status).toBe(200);
    expect(allowed.data!.policy).toEqual({ hidden_columns: [], masked_columns: [], row_filter: 'tenant = :caller.tenant' });
    const admin = sdkFor(g, await idpUser({ tenant: 'a' })).client;
    expect((await sdk.updateToolMetadata({ client: admin, path: { orgId: org.orgId, toolId }, body: { policy: null } })).response.status).toBe(200);
  });
});
