/** The oracle catalog step: one tool per table or view of the exposed schemas. */
import oracledb from 'oracledb';
import type { DatabaseConfig, SqlToolSpec } from '../types.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';
import { toolNames } from '../shared/naming.ts';

/** An unquoted Oracle name is stored upper-case; anything else is taken as written. */
export const oracleName = (name: string): string => (/^[A-Za-z][A-Za-z0-9_$#]*$/.test(name) ? name.toUpperCase() : name);

export function exposedSchemas(config: DatabaseConfig): string[] | null {
  return config.schemas?.length ? config.schemas.map(oracleName) : null;
}

export const OBJ = { outFormat: oracledb.OUT_FORMAT_OBJECT };

export async function schemasOf(conn: oracledb.Connection, config: DatabaseConfig): Promise<string[]> {
  const given = exposedSchemas(config);
  if (given) return given;
  const r = await conn.execute<{ S: string }>(`SELECT SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') AS s FROM dual`, [], OBJ);
  return [r.rows?.[0]?.S ?? oracleName(config.user)];
}

const oraQuote = (name: string): string => (/^[A-Z][A-Z0-9_$#]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);

export async function introspectOracle(conn: oracledb.Connection, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const schemas = await schemasOf(conn, config);
  const binds: Record<string, string> = {};
  for (const [i, s] of schemas.entries()) binds[`s${i}`] = s;
  const list = schemas.map((_, i) => `:s${i}`).join(', ');
  const r = await conn.execute<{ S: string; T: string; K: string; C: string | null; TY: string | null }>(
    `SELECT o.owner AS s, o.object_name AS t, o.object_type AS k, c.column_name AS c, c.data_type AS ty
       FROM all_objects o
       LEFT JOIN all_tab_columns c ON c.owner = o.owner AND c.table_name = o.object_name
      WHERE o.object_type IN ('TABLE', 'VIEW') AND o.owner IN (${list}) AND o.object_name NOT LIKE 'BIN$%'
        AND o.temporary = 'N'
      ORDER BY o.owner, o.object_name, c.column_id`,
    binds,
    OBJ,
  );
  const byKey = new Map<string, RelationInfo>();
  for (const row of r.rows ?? []) {
    const key = `${row.S}\u0000${row.T}`;
    let rel = byKey.get(key);
    if (!rel) byKey.set(key, (rel = { schema: row.S, table: row.T, kind: row.K === 'VIEW' ? 'view' : 'table', columns: [] }));
    if (row.C !== null) rel.columns.push({ name: row.C, type: row.TY ?? '' });
  }
  const relations = [...byKey.values()];
  const names = toolNames('oracle', relations);
  return relations.map((rel, i) => relationTool(names[i]!, rel, `${oraQuote(rel.schema)}.${oraQuote(rel.table)}`));
}
