/**
 * Turns an upstream's tools/list into ToolSpecs: collision-free names, input schemas checked as JSON Schema (the
 * same Ajv options the catalog compiles them with, so a passed schema never breaks the org's catalog) and size-capped.
 */
import Ajv from 'ajv';
import type { JsonSchema, ToolHints, ToolSpec } from '../types.ts';
import { MAX_TOOL_NAME, sanitizeName } from '../shared/naming.ts';

/** What an `mcp` tool's spec keeps for the call step: the upstream's own name for it. */
export interface McpTarget {
  upstreamName: string;
}

export const MAX_UPSTREAM_TOOLS = 500;
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;
const MAX_DESCRIPTION = 2000;
const PREFIX_LENGTH = 24;

// validateFormats off: unknown formats (uri...) are ignored by the catalog's compile too, without the console warning.
const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false, validateFormats: false });

interface UpstreamTool {
  name?: unknown;
  description?: unknown;
  inputSchema?: unknown;
  annotations?: { readOnlyHint?: unknown; destructiveHint?: unknown; openWorldHint?: unknown };
}

/** The input schema as the gateway will serve and compile it, or the reason it is refused. */
function checkedSchema(raw: unknown): JsonSchema | string {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'inputSchema is not an object';
  if (JSON.stringify(raw).length > MAX_INPUT_SCHEMA_BYTES) return `inputSchema is larger than ${MAX_INPUT_SCHEMA_BYTES} bytes`;
  // The dialect marker is dropped: the catalog's Ajv speaks draft-07, which covers what MCP servers emit for tool inputs.
  const { $schema: _dialect, ...schema } = raw as Record<string, unknown>;
  if (schema.type !== 'object') return 'inputSchema.type is not "object"';
  if (schema.properties === undefined) schema.properties = {};
  try {
    ajv.compile(schema);
  } catch {
    return 'inputSchema is not a valid JSON Schema (or refers to remote schemas)';
  }
  return schema as JsonSchema;
}

/** Upstream hints are the upstream's claims; unset ones take MCP's defaults (not read-only, destructive, open world). */
function hints(a: UpstreamTool['annotations']): ToolHints {
  return {
    readOnlyHint: a?.readOnlyHint === true,
    destructiveHint: a?.destructiveHint !== false,
    openWorldHint: a?.openWorldHint !== false,
  };
}

/**
 * Names are `<connector>__<tool>`, both sanitised to [a-z0-9_] (connector part at most 24 characters), cut to 64;
 * clashes inside one upstream (sanitising, truncation) get `_2`, `_3`... in upstream order; clashes with other
 * connectors of the org are resolved by the repository like database tools (first keeps the name).
 */
export function upstreamToolSpecs(connectorName: string, listed: unknown[]): { specs: ToolSpec<McpTarget>[]; skipped: string[] } {
  const prefix = `${sanitizeName(connectorName).slice(0, PREFIX_LENGTH) || 'mcp'}__`;
  const taken = new Set<string>();
  const specs: ToolSpec<McpTarget>[] = [];
  const skipped: string[] = [];
  for (const item of listed.slice(0, MAX_UPSTREAM_TOOLS)) {
    const tool = (item ?? {}) as UpstreamTool;
    if (typeof tool.name !== 'string' || tool.name === '' || tool.name.length > 128) {
      skipped.push('(a tool without a usable name)');
      continue;
    }
    const schema = checkedSchema(tool.inputSchema);
    if (typeof schema === 'string') {
      skipped.push(`${tool.name.slice(0, 128)}: ${schema}`);
      continue;
    }
    const base = (prefix + sanitizeName(tool.name)).slice(0, MAX_TOOL_NAME);
    let name = base;
    for (let k = 2; taken.has(name); k++) name = base.slice(0, MAX_TOOL_NAME - `_${k}`.length) + `_${k}`;
    taken.add(name);
    specs.push({
      name,
      description: typeof tool.description === 'string' ? tool.description.slice(0, MAX_DESCRIPTION) : `Tool ${tool.name} of the MCP server ${connectorName}.`,
      inputSchema: schema,
      annotations: hints(tool.annotations),
      target: { upstreamName: tool.name },
    });
  }
  return { specs, skipped };
}
