/**
 * Migration 19 (issue 38 item 2, docs/decisions/0300): policies stored on saved tools move onto the table tool row of
 * the table each reads, merged, never dropped: hidden columns united, masked ones united (hidden wins, the stricter
 * mask wins), row filters AND-ed; a saved tool whose table has no row keeps its policy. Run on a real PostgreSQL
 * store upgraded from the migrations before 19.
 */
import { describe, expect, test } from 'bun:test';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { migrate, type Db, type Store } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';
import * as schema from '../src/store/schema.ts';
import { freshDatabase } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

const hasPg = await serviceAvailable('postgres');

const target = (table: string, saved = false) => ({
  name: `t_${table}`,
  description: '',
  inputSchema: { type: 'object', properties: {} },
  target: {
    schema: 'public',
    table,
    kind: 'table',
    columns: [],
    ...(saved ? { saved: { statement: 'SELECT 1', parameters: [], version: 1, parts: [], slots: [] } } : {}),
  },
});

describe.skipIf(!hasPg)('migration 19: saved-tool policies move onto their table', () => {
  test('merged into the table row (united, stricter mask, AND-ed filters), cleared on the saved tools, kept when no table row exists', async () => {
    const fresh = await freshDatabase('tg_h3_m19');
    const client = postgres(fresh.url, { max: 2, onnotice: () => {} });
    try {
      const db = drizzle(client, { schema }) as unknown as Db;
      const store = { db, kind: 'postgres', execScript: async (s: string) => void (await client.unsafe(s)), close: async () => {} } as Store;
      await migrate(
        store,
        migrations.filter((m) => m.version < 19),
      );
      const orgId = crypto.randomUUID();
      const connectorId = crypto.randomUUID();
      await client`INSERT INTO orgs (id, slug, name, plan, subscription_status, provision_status) VALUES (${orgId}, ${`m19-${orgId.slice(0, 8)}`}, 'M19', 'enterprise', 'active', 'provisioned')`;
      await client`INSERT INTO connectors (id, org_id, name, type, status, config) VALUES (${connectorId}, ${orgId}, 'pg', 'postgresql', 'active', '{}'::jsonb)`;
      const tool = async (name: string, spec: object, savedVersion: number | null, policy: object | null) => {
        const [row] = await client`INSERT INTO tools (org_id, connector_id, base_name, spec, saved_version, policy)
          VALUES (${orgId}, ${connectorId}, ${name}, ${JSON.stringify(spec)}::jsonb, ${savedVersion}, ${policy === null ? null : JSON.stringify(policy)}::jsonb) RETURNING id`;
        return row!.id as string;
      };
      // customers: its own policy, and two saved tools' policies to merge in.
      const customers = await tool('query_postgresql_customers', target('customers'), null, {
        hidden_columns: ['ssn'],
        masked_columns: [{ column: 'phone', mask: 'last_n', n: 4 }],
        row_filter: 'tenant = :caller.tenant',
      });
      const savedA = await tool('customers_a', target('customers', true), 1, {
        hidden_columns: ['email'],
        masked_columns: [
          { column: 'phone', mask: 'fixed', text: '####' },
          { column: 'ssn', mask: 'hash' },
          { column: 'name', mask: 'last_n', n: 2 },
        ],
        row_filter: 'region = :caller.region',
      });
      const savedB = await tool('customers_b', target('customers', true), 1, { hidden_columns: ['ssn', 'dob'], masked_columns: [], row_filter: null });
      // orders: no policy of its own; one saved tool's policy becomes the table's.
      const orders = await tool('query_postgresql_orders', target('orders'), null, null);
      const savedC = await tool('orders_c', target('orders', true), 1, {
        hidden_columns: [],
        masked_columns: [{ column: 'card', mask: 'hash' }],
        row_filter: 'total < 1000',
      });
      // gone: a saved tool whose table has no tool row keeps its policy.
      const goneP = { hidden_columns: ['x'], masked_columns: [], row_filter: null };
      const savedD = await tool('gone_d', target('gone', true), 1, goneP);
      const [before] = await client`SELECT catalog_version FROM orgs WHERE id = ${orgId}`;

      expect(await migrate(store)).toContain(19);
      const policy = async (id: string) => ((await client`SELECT policy FROM tools WHERE id = ${id}`)[0]!.policy ?? null) as Record<string, unknown> | null;
      expect(await policy(customers)).toEqual({
        hidden_columns: ['dob', 'email', 'ssn'],
        masked_columns: [
          { column: 'name', mask: 'last_n', n: 2 },
          // fixed is stricter than last_n; ssn is hidden, so its hash mask is gone
          { column: 'phone', mask: 'fixed', text: '####' },
        ],
        row_filter: '(tenant = :caller.tenant) AND (region = :caller.region)',
      });
      expect(await policy(orders)).toEqual({ hidden_columns: [], masked_columns: [{ column: 'card', mask: 'hash' }], row_filter: '(total < 1000)' });
      for (const id of [savedA, savedB, savedC]) expect(await policy(id)).toBeNull();
      expect(await policy(savedD)).toEqual(goneP);
      const [after] = await client`SELECT catalog_version FROM orgs WHERE id = ${orgId}`;
      expect(Number(after!.catalog_version)).toBe(Number(before!.catalog_version) + 1);
      const [layout] = await client`SELECT tool_layout FROM connectors WHERE id = ${connectorId}`;
      expect(layout!.tool_layout).toBe('per_table');
    } finally {
      await client.end({ timeout: 5 });
      await fresh.drop();
    }
  }, 60_000);
});
