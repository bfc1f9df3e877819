/** The mssql catalog step: one tool per table or view of the exposed schemas. */
import sql from 'mssql';
import type { DatabaseConfig, SqlTarget, SqlToolSpec } from '../types.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';
import { toolNames } from '../shared/naming.ts';

export const DEFAULT_MSSQL_SCHEMAS = ['dbo'];

const msQuote = (name: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `[${name.replace(/]/g, ']]')}]`);

interface CatalogRow {
  s: string;
  t: string;
  k: string;
  c: string | null;
  ty: string | null;
}

export async function introspectMssql(pool: sql.ConnectionPool, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const schemas = config.schemas?.length ? config.schemas : DEFAULT_MSSQL_SCHEMAS;
  const info = await pool.request().query<{ d: string | null; coll: string | null; snap: number | null }>(
    `SELECT SCHEMA_NAME() AS d, CONVERT(nvarchar(128), DATABASEPROPERTYEX(DB_NAME(), 'Collation')) AS coll,
            (SELECT snapshot_isolation_state FROM sys.databases WHERE database_id = DB_ID()) AS snap`,
  );
  const { d: defaultSchema, coll, snap } = info.recordset[0] ?? { d: null, coll: null, snap: null };
  const caseSensitive = /_CS_|_BIN2?$|_BIN_/i.test(coll ?? '');
  const req = pool.request();
  for (const [i, s] of schemas.entries()) req.input(`s${i}`, sql.NVarChar(128), s);
  const list = schemas.map((_, i) => `@s${i}`).join(', ');
  const rows = await req.query<CatalogRow>(
    `SELECT s.name AS s, o.name AS t, o.type AS k, c.name AS c, ty.name AS ty
       FROM sys.objects o
       JOIN sys.schemas s ON s.schema_id = o.schema_id
       LEFT JOIN sys.columns c ON c.object_id = o.object_id
       LEFT JOIN sys.types ty ON ty.user_type_id = c.user_type_id
      WHERE o.type IN ('U', 'V') AND o.is_ms_shipped = 0 AND s.name IN (${list})
      ORDER BY s.name, o.name, c.column_id`,
  );
  const byKey = new Map<string, RelationInfo>();
  for (const r of rows.recordset) {
    const key = `${r.s}\u0000${r.t}`;
    let rel = byKey.get(key);
    if (!rel) byKey.set(key, (rel = { schema: r.s, table: r.t, kind: r.k.trim() === 'V' ? 'view' : 'table', columns: [] }));
    if (r.c !== null) rel.columns.push({ name: r.c, type: r.ty ?? '' });
  }
  const relations = [...byKey.values()];
  const names = toolNames('mssql', relations);
  return relations.map((rel, i) => {
    const spec = relationTool(names[i]!, rel, `${msQuote(rel.schema)}.${msQuote(rel.table)}`);
    const target: SqlTarget = { ...spec.target, caseSensitiveNames: caseSensitive, snapshot: snap === 1 };
    if (defaultSchema) target.defaultSchema = defaultSchema;
    return { ...spec, target };
  });
}
