/** Lists the tables and views of the exposed MySQL/MariaDB databases and turns each into a tool. */
import type mysql from 'mysql2/promise';
import type { DatabaseConfig, SqlToolSpec } from '../types.ts';
import { toolNames } from '../shared/naming.ts';
import { addKeyColumn, attachKeys, relationTool, type RelationInfo, type RelationKeys } from '../shared/toolspec.ts';
import { type LowerCaseTableNames, isSystemDatabase, parseLowerCaseTableNames, sameName } from './guard/names.ts';
import { SAFE_FUNCTIONS } from './guard/functions.ts';
import { lexMysql, type Token } from './guard/lexer.ts';

interface ColumnRow {
  s: string;
  t: string;
  k: string;
  c: string | null;
  ty: string | null;
  /** TABLE_ROWS: InnoDB's estimate (exact for MyISAM); null for views. */
  n: number | string | null;
}

/** Backquotes a name only when MySQL needs it, so descriptions read naturally. */
function myQuoteIdent(name: string): string {
  return /^[A-Za-z0-9_$]+$/.test(name) && !/^\d+$/.test(name) ? name : `\`${name.replace(/`/g, '``')}\``;
}

function myQualified(schema: string, table: string): string {
  return `${myQuoteIdent(schema)}.${myQuoteIdent(table)}`;
}

export function exposedSchemas(config: DatabaseConfig): string[] {
  return config.schemas?.length ? config.schemas : [config.database];
}

/** The server's `lower_case_table_names`; a value we do not know is read as 0, whose exact comparison never admits too much. */
export async function readNameMode(conn: mysql.Connection | mysql.PoolConnection): Promise<LowerCaseTableNames> {
  const [rows] = await conn.query('SELECT @@lower_case_table_names AS l');
  return parseLowerCaseTableNames((rows as { l?: unknown }[])[0]?.l) ?? 0;
}

/** The exposed database a catalog row belongs to, compared as the server compares database names; system databases never. */
function isExposed(schema: string, exposed: readonly string[], mode: LowerCaseTableNames): boolean {
  return !isSystemDatabase(schema, mode) && exposed.some((e) => sameName(schema, e, mode));
}

/**
 * Tables (incl. MariaDB system-versioned ones) and views. information_schema only shows what the user holds a
 * privilege on; sequences (MariaDB) are not tables an agent queries.
 *
 * information_schema compares names with a case-insensitive collation (MariaDB), so on a case-sensitive server
 * `IN (?)` also matches a case-twin database and a plain join pairs `accounts` with the columns of `ACCOUNTS`:
 * the join also requires binary equality, and rows are kept only for the exposed databases as the server itself
 * resolves their names. Each tool records the server's mode so the guard compares names the same way.
 */
export async function introspectMysql(conn: mysql.PoolConnection, config: DatabaseConfig): Promise<SqlToolSpec[]> {
  const mode = await readNameMode(conn);
  const exposed = exposedSchemas(config);
  const [rows] = await conn.query(
    `SELECT t.TABLE_SCHEMA AS s, t.TABLE_NAME AS t, t.TABLE_TYPE AS k, c.COLUMN_NAME AS c, c.COLUMN_TYPE AS ty, t.TABLE_ROWS AS n
       FROM information_schema.TABLES t
       LEFT JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
            AND BINARY c.TABLE_SCHEMA = BINARY t.TABLE_SCHEMA AND BINARY c.TABLE_NAME = BINARY t.TABLE_NAME
      WHERE t.TABLE_SCHEMA IN (?) AND t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED', 'VIEW')
      ORDER BY BINARY t.TABLE_SCHEMA, BINARY t.TABLE_NAME, c.ORDINAL_POSITION`,
    [exposed],
  );
  const byKey = new Map<string, RelationInfo>();
  for (const r of rows as ColumnRow[]) {
    if (!isExposed(r.s, exposed, mode)) continue;
    const key = `${r.s}\u0000${r.t}`;
    let rel = byKey.get(key);
    if (!rel) {
      rel = { schema: r.s, table: r.t, kind: r.k === 'VIEW' ? 'view' : 'table', columns: [] };
      if (r.n !== null && r.k !== 'VIEW') rel.keys = { rowEstimate: Number(r.n) };
      byKey.set(key, rel);
    }
    if (r.c !== null) rel.columns.push({ name: r.c, type: r.ty ?? '' });
  }
  const relations = [...byKey.values()];
  attachKeys(relations, await mysqlKeys(conn, exposed, mode));
  const names = toolNames('mysql', relations);
  const shadows = await shadowingFunctions(conn, exposed, mode);
  const bases = relations.some((r) => r.kind === 'view') ? await viewBases(conn, exposed, mode) : new Map<string, ViewBase[]>();
  return relations.map((rel, i) => {
    const spec = relationTool(names[i]!, rel, myQualified(rel.schema, rel.table));
    const storedFunctions = shadows.get(rel.schema);
    const read = rel.kind === 'view' ? bases.get(`${rel.schema}\u0000${rel.table}`) : undefined;
    return {
      ...spec,
      target: { ...spec.target, lowerCaseTableNames: mode, ...(storedFunctions ? { storedFunctions } : {}), ...(read ? { bases: read } : {}) },
    };
  });
}

type ViewBase = { schema: string; table: string };

/**
 * What each view of the exposed databases reads (issue 38, docs/decisions/0292 item 4): the server stores a view's
 * definition with every table written `db`.`table` (and columns `db`.`table`.`col`), so each quoted two- or
 * three-part name gives a base. A two-part `alias`.`col` is taken too: a name that is no table of the connector
 * governs nothing, and one that happens to be only refuses more. A definition that is hidden (no SHOW VIEW) or that
 * the lexer cannot read leaves the view's bases unrecorded.
 */
async function viewBases(conn: mysql.PoolConnection, exposed: string[], mode: LowerCaseTableNames): Promise<Map<string, ViewBase[]>> {
  const [rows] = await conn.query('SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t, VIEW_DEFINITION AS d FROM information_schema.VIEWS WHERE TABLE_SCHEMA IN (?)', [
    exposed,
  ]);
  const out = new Map<string, ViewBase[]>();
  for (const r of rows as { s: string; t: string; d: string | null }[]) {
    if (!isExposed(r.s, exposed, mode) || !r.d) continue;
    const found = basesOf(r.d);
    if (found) out.set(`${r.s}\u0000${r.t}`, found);
  }
  return out;
}

/** The `db`.`table` pairs of a stored view definition, once each; undefined when the text cannot be lexed. */
function basesOf(definition: string): ViewBase[] | undefined {
  let tokens: Token[];
  try {
    tokens = lexMysql(definition);
  } catch {
    return undefined;
  }
  const seen = new Map<string, ViewBase>();
  for (let i = 0; i + 2 < tokens.length; i++) {
    const [a, dot, b] = [tokens[i]!, tokens[i + 1]!, tokens[i + 2]!];
    if (a.kind !== 'quoted_ident' || dot.text !== '.' || b.kind !== 'quoted_ident') continue;
    seen.set(`${a.text}\u0000${b.text}`, { schema: a.text, table: b.text });
    // `db`.`table`.`col`: skip past the column.
    i += tokens[i + 3]?.text === '.' ? 3 : 2;
  }
  return [...seen.values()];
}

/**
 * Stored functions named like an allowed built-in, per exposed database (upper-case names, sorted). An unqualified
 * call runs the built-in when the server has it and the stored function of the default database when it does
 * not (an older server), so the guard refuses these names on the tools of that database.
 */
async function shadowingFunctions(conn: mysql.PoolConnection, exposed: string[], mode: LowerCaseTableNames): Promise<Map<string, string[]>> {
  const [rows] = await conn.query(
    `SELECT ROUTINE_SCHEMA AS s, ROUTINE_NAME AS n FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_SCHEMA IN (?)`,
    [exposed],
  );
  const bySchema = new Map<string, Set<string>>();
  for (const r of rows as { s: string; n: string }[]) {
    const name = r.n.toUpperCase();
    if (!SAFE_FUNCTIONS.has(name) || !isExposed(r.s, exposed, mode)) continue;
    bySchema.set(r.s, (bySchema.get(r.s) ?? new Set()).add(name));
  }
  return new Map([...bySchema].map(([schema, set]) => [schema, [...set].sort()]));
}

/** Primary and foreign keys of the exposed databases' tables, one row per key column in key order (for the schema tool). */
async function mysqlKeys(conn: mysql.PoolConnection, exposed: string[], mode: LowerCaseTableNames): Promise<Map<string, RelationKeys>> {
  const [rows] = await conn.query(
    `SELECT TABLE_SCHEMA AS \`schema\`, TABLE_NAME AS \`table\`, CONSTRAINT_NAME AS \`constraint\`, COLUMN_NAME AS \`column\`,
            REFERENCED_TABLE_SCHEMA AS refSchema, REFERENCED_TABLE_NAME AS refTable, REFERENCED_COLUMN_NAME AS refColumn
       FROM information_schema.KEY_COLUMN_USAGE
      WHERE TABLE_SCHEMA IN (?) AND (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL)
      ORDER BY BINARY TABLE_SCHEMA, BINARY TABLE_NAME, BINARY CONSTRAINT_NAME, ORDINAL_POSITION`,
    [exposed],
  );
  const keys = new Map<string, RelationKeys>();
  type KeyRow = Parameters<typeof addKeyColumn>[1];
  for (const r of rows as KeyRow[]) if (isExposed(r.schema, exposed, mode)) addKeyColumn(keys, r, r.constraint === 'PRIMARY');
  return keys;
}
