/** Lists the tables and views of the exposed postgres schemas and turns each into a tool. */
import type { DatabaseConfig, SqlToolSpec } from '../types.ts';
import { toolNames } from '../shared/naming.ts';
import { addKeyColumn, attachKeys, relationTool, type RelationInfo, type RelationKeys } from '../shared/toolspec.ts';
import type { PgSql } from './pool.ts';

export const DEFAULT_PG_SCHEMAS = ['public'];

interface RelationRow {
  schema: string;
  table: string;
  relkind: string;
  columns: [string, string][];
  /** pg_class.reltuples: the planner's estimate; -1 (PostgreSQL 14+) or 0 before the first VACUUM/ANALYZE. */
  estimate: number;
}

/** Quotes an identifier only when postgres would otherwise fold or reject it, so descriptions read naturally. */
function pgQuoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

function pgQualified(schema: string, table: string): string {
  return `${pgQuoteIdent(schema)}.${pgQuoteIdent(table)}`;
}

/**
 * Relations the connecting user may read: tables (plain, partitioned, foreign) and views (plain, materialized).
 * Partitions are left out: their parent is the tool. Tables without SELECT privilege are left out: their tool
 * could only ever fail.
 */
export async function introspectPg(sql: PgSql, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const schemas = config.schemas?.length ? config.schemas : DEFAULT_PG_SCHEMAS;
  const rows = await sql.unsafe<RelationRow[]>(
    `select n.nspname as schema, c.relname as table, c.relkind::text as relkind, c.reltuples::float8 as estimate,
            coalesce(json_agg(json_build_array(a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)) order by a.attnum)
                       filter (where a.attnum is not null), '[]') as columns
       from pg_catalog.pg_class c
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       left join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = any($1::text[])
        and c.relkind in ('r', 'p', 'f', 'v', 'm')
        and not c.relispartition
        and (pg_catalog.has_table_privilege(c.oid, 'SELECT') or pg_catalog.has_any_column_privilege(c.oid, 'SELECT'))
      group by n.nspname, c.relname, c.relkind, c.reltuples
      order by n.nspname, c.relname`,
    [schemas],
  );
  const relations: RelationInfo[] = rows.map((r) => ({
    schema: r.schema,
    table: r.table,
    kind: r.relkind === 'v' || r.relkind === 'm' ? 'view' : 'table',
    columns: r.columns.map(([name, type]) => ({ name, type })),
    ...(r.relkind === 'r' && r.estimate >= 0 ? { keys: { rowEstimate: r.estimate } } : {}),
  }));
  attachKeys(relations, await pgKeys(sql, schemas));
  const names = toolNames('postgresql', relations);
  const bases = relations.some((r) => r.kind === 'view') ? await viewBases(sql, schemas) : new Map<string, ViewBase[]>();
  return relations.map((rel, i) => {
    const spec = relationTool(names[i]!, rel, pgQualified(rel.schema, rel.table));
    if (rel.kind !== 'view') return spec;
    return { ...spec, target: { ...spec.target, bases: bases.get(`${rel.schema}\u0000${rel.table}`) ?? [] } };
  });
}

type ViewBase = { schema: string; table: string };

/**
 * What each view (plain or materialized) of the exposed schemas reads (issue 38, docs/decisions/0292 item 4): the
 * relations its rewrite rule depends on, as the server records them (pg_depend), so a statement touching the view
 * is governed by their tool rows too (shared/tables.ts). Relations read inside a function the view calls are not
 * dependencies; the guard's function allow-list does not reach a view's definition.
 */
async function viewBases(sql: PgSql, schemas: string[]): Promise<Map<string, ViewBase[]>> {
  const rows = await sql.unsafe<{ vs: string; vt: string; bs: string; bt: string }[]>(
    `select distinct vn.nspname as vs, v.relname as vt, bn.nspname as bs, b.relname as bt
       from pg_catalog.pg_rewrite r
       join pg_catalog.pg_class v on v.oid = r.ev_class
       join pg_catalog.pg_namespace vn on vn.oid = v.relnamespace
       join pg_catalog.pg_depend d on d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass and d.objid = r.oid
            and d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
       join pg_catalog.pg_class b on b.oid = d.refobjid and b.oid <> v.oid
       join pg_catalog.pg_namespace bn on bn.oid = b.relnamespace
      where vn.nspname = any($1::text[]) and v.relkind in ('v', 'm')
      order by 1, 2, 3, 4`,
    [schemas],
  );
  const out = new Map<string, ViewBase[]>();
  for (const r of rows) {
    const key = `${r.vs}\u0000${r.vt}`;
    out.set(key, [...(out.get(key) ?? []), { schema: r.bs, table: r.bt }]);
  }
  return out;
}

/**
 * Primary and foreign keys of the exposed schemas' tables, one row per key column in key order (one catalog query,
 * for the schema tool). A foreign key referencing a table outside the exposed schemas is kept: the schema tool shows
 * only references to tables the agent may read.
 */
async function pgKeys(sql: PgSql, schemas: string[]): Promise<Map<string, RelationKeys>> {
  const rows = await sql.unsafe<
    {
      schema: string;
      table: string;
      constraint: string;
      type: string;
      column: string;
      refSchema: string | null;
      refTable: string | null;
      refColumn: string | null;
    }[]
  >(
    `select n.nspname as schema, c.relname as table, k.conname as constraint, k.contype::text as type, a.attname as column,
            rn.nspname as "refSchema", rc.relname as "refTable", ra.attname as "refColumn"
       from pg_catalog.pg_constraint k
       join pg_catalog.pg_class c on c.oid = k.conrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       cross join lateral rows from (pg_catalog.unnest(k.conkey), pg_catalog.unnest(k.confkey)) with ordinality as x(attnum, refnum, i)
       join pg_catalog.pg_attribute a on a.attrelid = k.conrelid and a.attnum = x.attnum
       left join pg_catalog.pg_class rc on rc.oid = k.confrelid
       left join pg_catalog.pg_namespace rn on rn.oid = rc.relnamespace
       left join pg_catalog.pg_attribute ra on ra.attrelid = k.confrelid and ra.attnum = x.refnum
      where n.nspname = any($1::text[]) and k.contype in ('p', 'f') and not c.relispartition
      order by n.nspname, c.relname, k.conname, x.i`,
    [schemas],
  );
  const keys = new Map<string, RelationKeys>();
  for (const r of rows) addKeyColumn(keys, r, r.type === 'p');
  return keys;
}
