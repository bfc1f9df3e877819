// Lock order in the store: creating a connector locks the org row (the plan's connector limit) and then writes an
// audit row under the org's chain head; a transaction that holds that head and inserts its own audit row takes the
// foreign-key KEY SHARE lock on the same org row. With FOR UPDATE on the org row the two waited for each other, and
// PostgreSQL's deadlock detector answered one of them with an error: a 500 on a well-formed request (seen in CI
// under load). FOR NO KEY UPDATE does not conflict with KEY SHARE. Real PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { describeError } from '../src/util/log.ts';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor, type TestGateway } from './support/gateway.ts';
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
