// One place per fact, checked: the store's Drizzle schema (generated/store-schema.ts, printed from the migrations by
// `bun scripts/gen.ts`, re-exported by src/store/schema.ts) against what the migrations (src/store/migrations.ts, the
// SQL of record) create on a fresh database, on PGlite and on PostgreSQL: the printed module itself, and fact by fact
// tables, columns (type, nullability, default), primary keys, unique constraints, foreign keys and indexes. And the
// plan table (src/limits/plans.ts) against the store's CHECK constraint and openapi.yaml's Plan enum. And the
// migrations as history: one applied to a database never changes (docs/decisions/0160), so each one's text is pinned.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { is, SQL, sql } from 'drizzle-orm';
import { getTableConfig, PgDialect, PgTable, type PgColumn } from 'drizzle-orm/pg-core';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { readCatalog, schemaModule, STALE_SCHEMA_MESSAGE as STALE } from '../scripts/lib/store-schema.ts';
import { PLANS } from '../src/limits/plans.ts';
import { openStore, rowsOf, type Store } from '../src/store/db.ts';
import { migrations } from '../src/store/migrations.ts';
import * as schema from '../src/store/schema.ts';
import { freshDatabase } from './support/gateway.ts';
import { serviceAvailable } from './support/services.ts';

const HOOK_TIMEOUT_MS = 60_000;
/** The migration runner's own bookkeeping table: not part of the gateway's schema. */
const BOOKKEEPING = ['toolgate_migrations'];

const GENERATED = join(import.meta.dir, '..', 'generated', 'store-schema.ts');

const dialect = new PgDialect();
const render = (expr: SQL) => dialect.sqlToQuery(expr).sql;

type Facts = { tables: string[]; columns: string[]; constraints: string[]; indexes: string[] };

/** pg_get_expr's text for a Drizzle column default. */
function defaultText(column: PgColumn): string | null {
  if (!column.hasDefault) return null;
  const value = column.default;
  if (is(value, SQL)) return render(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'::${column.getSQLType()}`;
  return `'${JSON.stringify(value)}'::${column.getSQLType()}`;
}

const columnList = (columns: { name: string }[]) => columns.map((c) => c.name).join(', ');

/** What the Drizzle schema declares, written the way PostgreSQL's catalog prints it. */
function declared(): Facts {
  const facts: Facts = { tables: [], columns: [], constraints: [], indexes: [] };
  for (const table of Object.values(schema)) {
    if (!is(table, PgTable)) continue;
    const config = getTableConfig(table);
    const name = config.name;
    facts.tables.push(name);
    for (const column of config.columns) {
      facts.columns.push(
        `${name}.${column.name} ${column.getSQLType()}${column.notNull ? ' not null' : ''}${column.hasDefault ? ` default ${defaultText(column)}` : ''}`,
      );
      if (column.primary) facts.constraints.push(`${name}: PRIMARY KEY (${column.name})`);
      if (column.isUnique) facts.constraints.push(`${name}: UNIQUE (${column.name})`);
    }
    for (const pk of config.primaryKeys) facts.constraints.push(`${name}: PRIMARY KEY (${columnList(pk.columns)})`);
    for (const u of config.uniqueConstraints) facts.constraints.push(`${name}: UNIQUE (${columnList(u.columns)})`);
    for (const fk of config.foreignKeys) {
      const ref = fk.reference();
      const target = getTableConfig(ref.foreignTable).name;
      const onUpdate = fk.onUpdate && fk.onUpdate !== 'no action' ? ` ON UPDATE ${fk.onUpdate.toUpperCase()}` : '';
      const onDelete = fk.onDelete && fk.onDelete !== 'no action' ? ` ON DELETE ${fk.onDelete.toUpperCase()}` : '';
      facts.constraints.push(`${name}: FOREIGN KEY (${columnList(ref.columns)}) REFERENCES ${target}(${columnList(ref.foreignColumns)})${onUpdate}${onDelete}`);
    }
    for (const idx of config.indexes) {
      const cols = idx.config.columns.map((c) => {
        if (is(c, SQL)) return render(c);
        const col = c as PgColumn & { indexConfig?: { order?: string } };
        return col.indexConfig?.order === 'desc' ? `${col.name} DESC` : col.name;
      });
      const where = idx.config.where ? ` WHERE (${render(idx.config.where)})` : '';
      const method = idx.config.method ?? 'btree';
      facts.indexes.push(`CREATE ${idx.config.unique ? 'UNIQUE ' : ''}INDEX ${idx.config.name} ON public.${name} USING ${method} (${cols.join(', ')})${where}`);
    }
  }
  for (const list of Object.values(facts)) list.sort();
  return facts;
}

/** What the migrations created, read from the catalog. */
async function migrated(store: Store): Promise<Facts> {
  const q = async <T>(text: string) => rowsOf<T>(await store.db.execute(sql.raw(text)));
  const tables = (
    await q<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
  )
    .map((r) => r.name)
    .filter((n) => !BOOKKEEPING.includes(n));
  const inScope = (t: string) => !BOOKKEEPING.includes(t);
  const columns = await q<{ t: string; c: string; type: string; notnull: boolean; def: string | null }>(`
    SELECT c.relname AS t, a.attname AS c, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull, pg_get_expr(d.adbin, d.adrelid) AS def
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`);
  const constraints = await q<{ t: string; def: string }>(`
    SELECT c.relname AS t, pg_get_constraintdef(con.oid) AS def
      FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND con.contype IN ('p', 'u', 'f')`);
  const indexes = await q<{ t: string; def: string }>(`
    SELECT tablename AS t, indexdef AS def FROM pg_indexes
     WHERE schemaname = 'public' AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))`);
  return {
    tables: tables.sort(),
    columns: columns
      .filter((r) => inScope(r.t))
      .map((r) => `${r.t}.${r.c} ${r.type}${r.notnull ? ' not null' : ''}${r.def !== null ? ` default ${r.def}` : ''}`)
      .sort(),
    constraints: constraints
      .filter((r) => inScope(r.t))
      .map((r) => `${r.t}: ${r.def}`)
      .sort(),
    indexes: indexes
      .filter((r) => inScope(r.t))
      .map((r) => r.def)
      .sort(),
  };
}

/** The plans the store's CHECK constraint on orgs.plan admits. */
async function plansAdmittedByStore(store: Store): Promise<string[]> {
  const [row] = rowsOf<{ def: string }>(
    await store.db.execute(
      sql`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'orgs'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%plan%'`,
    ),
  );
  return [...row!.def.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]!);
}

const pgUp = await serviceAvailable('postgres');

for (const kind of ['pglite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !pgUp)(`store schema on a fresh ${kind} database`, () => {
    let store: Store;
    let drop = async () => {};
    beforeAll(async () => {
      if (kind === 'pglite') store = await openStore({ dataDir: null });
      else {
        const fresh = await freshDatabase('tg_schema');
        drop = fresh.drop;
        store = await openStore({ databaseUrl: fresh.url, poolSize: 2 });
      }
    }, HOOK_TIMEOUT_MS);
    afterAll(async () => {
      await store?.close();
      await drop();
    }, HOOK_TIMEOUT_MS);

    test('generated/store-schema.ts is what the printer writes for this migrated database', async () => {
      const printed = schemaModule(await readCatalog(async <T>(text: string) => rowsOf<T>(await store.db.execute(sql.raw(text)))));
      if (printed !== readFileSync(GENERATED, 'utf8')) throw new Error(STALE);
    });

    // The printer's refusals do not depend on the database: checked once, on PGlite.
    if (kind === 'pglite') {
      test('the printer fails, naming where to look, on a note without its column and on a column type it cannot print', async () => {
        const catalog = await readCatalog(async <T>(text: string) => rowsOf<T>(await store.db.execute(sql.raw(text))));
        expect(() => schemaModule(catalog.filter((t) => t.name !== 'connectors'))).toThrow(
          /schema-notes\.ts names what the migrations do not create: .*connectors\.skipped_tools/,
        );
        const odd = { name: 'ledger', columns: [{ name: 'amount', type: 'money', notNull: true, def: null }], constraints: [], indexes: [] };
        expect(() => schemaModule([...catalog, odd])).toThrow('ledger.amount has type money');
      });
    }

    test('the Drizzle schema and the migrated database agree: tables, columns, keys, foreign keys, indexes', async () => {
      const expected = declared();
      const actual = await migrated(store);
      try {
        expect(actual.tables).toEqual(expected.tables);
        expect(actual.columns).toEqual(expected.columns);
        expect(actual.constraints).toEqual(expected.constraints);
        expect(actual.indexes).toEqual(expected.indexes);
      } catch (err) {
        throw new Error(`${STALE}\n${err instanceof Error ? err.message : String(err)}`);
      }
    });

    test('the store admits exactly the plans of the plan table', async () => {
      expect(await plansAdmittedByStore(store)).toEqual([...PLANS]);
    });
  });
}

describe('the comparison itself', () => {
  test('sees every table, column, key and index the schema declares', () => {
    const facts = declared();
    expect(facts.tables).toContain('usage_counters');
    expect(facts.columns).toContain("tools.approval_emails text[] not null default '{}'::text[]");
    expect(facts.columns).toContain("audit_events.outcome text not null default 'success'::text");
    expect(facts.constraints).toContain('usage_counters: PRIMARY KEY (org_id, period_start)');
    expect(facts.constraints).toContain('tools: FOREIGN KEY (connector_id) REFERENCES connectors(id) ON DELETE CASCADE');
    expect(facts.indexes).toContain('CREATE INDEX connectors_org ON public.connectors USING btree (org_id) WHERE (archived_at IS NULL)');
  });
});

describe('the plan table is the one list of plans', () => {
  test("openapi.yaml's Plan enum lists the same plans in the same order", () => {
    const doc = parseYaml(readFileSync(join(import.meta.dir, '..', 'openapi.yaml'), 'utf8')) as { components: { schemas: { Plan: { enum: string[] } } } };
    expect(doc.components.schemas.Plan.enum).toEqual([...PLANS]);
  });
});

/**
 * The first 16 hex digits of the SHA-256 of each migration's SQL. A migration a database has applied is never run
 * again, so editing it would leave existing stores and fresh ones different: a change is a new migration, appended
 * here with its hash in the same commit.
 */
const PINNED: Record<number, string> = {
  1: '1af8a8c2cdaeb466', // orgs_and_credentials
  2: 'cfadf211f5692fc8', // connectors_tools_idp
  3: '0885cc9cc6d0b83e', // idp_issuer_audience_unique
  4: '4bdb1021cb8516b8', // usage_and_burst
  5: '513ac5061b87a007', // approvals
  6: '29a6955159030e5b', // webhooks_outbox
  7: 'f4103c868a18b998', // audit_chain
  8: 'b843e5b15679c248', // console_sign_in
  9: 'ddc2f0b5d664c5ec', // webhook_relay_cursors
  10: 'b5a697140a631665', // audit_row_mac
  11: 'ba2b2efe91f5e7a2', // connector_skipped_tools
  12: 'ef855bb63e9c15c0', // org_suspension
  13: '5ec496c5c4f55345', // mcp_sign_in
  14: '8e2402d64f32edb5', // saved_tools_and_free_sql
  15: '74bc328c100b6237', // tool_policies
  16: 'a6e5c1c88ce40c4d', // credential_last_use_and_attempt_exchange
  17: '6f82e09ff12bea00', // approval_requester_attributes
  18: '6dd6d9d366febd47', // connector_table_filters_and_description
  19: '3141d071c8817fa4', // table_governance_and_tool_layout
  20: '83281d67f5651339', // tool_kinds
  21: '5684341944e690aa', // connector_health
  22: 'c27781215ad80aef', // audit_statements_and_filters
  23: '14952fb3cc31ddf6', // audit_rollups_and_checkpoints
  24: 'fe2f26ff748368d0', // org_members
  25: '338e4490072e639b', // audit_rollups_by_agent_and_refusal
  26: 'b24f629b72fe2815', // tool_rows_withdrawn
  27: '21faf01253f4b12e', // member_passkeys
  28: '8d888baa77bd3a71', // quota_leases
  29: '2b344e4a9cb7c668', // gateway_instances
  30: '349266763394e0d7', // audit_rollups_daily_and_log_buckets
  31: '9be89e3e3f8fabf8', // audit_rollup_hours_pruned
};

describe('the migrations are history: appended, never edited', () => {
  test('versions run 1..n without a gap, and each one is pinned with the hash of its text', () => {
    const versions = migrations.map((m) => m.version);
    expect(versions).toEqual(versions.map((_, i) => i + 1));
    const hashes = Object.fromEntries(migrations.map((m) => [m.version, createHash('sha256').update(m.sql).digest('hex').slice(0, 16)]));
    // A failure names the migration: an edited one (revert it, write a new one) or a new one (pin its hash above).
    expect(hashes).toEqual(Object.fromEntries(Object.entries(PINNED).map(([v, h]) => [Number(v), h])));
  });
});
