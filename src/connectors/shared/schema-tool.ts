/**
 * The schema tool of a database connector (issue 38 item 4, decision 0313): one `describe_<connector>` tool beside
 * the connector's table tools, which searches and describes the tables an agent may read. Its spec is added to what
 * the driver introspected; its calls are answered by the gateway from the org's catalog (tools/schema.ts), never by
 * the driver, so what it shows follows each table's own tool row (enabled, hidden and masked columns, row filter).
 */
import type { JsonSchema, ToolSpec } from '../types.ts';
import { MAX_TOOL_NAME, sanitizeName } from './naming.ts';

export const DEFAULT_DESCRIBED_TABLES = 20;
const MAX_DESCRIBED_TABLES = 100;

const INPUT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    search: {
      type: 'string',
      maxLength: 128,
      description: 'Part of a table name (case-insensitive), e.g. "order" finds orders and order_items. Omit to list every table.',
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_DESCRIBED_TABLES,
      default: DEFAULT_DESCRIBED_TABLES,
      description: 'Most tables to describe; the answer says how many more matched.',
    },
  },
  additionalProperties: false,
};

/** A name as a tool-name part: sanitised, runs of `_` made one, none at either end (`Shop (renamed)` -> `shop_renamed`). */
const tidy = (name: string): string => sanitizeName(name).replace(/_+/g, '_').replace(/^_|_$/g, '');

/** What a database connector's schema tool spec carries: nothing the driver reads (the gateway answers it). */
interface SchemaToolTarget {
  schemaTool: true;
}

/**
 * The specs of a database connector with its schema tool added when it yields any table tool (a source with no table
 * has nothing to describe). `type` and `connectorName` word its name and description.
 */
export function withSchemaTool(specs: ToolSpec[], type: string, connectorName: string): ToolSpec[] {
  const tables = specs.filter((s) => (s.kind ?? 'tool') === 'tool');
  if (tables.length === 0) return specs;
  const label = connectorName.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 100);
  const spec: ToolSpec<SchemaToolTarget> = {
    name: `describe_${tidy(connectorName) || tidy(type)}`.slice(0, MAX_TOOL_NAME),
    kind: 'schema',
    description:
      `Search and describe the tables of the ${type} connector "${label}" that you may query: columns with their types ` +
      '(masked columns marked), primary and foreign keys, row estimates, and the tool that queries each table. ' +
      'Pass part of a table name to search (case-insensitive).',
    inputSchema: INPUT_SCHEMA,
    annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
    target: { schemaTool: true },
  };
  return [...specs, spec];
}
