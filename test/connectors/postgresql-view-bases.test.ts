/**
 * Decision 0292 item 4 live on PostgreSQL (0296): a view reads its base tables where the policy rewrite cannot reach,
 * so introspection records what each view reads (pg_depend of its rewrite rule) and a statement touching a view over a
 * disabled table or one with a policy is refused, naming that table, through every form (the view alone, joined, a
 * view of a view, a materialized view). A view over ungoverned tables answers. The shared join fixture is used.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import { postgresqlDriver } from '../../src/connectors/postgresql/driver.ts';
import { policyKey } from '../../src/connectors/shared/policy.ts';
import type { CallTable, ExecutionContext, SqlToolSpec, ToolResult } from '../../src/connectors/types.ts';
import { DISABLED_TABLE, JOIN_CALLER, JOIN_FIXTURE, JOIN_POLICY, leakedSecret } from './join-cases.ts';

const available = await serviceAvailable('postgres');
let t: Targets;
let tools: SqlToolSpec[];
const connectorId = `h2-pg-view-bases-${process.pid}`;

const tool = (name: string): SqlToolSpec => {
  const found = tools.find((x) => x.target.table === name);
  if (!found) throw new Error(`no tool for ${name}`);
  return found;
};
const ctx = (): ExecutionContext => ({
  connectorId,
  config: { ...t.pgConfig, schemas: ['public'] },
  credential: null,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  limits: { statementTimeoutMs: 5000, lockTimeoutMs: 500, maxRows: 1000, maxResultBytes: 1_000_000 },
  tables: {
    key: 'h2-pg-views',
    list: tools.map(
      (x): CallTable => ({
        target: x.target,
        enabled: x.target.table !== DISABLED_TABLE,
        ...(x.target.table === 'customers' ? { policy: { policy: JOIN_POLICY, key: policyKey(JOIN_POLICY), maskKey: null, caller: JOIN_CALLER } } : {}),
      }),
    ),
  },
});
const textOf = (r: ToolResult): string => r.content.map((c) => ('text' in c ? String(c.text) : '')).join('\n');

beforeAll(async () => {
  if (!available) return;
  t = await createTargets('h2_pgview', 'pg');
  for (const s of JOIN_FIXTURE) await t.pg(s);
  await t.pg('CREATE VIEW customer_view AS SELECT id, name, email, ssn FROM customers');
  await t.pg('CREATE VIEW view_of_view AS SELECT v.name AS n FROM customer_view v');
  await t.pg('CREATE MATERIALIZED VIEW customer_mat AS SELECT id, email FROM customers');
  await t.pg('CREATE VIEW pay_view AS SELECT p.salary FROM payroll p');
  tools = (await postgresqlDriver.introspect(connectorId, { ...t.pgConfig, schemas: ['public'] }, null)) as SqlToolSpec[];
});
afterAll(async () => {
  await postgresqlDriver.close(connectorId);
  await t?.drop();
});

describe.skipIf(!available)('postgresql: views over governed tables', () => {
  test('introspection records what each view reads', () => {
    expect(tool('customer_view').target.bases).toEqual([{ schema: 'public', table: 'customers' }]);
    expect(tool('view_of_view').target.bases).toEqual([{ schema: 'public', table: 'customer_view' }]);
    expect(tool('customer_mat').target.bases).toEqual([{ schema: 'public', table: 'customers' }]);
    expect(tool('big_orders').target.bases).toEqual([{ schema: 'public', table: 'orders' }]);
    expect(tool('orders').target.bases).toBeUndefined();
  });

  test('a view over a table with a policy or a disabled one is refused naming it, in every form, and leaks nothing', async () => {
    for (const [sql, named] of [
      ['SELECT name, email FROM customer_view', 'public.customers'],
      ['SELECT o.id, v.email FROM orders o JOIN customer_view v ON v.id = o.customer_id', 'public.customers'],
      ['SELECT n FROM view_of_view', 'public.customers'],
      ['SELECT email FROM customer_mat', 'public.customers'],
      ['SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM pay_view)', `public.${DISABLED_TABLE}`],
    ] as const) {
      const r = await postgresqlDriver.execute(tool('orders'), { sql }, ctx());
      expect(r.isError, sql).toBe(true);
      expect(textOf(r), sql).toContain(named);
      expect(leakedSecret(JSON.stringify(r)), sql).toBeNull();
    }
    // Ungoverned, the view hands out the raw values: the refusal is what stands between.
    expect(leakedSecret(JSON.stringify(await t.pg('SELECT email, ssn FROM customer_view')))).not.toBeNull();
  });

  test('a view over ungoverned tables answers', async () => {
    const r = await postgresqlDriver.execute(tool('orders'), { sql: 'SELECT id FROM big_orders ORDER BY id' }, ctx());
    if (r.isError) throw new Error(textOf(r));
    expect((r.structuredContent as { rows: unknown[] }).rows).toEqual([{ id: 11 }, { id: 12 }, { id: 13 }]);
  });
});
