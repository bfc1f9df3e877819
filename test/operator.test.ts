// The operator API (/operator/orgs...): list, show, plan change, suspend and resume, key revoke, audit export and
// connector revalidation of any org, on PGlite and PostgreSQL, every response checked against openapi.yaml.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { api, onboard, OPERATOR_TOKEN, startTestGateway, tokenFor, type Onboarded, type StoreKind, type TestGateway } from './support/gateway.ts';
import { sql } from 'drizzle-orm';
import { periodStart } from '../src/limits/plans.ts';
import { callTool, createConnector, rpc } from './support/mcp.ts';
import { createTargets, type Targets } from './support/targets.ts';
import { serviceAvailable } from './support/services.ts';
import { verifies } from './requirements.ts';

const op = (g: TestGateway, method: string, path: string, body?: unknown) => api(g, method, path, OPERATOR_TOKEN, body);

async function auditActions(g: TestGateway, token: string): Promise<string[]> {
  const res = await api(g, 'GET', '/api/audit?limit=200', token);
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: { action: string }[] }).events.map((e) => e.action);
}

/** Pings sent at once; the statuses that came back. */
async function burst(g: TestGateway, slug: string, apiKey: string, count: number): Promise<number[]> {
  return (await Promise.all(Array.from({ length: count }, () => rpc(g, slug, { apiKey }, 'ping')))).map((a) => a.status);
}

for (const kind of ['pglite', 'postgres'] as StoreKind[]) {
  describe(`operator API (${kind})`, () => {
    let g: TestGateway;
    let acme: Onboarded;
    let beta: Onboarded;
    let gamma: Onboarded;
    let skip = '';
    let targets: Targets | null = null;

    beforeAll(async () => {
      if (kind === 'postgres' && !(await serviceAvailable('postgres'))) {
        skip = 'PostgreSQL is not reachable at 127.0.0.1:5432';
        return;
      }
      g = await startTestGateway(kind);
      acme = await onboard(g, 'acme', 'scale');
      beta = await onboard(g, 'beta', 'starter');
      gamma = await onboard(g, 'gamma', 'growth');
    }, 60_000);
    afterAll(async () => {
      await g?.close();
      await targets?.drop();
    });

    test('list pages through the orgs in slug order; show gives limits and usage', async () => {
      if (skip) return console.warn(`skipped: ${skip}`);
      const first = await op(g, 'GET', '/operator/orgs?limit=2');
      expect(first.status).toBe(200);
      const page1 = (await first.json()) as { orgs: { slug: string }[]; next_cursor: string | null };
      expect(page1.orgs.map((o) => o.slug)).toEqual(['acme', 'beta']);
      expect(page1.next_cursor).toBe('beta');
      const page2 = (await (await op(g, 'GET', '/operator/orgs?limit=2&cursor=beta')).json()) as typeof page1;
      expect(page2).toEqual({ orgs: [expect.objectContaining({ slug: 'gamma', suspended_at: null })], next_cursor: null });

      const shown = await op(g, 'GET', '/operator/orgs/beta');
      expect(shown.status).toBe(200);
      const detail = (await shown.json()) as any;
      expect(detail.org).toMatchObject({ id: beta.orgId, plan: 'starter', subscription_status: 'trialing', monthly_tool_calls: 20_000 });
      expect(detail.limits).toMatchObject({ plan: 'starter', monthly_tool_calls: 20_000, tool_calls_used: 0, connectors_max: 3, burst_limit_per_second: 20 });

      const missing = await op(g, 'GET', '/operator/orgs/nope');
      expect(missing.status).toBe(404);
      expect(await missing.json()).toMatchObject({ error: 'org_not_found' });
      expect((await api(g, 'GET', '/operator/orgs', null)).status).toBe(401);
      expect((await api(g, 'GET', '/operator/orgs', 'not-the-operator-token-at-all-0000')).status).toBe(401);
    });

    test('a plan change applies to the next MCP request (cached lookups dropped), ends the trial, and is audited', async () => {
      if (skip) return console.warn(`skipped: ${skip}`);
      verifies('OPERATOR-PLAN-CHANGE');
      // scale: 100 calls per second; 30 at once pass, and the org's lookup is now cached by the endpoint.
      expect((await burst(g, 'acme', acme.apiKey, 30)).every((s) => s === 200)).toBe(true);
      const changed = await op(g, 'PATCH', '/operator/orgs/acme', { plan: 'starter' });
      expect(changed.status).toBe(200);
      const detail = (await changed.json()) as any;
      expect(detail.org).toMatchObject({ plan: 'starter', subscription_status: 'active', trial_expires_at: null, burst_limit_per_second: 20 });
      expect(detail.limits).toMatchObject({ plan: 'starter', monthly_tool_calls: 20_000 });
      await Bun.sleep(1100); // a fresh one-second window
      const statuses = await burst(g, 'acme', acme.apiKey, 30);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(20);

      const token = await tokenFor(g, acme.clientId, acme.clientSecret);
      const sub = await api(g, 'GET', '/api/billing/subscription', token);
      expect(await sub.json()).toMatchObject({ plan: 'starter', status: 'active', trial_expires_at: null });
      // The same plan again changes nothing and records nothing.
      expect((await op(g, 'PATCH', '/operator/orgs/acme', { plan: 'starter' })).status).toBe(200);
      expect((await auditActions(g, token)).filter((a) => a === 'org.plan_changed')).toHaveLength(1);

      expect((await op(g, 'PATCH', '/operator/orgs/acme', { plan: 'gold' })).status).toBe(400);
      expect((await op(g, 'PATCH', '/operator/orgs/acme', {})).status).toBe(400);
      expect((await op(g, 'PATCH', '/operator/orgs/nope', { plan: 'growth' })).status).toBe(404);
    }, 30_000);

    test('quota used up: the -32000 "upgrade" is answered by a plan change; a downgrade over the usage refuses again', async () => {
      if (skip) return console.warn(`skipped: ${skip}`);
      verifies('OPERATOR-PLAN-CHANGE');
      targets = await createTargets('tg_operator', 'pg');
      const org = await onboard(g, 'quota-org', 'starter');
      const token = await tokenFor(g, org.clientId, org.clientSecret);
      expect((await createConnector(g, token, { name: 'items', type: 'postgresql', config: targets.pgConfig })).status).toBe('active');
      await g.deps.store.db.execute(
        sql`INSERT INTO usage_counters (org_id, period_start, tool_calls) VALUES (${org.orgId}, ${periodStart(new Date())}, 20000)`,
      );
      const call = () => callTool(g, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT id FROM items' });
      const refused = await call();
      expect(refused.body.error.code).toBe(-32000);
      expect(refused.body.error.message).toMatch(/upgrade/i);

      expect((await op(g, 'PATCH', `/operator/orgs/${org.slug}`, { plan: 'growth' })).status).toBe(200);
      const ran = await call();
      expect(ran.body.result.isError).toBeFalsy();

      const down = await op(g, 'PATCH', `/operator/orgs/${org.slug}`, { plan: 'starter' });
      expect(down.status).toBe(200);
      expect(((await down.json()) as any).limits).toMatchObject({ plan: 'starter', monthly_tool_calls: 20_000, tool_calls_used: 20_001 });
      expect((await call()).body.error.code).toBe(-32000);
    }, 60_000);

    test('a suspended org refuses every credential with 403 org_suspended until it is resumed', async () => {
      if (skip) return console.warn(`skipped: ${skip}`);
      verifies('OPERATOR-SUSPEND');
      const token = await tokenFor(g, beta.clientId, beta.clientSecret);
      expect((await rpc(g, 'beta', { apiKey: beta.apiKey }, 'tools/list')).status).toBe(200);
      const suspended = await op(g, 'PATCH', '/operator/orgs/beta', { suspended: true });
      expect(suspended.status).toBe(200);
      expect(((await suspended.json()) as any).org.suspended_at).toEqual(expect.any(String));

      for (const credential of [{ apiKey: beta.apiKey }, { token }]) {
        const answer = await rpc(g, 'beta', credential, 'tools/list');
        expect(answer.status).toBe(403);
        expect(answer.text).toContain('org_suspended');
      }
      // A stranger's key still gets the plain 401: the suspension is not revealed.
      expect((await rpc(g, 'beta', { apiKey: acme.apiKey }, 'tools/list')).status).toBe(401);
      const rest = await api(g, 'GET', '/api/connectors', token);
      expect(rest.status).toBe(403);
      expect(await rest.json()).toMatchObject({ error: 'org_suspended' });
      const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: beta.clientId, client_secret: beta.clientSecret });
      const issued = await g.handle(
        new Request('http://gateway.test/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form }),
      );
      expect(issued.status).toBe(400);
      expect(await issued.json()).toMatchObject({ error: 'unauthorized_client' });
      // Other orgs are untouched.
      expect((await rpc(g, 'gamma', { apiKey: gamma.apiKey }, 'tools/list')).status).toBe(200);

      const listed = (await (await op(g, 'GET', '/operator/orgs')).json()) as any;
      expect(listed.orgs.find((o: any) => o.slug === 'beta').suspended_at).toEqual(expect.any(String));

      expect((await op(g, 'PATCH', '/operator/orgs/beta', { suspended: false })).status).toBe(200);
      expect((await rpc(g, 'beta', { apiKey: beta.apiKey }, 'tools/list')).status).toBe(200);
      const actions = await auditActions(g, token);
      expect(actions).toContain('org.suspended');
      expect(actions).toContain('org.resumed');
    });

    test('the operator revokes a key of an org, exports its audit log and revalidates its connectors', async () => {
      if (skip) return console.warn(`skipped: ${skip}`);
      const listedKeys = await op(g, 'GET', '/operator/orgs/beta/api-keys');
      expect(listedKeys.status).toBe(200);
      const keys = (await listedKeys.json()) as { api_keys: { id: string; revoked_at: string | null }[] };
      expect(keys.api_keys).toHaveLength(1);
      const keyId = keys.api_keys[0]!.id;
      expect((await op(g, 'GET', '/operator/orgs/nope/api-keys')).status).toBe(404);
      // Another org's slug does not reach the key.
      expect((await op(g, 'POST', `/operator/orgs/acme/api-keys/${keyId}/revoke`)).status).toBe(404);
      const revoked = await op(g, 'POST', `/operator/orgs/beta/api-keys/${keyId}/revoke`);
      expect(revoked.status).toBe(200);
      expect(((await revoked.json()) as any).revoked_at).toEqual(expect.any(String));
      expect((await rpc(g, 'beta', { apiKey: beta.apiKey }, 'tools/list')).status).toBe(401);
      expect((await op(g, 'POST', `/operator/orgs/beta/api-keys/${keyId}/revoke`)).status).toBe(404);

      const exported = await op(g, 'GET', '/operator/orgs/beta/audit/export-json?redact=true');
      expect(exported.status).toBe(200);
      const doc = (await exported.json()) as { org_id: string; redacted: boolean; events: { action: string; actor_type?: string }[] };
      expect(doc.org_id).toBe(beta.orgId);
      expect(doc.redacted).toBe(true);
      expect(doc.events.map((e) => e.action)).toEqual(expect.arrayContaining(['org.created', 'org.suspended', 'api_key.revoked']));
      expect((await op(g, 'GET', '/operator/orgs/nope/audit/export-json')).status).toBe(404);

      const unknown = await op(g, 'POST', '/operator/orgs/beta/connectors/00000000-0000-4000-8000-000000000000/revalidate');
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ error: 'connector_not_found' });
    });
  });
}
