// Lock order in the store: creating a connector locks the org row (the plan's connector limit) and then writes an
// audit row under the org's chain head; a transaction that holds that head and inserts its own audit row takes the
// foreign-key KEY SHARE lock on the same org row. With FOR UPDATE on the org row the two waited for each other, and
// PostgreSQL's deadlock detector answered one of them with an error: a 500 on a well-formed request (seen in CI
// under load). FOR NO KEY UPDATE does not conflict with KEY SHARE. Real PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { describeError } from '../src/util/log.ts';
import { verifies } from './requirements.ts';
import { api, onboard, OPERATOR_TOKEN, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const available = await serviceAvailable('postgres');

describe.skipIf(!available)('store lock order (PostgreSQL)', () => {
  let g: TestGateway;
  let t: Targets;
  beforeAll(async () => {
    [g, t] = await Promise.all([startTestGateway('postgres'), createTargets('tg_lockorder', 'pg')]);
  }, 60_000);
  afterAll(async () => {
    await g?.close();
    await t?.drop();
  }, 60_000);

  test('connector creations racing audited revocations on one org: every answer is 2xx, none 500', async () => {
    verifies('STORE-LOCK-ORDER');
    const org = await onboard(g);
    const client = sdkFor(g, await tokenFor(g, org.clientId, org.clientSecret)).client;
    const statuses: string[] = [];
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          if (i % 4 === 0) {
            const created = await sdk.createConnector({ client, body: { name: `c${round}-${i}`, type: 'postgresql', config: t.pgConfig } });
            statuses.push(`create ${created.response.status}`);
          } else {
            // An UPDATE (no foreign-key check) and then the audit row under the chain head: head first, org row second.
            const key = await sdk.createApiKey({ client, throwOnError: true, body: { name: `k${round}-${i}` } });
            const revoked = await sdk.revokeApiKey({ client, path: { keyId: key.data.id } });
            statuses.push(`revoke ${revoked.response.status}`);
          }
        }),
      );
    }
    await g.deps.jobs.idle();
    expect(statuses.filter((s) => !/ 20[01]$/.test(s))).toEqual([]);
    expect(statuses.length).toBe(96);
  }, 60_000);

  test('operator plan changes racing audited revocations on one org: every answer is 2xx, none 500', async () => {
    verifies('STORE-LOCK-ORDER');
    // The operator's change locked the org row FOR UPDATE and then wrote its audit row under the chain head (seen in
    // CI as a 500 on PATCH /operator/orgs/{slug}). The changes go one after another (the operator token is a sign-in
    // door: concurrent attempts from one address are counted), the revocations by three workers beside them; plans
    // with REST limits above the workers' pace.
    const org = await onboard(g);
    const client = sdkFor(g, await tokenFor(g, org.clientId, org.clientSecret)).client;
    const statuses: string[] = [];
    let changing = true;
    const operator = (async () => {
      for (let i = 0; i < 24; i++) {
        const changed = await api(g, 'PATCH', `/operator/orgs/${org.slug}`, OPERATOR_TOKEN, { plan: i % 2 ? 'enterprise' : 'scale' });
        statuses.push(`change ${changed.status}`);
      }
      changing = false;
    })();
    const worker = async (w: number) => {
      for (let i = 0; changing; i++) {
        const key = await sdk.createApiKey({ client, body: { name: `k${w}-${i}` } });
        if (!key.data) return void statuses.push(`create ${key.response.status}`);
        const revoked = await sdk.revokeApiKey({ client, path: { keyId: key.data.id } });
        statuses.push(`revoke ${revoked.response.status}`);
      }
    };
    await Promise.all([operator, worker(0), worker(1), worker(2)]);
    await g.deps.jobs.idle();
    expect(statuses.filter((s) => !/ 20[01]$/.test(s))).toEqual([]);
    expect(statuses.filter((s) => s.startsWith('change'))).toHaveLength(24);
    expect(statuses.filter((s) => s.startsWith('revoke')).length).toBeGreaterThan(24);
  }, 60_000);
});

/**
 * The statements of `text` that lock an org row FOR UPDATE: a query builder chain from orgs to .for('update'), or SQL
 * text from `FROM orgs [alias]` to a FOR UPDATE within the statement (up to a backtick or semicolon) that names no
 * other table (`FOR UPDATE OF r` locks r's rows only).
 */
function orgRowLocks(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\.from\(orgs\)[^;]*?\.for\(\s*'update'/g)) found.push(m[0]);
  for (const m of text.matchAll(/\bFROM\s+orgs\b(?:\s+(?:AS\s+)?(?!WHERE|JOIN|CROSS|LEFT|INNER|ON|ORDER|GROUP|LIMIT|FOR)(\w+))?([^`;]*)/gi)) {
    const names = new Set(['orgs', (m[1] ?? 'orgs').toLowerCase()]);
    for (const lock of m[2]!.matchAll(/\bFOR\s+UPDATE\b(?:\s+OF\s+([\w\s,]+?)(?=\s+(?:SKIP|NOWAIT)\b|\)|$))?/gi)) {
      const of = lock[1]?.split(',').map((t) => t.trim().toLowerCase());
      if (!of || of.some((t) => names.has(t))) found.push(m[0].slice(0, 120));
    }
  }
  return found;
}

describe('store lock order in the source', () => {
  test('no statement locks an org row FOR UPDATE (FOR NO KEY UPDATE leaves foreign-key checks free)', async () => {
    verifies('STORE-LOCK-ORDER');
    const offenders: string[] = [];
    for await (const file of new Bun.Glob('src/**/*.ts').scan('.')) {
      if (orgRowLocks(await Bun.file(file).text()).length) offenders.push(file);
    }
    expect(offenders).toEqual([]);
    // The check sees the shapes it looks for, and not a lock of another table's rows beside orgs.
    expect(orgRowLocks("db.select().from(orgs).where(eq(orgs.slug, slug)).for('update');")).toHaveLength(1);
    expect(orgRowLocks("db.select().from(orgs).where(eq(orgs.slug, slug)).for('no key update');")).toHaveLength(0);
    expect(orgRowLocks('`SELECT plan FROM orgs WHERE id = $1 FOR UPDATE`')).toHaveLength(1);
    expect(orgRowLocks('`SELECT plan FROM orgs o WHERE id = $1 FOR UPDATE OF o`')).toHaveLength(1);
    expect(orgRowLocks('`SELECT plan FROM orgs WHERE id = $1 FOR NO KEY UPDATE`')).toHaveLength(0);
    expect(
      orgRowLocks('`SELECT x.ctid FROM orgs o CROSS JOIN LATERAL (SELECT r.ctid FROM t r WHERE r.org_id = o.id FOR UPDATE OF r SKIP LOCKED) x`'),
    ).toHaveLength(0);
  });
});

describe('store failures in logs', () => {
  test('the server error comes first; the statement parameters never appear', () => {
    verifies('LOG-ERROR-NO-PARAMS');
    const cause = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const wrapped = new Error(`Failed query: SELECT plan FROM orgs WHERE id = $1 ${'x'.repeat(600)}\nparams: 6f1c-secret-digest`, { cause });
    const text = describeError(wrapped);
    expect(text.startsWith('Error: 40P01 deadlock detected | Failed query: SELECT plan FROM orgs')).toBe(true);
    expect(text).not.toContain('6f1c-secret-digest');
    expect(text.length).toBeLessThanOrEqual(500);
    expect(describeError(new Error('plain\nparams: hidden'))).toBe('Error: plain');
  });
});
