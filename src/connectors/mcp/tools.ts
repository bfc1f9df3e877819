/**
 * Turns an upstream's tools/list into ToolSpecs, one tool at a time: a tool whose name, description or input schema
 * the gateway cannot serve (or the store cannot hold) is skipped with a reason the admin sees; the rest are served.
 * Schemas are checked with the same Ajv options the catalog compiles them with, so a passed one never breaks it.
 */
import Ajv from 'ajv';
import type { JsonSchema, SkippedTool, ToolHints, ToolSpec } from '../types.ts';
import { MAX_TOOL_NAME, sanitizeName } from '../shared/naming.ts';
import { patternProblem } from './patterns.ts';

/** What an `mcp` tool's spec keeps for the call step: the upstream's own name for it. */
export interface McpTarget {
  upstreamName: string;
}

export const MAX_UPSTREAM_TOOLS = 500;
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;
/** Nesting of objects and arrays in one input schema; real tool inputs stay far below. */
export const MAX_INPUT_SCHEMA_DEPTH = 32;
export const MAX_DESCRIPTION = 2000;
/** MCP 2025-11-25 (Tools, "Tool names"): 1-128 characters of A-Z a-z 0-9 _ - . */
const UPSTREAM_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const PREFIX_LENGTH = 24;
/** At most this many skipped tools are kept for the admin; the last entry counts the rest. */
const MAX_SKIPPED_LISTED = 50;

/**
 * Characters no description keeps: C0 controls but tab and newline, DEL, C1 controls, and the invisible format
 * characters that reorder or hide text (bidi embeddings, overrides and isolates, zero-width, BOM). A lone surrogate
 * is not text at all (the store's JSON refuses it) and becomes U+FFFD.
 */
const UNSAFE_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;
/** What a name shown to the admin has escaped: every control character (tab and newline too) and the invisible ones. */
const HIDDEN_IN_NAME = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** What no string of a served schema may hold: a control character (tab, CR, LF aside) or a lone surrogate. */
const UNSTORABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// validateFormats off: unknown formats (uri...) are ignored by the catalog's compile too, without the console warning.
// One per listing: Ajv keeps every schema it compiled, so a shared one would grow with every validation.
const newAjv = () => new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false, validateFormats: false });

interface UpstreamTool {
  name?: unknown;
  description?: unknown;
  inputSchema?: unknown;
  annotations?: { readOnlyHint?: unknown; destructiveHint?: unknown; openWorldHint?: unknown };
}

/** An upstream name as the admin is shown it: control and invisible characters escaped, at most 128 characters. */
function displayName(name: unknown): string {
  if (typeof name !== 'string' || name === '') return '(no name)';
  const shown = name
    .slice(0, 128)
    .replace(LONE_SURROGATE, '\ufffd')
    .replace(HIDDEN_IN_NAME, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return name.length > 128 ? `${shown}...` : shown;
}

/** Why the upstream's name cannot be served, or null. */
function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name === '') return 'the tool has no name';
  if (name.length > 128) return 'the name is longer than 128 characters';
  if (!UPSTREAM_NAME.test(name)) return 'the name holds characters MCP does not allow in tool names (only A-Z, a-z, 0-9, _, - and .)';
  return null;
}

/** The description as served: unsafe characters removed, capped. A missing or non-string one gets a plain default. */
function cleanDescription(raw: unknown, upstreamName: string, connectorName: string): string {
  if (typeof raw !== 'string') return `Tool ${upstreamName} of the MCP server ${connectorName}.`;
  const clean = raw.replace(LONE_SURROGATE, '\ufffd').replace(UNSAFE_TEXT, '').replace(/\r\n?/g, '\n');
  return clean.length > MAX_DESCRIPTION ? `${clean.slice(0, MAX_DESCRIPTION - 3)}...` : clean;
}

/** Why a schema value cannot be stored and served as it is (too deep, a key or string with control characters), or null. */
function shapeProblem(value: unknown, depth: number): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? 'inputSchema holds a string with a control character' : null;
  if (!value || typeof value !== 'object') return null;
  if (depth > MAX_INPUT_SCHEMA_DEPTH) return `inputSchema is nested deeper than ${MAX_INPUT_SCHEMA_DEPTH} levels`;
  for (const [key, inner] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return 'inputSchema holds a key with a control character';
    // Compiled schemas share one Ajv per process: an `$id` would register under a name another tool (of any org) could
    // then reach by `$ref`, or collide with. Only references inside the tool's own schema are served.
    if (key === '$id') return 'inputSchema declares an $id (only self-contained schemas are served)';
    if (key === '$ref' && typeof inner === 'string' && !inner.startsWith('#'))
      return 'inputSchema refers to another schema (only references inside it, "#...", are served)';
    // The gateway runs these on the agent's arguments: none that could backtrack for ever.
    const patterns =
      key === 'pattern' && typeof inner === 'string' ? [inner] : key === 'patternProperties' && inner && typeof inner === 'object' ? Object.keys(inner) : [];
    for (const pattern of patterns) {
      const problem = patternProblem(pattern);
      if (problem) return `inputSchema: ${problem}`;
    }
    const problem = shapeProblem(inner, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/** The input schema as the gateway will serve and compile it, or the reason it is refused. */
function checkedSchema(raw: unknown, ajv: Ajv): JsonSchema | string {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'inputSchema is not an object';
  let size: number;
  try {
    size = JSON.stringify(raw).length;
  } catch {
    return 'inputSchema is not JSON';
  }
  if (size > MAX_INPUT_SCHEMA_BYTES) return `inputSchema is larger than ${MAX_INPUT_SCHEMA_BYTES} bytes`;
  const shape = shapeProblem(raw, 0);
  if (shape) return shape;
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
 * connectors of the org are resolved by the repository like database tools (first keeps the name). An upstream
 * name listed twice is ambiguous (a call could reach either): only its first tool is served.
 */
export function upstreamToolSpecs(connectorName: string, listed: unknown[], more = false): { specs: ToolSpec<McpTarget>[]; skipped: SkippedTool[] } {
  const prefix = `${sanitizeName(connectorName).slice(0, PREFIX_LENGTH) || 'mcp'}__`;
  const taken = new Set<string>();
  const upstreamNames = new Set<string>();
  const specs: ToolSpec<McpTarget>[] = [];
  const skipped: SkippedTool[] = [];
  const skip = (name: unknown, reason: string) => skipped.push({ name: displayName(name), reason });
  const ajv = newAjv();
  for (const item of listed.slice(0, MAX_UPSTREAM_TOOLS)) {
    const tool = (item && typeof item === 'object' && !Array.isArray(item) ? item : {}) as UpstreamTool;
    const problem = nameProblem(tool.name);
    if (problem) {
      skip(tool.name, problem);
      continue;
    }
    const upstreamName = tool.name as string;
    if (upstreamNames.has(upstreamName)) {
      skip(upstreamName, 'another tool of this server has the same name');
      continue;
    }
    upstreamNames.add(upstreamName);
    const schema = checkedSchema(tool.inputSchema, ajv);
    if (typeof schema === 'string') {
      skip(upstreamName, schema);
      continue;
    }
    const base = (prefix + sanitizeName(upstreamName)).slice(0, MAX_TOOL_NAME);
    let name = base;
    for (let k = 2; taken.has(name); k++) name = `${base.slice(0, MAX_TOOL_NAME - `_${k}`.length)}_${k}`;
    taken.add(name);
    specs.push({
      name,
      description: cleanDescription(tool.description, upstreamName, connectorName),
      inputSchema: schema,
      annotations: hints(tool.annotations),
      target: { upstreamName },
    });
  }
  if (more || listed.length > MAX_UPSTREAM_TOOLS)
    skipped.push({
      name: '(the rest)',
      reason: `the server lists more tools than the gateway reads (${MAX_UPSTREAM_TOOLS} at most, in 20 pages at most); only those were checked`,
    });
  return { specs, skipped: capSkipped(skipped) };
}

/** The skipped list kept for the admin: the first ones, and a count of the others. */
function capSkipped(skipped: SkippedTool[]): SkippedTool[] {
  if (skipped.length <= MAX_SKIPPED_LISTED) return skipped;
  return [...skipped.slice(0, MAX_SKIPPED_LISTED - 1), { name: '(more)', reason: `${skipped.length - MAX_SKIPPED_LISTED + 1} further tools were skipped` }];
}
