/** Lists the tables and views of the exposed MySQL/MariaDB databases and turns each into a tool. */
import type mysql from 'mysql2/promise';
import type { DatabaseConfig, ToolSpec } from '../types.ts';
import { toolNames } from '../shared/naming.ts';
import { relationTool, type RelationInfo } from '../shared/toolspec.ts';

interface ColumnRow {
  s: string;
  t: string;
  k: string;
  c: string | null;
  ty: string | null;
}

/** Backquotes a name only when MySQL needs it, so descriptions read naturally. */
export function myQuoteIdent(name: string): string {
  return /^[A-Za-z0-9_$]+$/.test(name) && !/^\d+$/.test(name) ? name : `\`${name.replace(/`/g, '``')}\``;
}

export function myQualified(schema: string, table: string): string {
  return `${myQuoteIdent(schema)}.${myQuoteIdent(table)}`;
}

export function exposedSchemas(config: DatabaseConfig): string[] {
  return config.schemas?.length ? config.schemas : [config.database];
}

/**
 * Tables (incl. MariaDB system-versioned ones) and views. information_schema only shows what the user holds a
 * privilege on; sequences (MariaDB) are not tables an agent queries.
 */
export async function introspectMysql(conn: mysql.PoolConnection, config: DatabaseConfig): Promise<ToolSpec[]> {
  const [rows] = await conn.query(
    `SELECT t.TABLE_SCHEMA AS s, t.TABLE_NAME AS t, t.TABLE_TYPE AS k, c.COLUMN_NAME AS c, c.COLUMN_TYPE AS ty
       FROM information_schema.TABLES t
       LEFT JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
      WHERE t.TABLE_SCHEMA IN (?) AND t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED', 'VIEW')
      ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME, c.ORDINAL_POSITION`,
    [exposedSchemas(config)],
  );
  const byKey = new Map<string, RelationInfo>();
  for (const r of rows as ColumnRow[]) {
    const key = `${r.s}\u0000${r.t}`;
    let rel = byKey.get(key);
    if (!rel) {
      rel = { schema: r.s, table: r.t, kind: r.k === 'VIEW' ? 'view' : 'table', columns: [] };
      byKey.set(key, rel);
    }
    if (r.c !== null) rel.columns.push({ name: r.c, type: r.ty ?? '' });
  }
  const relations = [...byKey.values()];
  const names = toolNames('mysql', relations);
  return relations.map((rel, i) => relationTool(names[i]!, rel, myQualified(rel.schema, rel.table)));
}
