/**
 * Issue 38 item 1 on PostgreSQL, at the guard (docs/decisions/0292): the shared join cases (test/connectors/join-cases.ts)
 * against a real server. First, that every case is an attack: run ungoverned, each answers something else than what
 * the governed call must (another tenant's rows, raw masked values) or holds a secret.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { serviceAvailable } from '../support/services.ts';
import { createTargets, type Targets } from '../support/targets.ts';
import {
  DISABLED_TABLE,
  JOIN_ANSWERS,
  JOIN_CALLER,
  JOIN_FIXTURE,
  JOIN_POLICY,
  JOIN_REFUSALS,
  JOIN_TABLES,
  type JoinCase,
  leakedSecret,
  sameRows,
  sqlFor,
} from '../connectors/join-cases.ts';

const available = await serviceAvailable('postgres');
const onPg = (c: JoinCase): boolean => c.only === undefined || c.only.includes('postgresql');
let t: Targets;

beforeAll(async () => {
  if (!available) return;
  t = await createTargets('h1_joinguard', 'pg');
  for (const s of JOIN_FIXTURE) await t.pg(s);
});
afterAll(async () => {
  await t?.drop();
});

describe.skipIf(!available)('the join cases are attacks (ungoverned, each would fail)', () => {
  test('the fixture holds every listed table, and the other tenant’s rows', async () => {
    const names = (await t.pg("select relname from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'v')")).map((r) => r.relname);
    for (const n of JOIN_TABLES) expect(names).toContain(n);
    const [row] = await t.pg(`select count(*)::int as n from customers where tenant <> '${JOIN_CALLER.tenant}'`);
    expect(row!.n).toBeGreaterThan(0);
  });

  for (const c of JOIN_ANSWERS.filter(onPg)) {
    test(`answer case differs ungoverned: ${c.name}`, async () => {
      // An error (the side-channel case divides by zero on the other tenant's row) differs too.
      const raw = await t.pg(sqlFor(c, 'public')).catch((e: Error) => [{ error: e.message }]);
      expect(sameRows(raw, c.rows!)).toBe(false);
    });
  }

  for (const c of JOIN_REFUSALS.filter((r) => r.refused === DISABLED_TABLE || r.refused === JOIN_POLICY.hidden_columns[0])) {
    test(`refusal case leaks ungoverned: ${c.name}`, async () => {
      const raw = await t.pg(sqlFor(c, 'public'));
      // A hidden value comes back; a disabled table's rows at least decide the answer (an oracle).
      if (c.refused === DISABLED_TABLE) expect(raw.length).toBeGreaterThan(0);
      else expect(leakedSecret(JSON.stringify(raw))).not.toBeNull();
    });
  }
});
