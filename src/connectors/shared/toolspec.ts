/** Builds what SQL drivers publish: the config JSON Schema and the per-table tool descriptors. */
import openapiDocument from '../../../generated/openapi.json' with { type: 'json' };
import type { ColumnInfo, ForeignKey, JsonSchema, SqlTarget, SqlToolSpec } from '../types.ts';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface ConfigSchemaOptions {
  defaultPort: number;
  /** Pattern of a schema name the dialect accepts unquoted. */
  identifierPattern: string;
  identifierMaxLength: number;
  /** mongodb: the config may name the database holding the user (`auth_source`); other types refuse it. */
  authSource?: boolean;
}

/**
 * JSON Schema of DatabaseConfig for one SQL dialect: the contract's DatabaseConfig (openapi.yaml, the one definition
 * of the fields), and with it what only the dialect knows: defaults, host spelling, identifier rules.
 */
export function databaseConfigSchema(o: ConfigSchemaOptions): Record<string, unknown> {
  return {
    allOf: [
      openapiDocument.components.schemas.DatabaseConfig,
      {
        properties: {
          // No '/', ',' or whitespace: postgres.js would read them as a socket path or a host list.
          host: { maxLength: 253, pattern: '^[^\\s/,@?#]+$' },
          port: { default: o.defaultPort },
          database: { maxLength: o.identifierMaxLength },
          // What a managed cloud database expects (encrypted; the console's default too); a local server without TLS says tls: disable.
          tls: { default: 'require' },
          schemas: { items: { maxLength: o.identifierMaxLength, pattern: o.identifierPattern }, uniqueItems: true },
        },
        ...(o.authSource ? {} : { not: { required: ['auth_source'] } }),
      },
    ],
  };
}

export const OUTPUT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    rows: {
      type: 'array',
      items: { type: 'object' },
      // The value encoding of shared/jsonsafe.ts, told to the agent once per tool rather than per column.
      description:
        'Result rows, one object per row. Numbers (integers, floats, counts, sums, decimals) are JSON numbers while exact: ' +
        '64-bit integers within ±9007199254740991, decimals of at most 15 significant digits (trailing zeros of the scale dropped); ' +
        'beyond that the exact value as a decimal string, and NaN/Infinity as strings. Timestamps are ISO 8601 (with Z when the ' +
        'column has a time zone), dates YYYY-MM-DD, bytes base64, json parsed, NULL null.',
    },
    rowCount: { type: 'integer', description: 'Rows returned (rows affected, for a write)' },
    truncated: { type: 'boolean', description: 'True when rows were left out by the row limit or the size cap' },
  },
  required: ['rows', 'rowCount', 'truncated'],
};

export interface RelationInfo {
  schema: string;
  table: string;
  kind: 'table' | 'view';
  columns: ColumnInfo[];
  /** What the schema tool shows besides the columns (read where the dialect has them cheaply). */
  keys?: RelationKeys;
}

/** A relation's keys and row estimate, as the SQL targets keep them (types.ts SqlTarget). */
export type RelationKeys = Pick<SqlTarget, 'primaryKey' | 'foreignKeys' | 'rowEstimate'>;

/** Adds the keys read by a second catalog query to the relations they belong to (by schema and table). */
export function attachKeys(relations: RelationInfo[], keys: Map<string, RelationKeys>): void {
  for (const rel of relations) {
    const found = keys.get(relationKey(rel.schema, rel.table));
    if (found) rel.keys = { ...rel.keys, ...found };
  }
}

const relationKey = (schema: string, table: string): string => `${schema}\u0000${table}`;

/** A key row's columns in a map of relation keys: appended to the primary key, or to the foreign key of that name. */
export function addKeyColumn(
  keys: Map<string, RelationKeys & { byName?: Map<string, ForeignKey> }>,
  row: { schema: string; table: string; constraint: string; column: string; refSchema: string | null; refTable: string | null; refColumn: string | null },
  primary: boolean,
): void {
  const key = relationKey(row.schema, row.table);
  let entry = keys.get(key);
  if (!entry) keys.set(key, (entry = {}));
  if (primary) {
    (entry.primaryKey ??= []).push(row.column);
    return;
  }
  if (row.refTable === null || row.refColumn === null) return;
  entry.byName ??= new Map();
  let fk = entry.byName.get(row.constraint);
  if (!fk) {
    fk = { columns: [], references: { schema: row.refSchema ?? row.schema, table: row.refTable, columns: [] } };
    entry.byName.set(row.constraint, fk);
    (entry.foreignKeys ??= []).push(fk);
  }
  fk.columns.push(row.column);
  fk.references.columns.push(row.refColumn);
}

// Descriptions go into every tools/list answer: list the columns, but not without bound.
const MAX_DESCRIBED_COLUMNS = 100;

/** The tool descriptor of one table or view; `qualified` is how the agent should write the table in SQL. */
/** The column list of a table tool's description (`a int, b text`), bounded. */
export function columnList(columns: readonly string[]): string {
  const cols = columns.slice(0, MAX_DESCRIBED_COLUMNS);
  if (columns.length > MAX_DESCRIBED_COLUMNS) cols.push(`and ${columns.length - MAX_DESCRIBED_COLUMNS} more`);
  return cols.join(', ');
}

export function relationTool(name: string, rel: RelationInfo, qualified: string): SqlToolSpec {
  const cols = columnList(rel.columns.map((c) => `${c.name} ${c.type}`));
  return {
    name,
    description: `Query the ${rel.kind} ${qualified} (columns: ${cols}). Send one SELECT statement on this ${rel.kind} only.`,
    inputSchema: {
      type: 'object',
      properties: {
        sql: { type: 'string', description: `A single SELECT statement on ${qualified}` },
        limit: { type: 'integer', description: 'Maximum rows to return', default: DEFAULT_LIMIT, minimum: 1, maximum: MAX_LIMIT },
      },
      required: ['sql'],
      additionalProperties: false,
    },
    outputSchema: OUTPUT_SCHEMA,
    target: { schema: rel.schema, table: rel.table, kind: rel.kind, columns: rel.columns, ...keysOf(rel.keys) },
  };
}

/** The keys as a target keeps them: only what is known, no helper fields. */
function keysOf(keys: (RelationKeys & { byName?: unknown }) | undefined): RelationKeys {
  if (!keys) return {};
  return {
    ...(keys.primaryKey?.length ? { primaryKey: keys.primaryKey } : {}),
    ...(keys.foreignKeys?.length ? { foreignKeys: keys.foreignKeys } : {}),
    ...(typeof keys.rowEstimate === 'number' && keys.rowEstimate >= 0 ? { rowEstimate: Math.round(keys.rowEstimate) } : {}),
  };
}
