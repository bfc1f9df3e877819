/** Lists the tables and views of the exposed postgres schemas and turns each into a tool. */
import type { DatabaseConfig, SqlToolSpec } from '../types.ts';
import { toolNames } from '../shared/naming.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';
import type { PgSql } from './pool.ts';

export const DEFAULT_PG_SCHEMAS = ['public'];

interface RelationRow {
  schema: string;
  table: string;
  relkind: string;
  columns: [string, string][];
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
    `select n.nspname as schema, c.relname as table, c.relkind::text as relkind,
            coalesce(json_agg(json_build_array(a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)) order by a.attnum)
                       filter (where a.attnum is not null), '[]') as columns
       from pg_catalog.pg_class c
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       left join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = any($1::text[])
        and c.relkind in ('r', 'p', 'f', 'v', 'm')
        and not c.relispartition
        and (pg_catalog.has_table_privilege(c.oid, 'SELECT') or pg_catalog.has_any_column_privilege(c.oid, 'SELECT'))
      group by n.nspname, c.relname, c.relkind
      order by n.nspname, c.relname`,
    [schemas],
  );
  const reads = await viewReads(sql, schemas);
  const relations: RelationInfo[] = rows.map((r) => ({
    schema: r.schema,
    table: r.table,
    kind: r.relkind === 'v' || r.relkind === 'm' ? 'view' : 'table',
    columns: r.columns.map(([name, type]) => ({ name, type })),
    ...(reads.has(`${r.schema}\u0000${r.table}`) ? { reads: reads.get(`${r.schema}\u0000${r.table}`)! } : {}),
  }));
  const names = toolNames('postgresql', relations);
  return relations.map((rel, i) => relationTool(names[i]!, rel, pgQualified(rel.schema, rel.table)));
}

/**
 * What each view of the exposed schemas reads, transitively (a view over a view reads that view's tables too): the
 * relations its rewrite rule depends on (pg_depend), followed through views. Issue 38: a call touching a view is
 * governed by the rows of the tables it reads (docs/decisions/0292 item 4).
 */
async function viewReads(sql: PgSql, schemas: string[]): Promise<Map<string, { schema: string; table: string }[]>> {
  const rows = await sql.unsafe<{ schema: string; view: string; reads: string }[]>(
    `with recursive reads(view_oid, rel_oid) as (
        select r.ev_class, d.refobjid
          from pg_catalog.pg_rewrite r
          join pg_catalog.pg_class v on v.oid = r.ev_class and v.relkind in ('v', 'm')
          join pg_catalog.pg_namespace n on n.oid = v.relnamespace and n.nspname = any($1::text[])
          join pg_catalog.pg_depend d on d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass and d.objid = r.oid
                                     and d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass and d.refobjid <> r.ev_class
        union
        select reads.view_oid, d.refobjid
          from reads
          join pg_catalog.pg_rewrite r on r.ev_class = reads.rel_oid
          join pg_catalog.pg_depend d on d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass and d.objid = r.oid
                                     and d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass and d.refobjid <> r.ev_class)
      select vn.nspname as schema, v.relname as view,
             json_agg(distinct json_build_array(bn.nspname, b.relname)::text)::text as reads
        from reads
        join pg_catalog.pg_class v on v.oid = reads.view_oid
        join pg_catalog.pg_namespace vn on vn.oid = v.relnamespace
        join pg_catalog.pg_class b on b.oid = reads.rel_oid and b.relkind in ('r', 'p', 'f', 'v', 'm')
        join pg_catalog.pg_namespace bn on bn.oid = b.relnamespace
       group by vn.nspname, v.relname`,
    [schemas],
  );
  const out = new Map<string, { schema: string; table: string }[]>();
  for (const r of rows) {
    // A JSON array of JSON texts (json has no equality for DISTINCT): each one `[schema, name]`.
    const pairs = (JSON.parse(r.reads) as string[]).map((p) => JSON.parse(p) as [string, string]);
    out.set(
      `${r.schema}\u0000${r.view}`,
      pairs.map(([schema, table]) => ({ schema, table })).sort((a, b) => `${a.schema}.${a.table}`.localeCompare(`${b.schema}.${b.table}`)),
    );
  }
  return out;
}
