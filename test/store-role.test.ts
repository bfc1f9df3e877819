// Issue 15: the store runs under a least-privilege PostgreSQL role (README, "Deployment"): a LOGIN role that is not a
// superuser, cannot create databases or roles, and owns only the gateway's database. The gateway migrates, onboards,
// calls a tool, records audit rows and verifies the chain under it.
import { describe, expect, setDefaultTimeout, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { verifies } from './requirements.ts';
import { onboard, startTestGateway, tokenFor } from './support/gateway.ts';
import { callTool, createConnector } from './support/mcp.ts';
import { PG_URL, serviceAvailable } from './support/services.ts';
import { createTargets } from './support/targets.ts';
import { verifyChain } from '../src/audit/verify.ts';

setDefaultTimeout(120_000);
const hasPg = await serviceAvailable('postgres');

describe.skipIf(!hasPg)('the store under a least-privilege role', () => {
  test('NOSUPERUSER NOCREATEDB NOCREATEROLE, owner of its database only: migrations, calls and audit work; it cannot do more', async () => {
    verifies('OPS-STORE-ROLE');
    const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
    const role = `tg_store_role_${suffix}`;
    const database = `tg_store_db_${suffix}`;
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    // The statements of docs/deployment.md "A least-privilege role for the store" (trust auth here, so no password).
    await admin.unsafe(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 50`);
    await admin.unsafe(`CREATE DATABASE ${database} OWNER ${role}`);
    await admin.unsafe(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
    const targets = await createTargets('tg_role_data', 'pg');
    const url = new URL(PG_URL);
    url.username = role;
    url.pathname = `/${database}`;
    try {
      const g = await startTestGateway('postgres', { TOOLGATE_WEBHOOK_WORKER: '0' }, url.toString());
      try {
        const org = await onboard(g);
        const token = await tokenFor(g, org.clientId, org.clientSecret);
        // The tool's database is reached with the connector's own credentials, not the store role.
        await createConnector(g, token, { name: 'items', type: 'postgresql', config: targets.pgConfig });
        const answer = await callTool(g, org.slug, { apiKey: org.apiKey }, 'query_postgresql_items', { sql: 'SELECT name FROM items ORDER BY id' });
        expect(answer.body.result.isError).toBeFalsy();
        await g.deps.audit.drain();
        expect((await verifyChain(g.deps.store.db, org.orgId)).ok).toBe(true);
      } finally {
        await g.close();
      }
      const asRole = postgres(url.toString(), { max: 1, onnotice: () => {} });
      try {
        await expect(asRole.unsafe(`CREATE DATABASE ${database}_x`)).rejects.toThrow(/permission denied/);
        await expect(asRole.unsafe(`CREATE ROLE ${role}_x`)).rejects.toThrow(/permission denied/);
        await expect(asRole.unsafe(`COPY (SELECT 1) TO PROGRAM 'true'`)).rejects.toThrow(/permission denied|must be superuser|pg_execute_server_program/);
        const [tables] = await asRole.unsafe(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tableowner = '${role}'`);
        expect(tables!.n).toBeGreaterThan(5);
      } finally {
        await asRole.end();
      }
    } finally {
      await targets.drop();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.unsafe(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
