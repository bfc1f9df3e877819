/**
 * A SQL connector's `single` tool layout (issue 38 item 3, docs/decisions/0299): one free-SQL tool for the whole
 * connector, named and described from the connector, instead of one per table. The table tools' rows still exist and
 * govern their tables (enabled, policy, approval: decision 0292); they are not listed.
 */
import type { SqlTarget, SqlToolSpec } from '../connectors/types.ts';
import { MAX_TOOL_NAME, sanitizeName } from '../connectors/shared/naming.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, OUTPUT_SCHEMA } from '../connectors/shared/toolspec.ts';
import type { ConnectorTables } from './tables.ts';

/** How many table names the description lists; the schema tool finds the rest. */
const DESCRIBED_TABLES = 40;

/** `query_<connector name>`, sanitised and cut to the MCP name limit. */
export function singleToolName(connectorName: string): string {
  const base = sanitizeName(connectorName).replace(/_+/g, '_').replace(/^_|_$/g, '') || 'connector';
  return `query_${base}`.slice(0, MAX_TOOL_NAME);
}

/**
 * The connector's one SQL tool. Its target is the first enabled table's (what the guard names in messages); every
 * table it may read comes with the call (ctx.tables), each governed by its own row. Null: no table is enabled.
 */
export function singleToolSpec(connector: { name: string; type: string }, tables: ConnectorTables, name: string): SqlToolSpec | null {
  const enabled = tables.list.flatMap((t, i) => (t.enabled ? [tables.rows[i]!.name] : []));
  const first = tables.list.find((t) => t.enabled);
  if (!first) return null;
  const shown = enabled.slice(0, DESCRIBED_TABLES).join(', ');
  const more = enabled.length > DESCRIBED_TABLES ? ` and ${enabled.length - DESCRIBED_TABLES} more (the connector's schema tool finds them)` : '';
  const description =
    `Query the ${connector.type} connector "${connector.name}". Send one SELECT statement; it may JOIN, use subqueries, ` +
    `CTEs and set operations over the connector's tables: ${shown}${more}.`;
  const target: SqlTarget = { ...first.target };
  return {
    name,
    description,
    inputSchema: {
      type: 'object',
      properties: {
        sql: { type: 'string', description: `A single SELECT statement over the tables of ${connector.name}` },
        limit: { type: 'integer', description: 'Maximum rows to return', default: DEFAULT_LIMIT, minimum: 1, maximum: MAX_LIMIT },
      },
      required: ['sql'],
      additionalProperties: false,
    },
    outputSchema: OUTPUT_SCHEMA,
    annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    target,
  };
}
