/**
 * An upstream MCP server's resources, resource templates and prompts as specs the gateway stores beside its tools
 * (issue 43 item 5, decision 0315): one row each, governed like a tool (enabled, audit). Names take the connector's
 * prefix as tools do; what the upstream declares is checked and cleaned as tool descriptors are, and an item the
 * gateway cannot serve is skipped with a reason the admin sees.
 */
import type { ItemKind, SkippedTool, ToolSpec } from '../types.ts';
import { MAX_TOOL_NAME, sanitizeName } from '../shared/naming.ts';
import { MAX_DESCRIPTION } from './tools.ts';

/** What an upstream item's spec keeps for its requests: the upstream's own identity of it. */
export interface McpItemTarget {
  /** A resource's URI, a template's URI template, or a prompt's name, as the upstream knows it. */
  upstream: string;
  mimeType?: string;
  title?: string;
  /** A prompt's declared arguments. */
  arguments?: { name: string; description?: string; required?: boolean }[];
  /** The upstream declared the completions capability: completion/complete may be asked of this item. */
  completions?: boolean;
}

export const MAX_UPSTREAM_ITEMS = 500;
const MAX_URI = 2048;
const MAX_PROMPT_ARGUMENTS = 32;
const PREFIX_LENGTH = 24;
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/;
const UNSAFE_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const EMPTY_INPUT = { type: 'object' as const, properties: {}, additionalProperties: false };

const text = (raw: unknown, max: number): string | undefined =>
  typeof raw === 'string' ? raw.replace(LONE_SURROGATE, '\ufffd').replace(UNSAFE_TEXT, '').slice(0, max) : undefined;

/** Why an identifier (URI, template, prompt name) cannot be served as it is, or null. */
function identifierProblem(value: unknown, what: string): string | null {
  if (typeof value !== 'string' || value === '') return `the ${what} is missing`;
  if (value.length > MAX_URI) return `the ${what} is longer than ${MAX_URI} characters`;
  if (CONTROL.test(value) || LONE_SURROGATE.test(value)) return `the ${what} holds control or invisible characters`;
  return null;
}

const KIND_WORD: Record<string, string> = { resource: 'resource', resource_template: 'resource template', prompt: 'prompt' };

/** One listed item as a spec, or why it is skipped. `field`: where its upstream identity is (uri, uriTemplate, name). */
function itemSpec(kind: ItemKind, raw: unknown, field: string, connectorName: string, completions: boolean): ToolSpec<McpItemTarget> | string {
  const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  const upstream = item[field];
  const problem = identifierProblem(upstream, field);
  if (problem) return problem;
  const label = text(item.name, 128) || (upstream as string);
  const target: McpItemTarget = { upstream: upstream as string };
  const mimeType = text(item.mimeType, 128);
  if (mimeType) target.mimeType = mimeType;
  const title = text(item.title, 256);
  if (title) target.title = title;
  if (kind === 'prompt') {
    if (item.arguments !== undefined && !Array.isArray(item.arguments)) return 'the arguments are not a list';
    const args = ((item.arguments as unknown[]) ?? []).slice(0, MAX_PROMPT_ARGUMENTS).flatMap((a) => {
      const arg = (a && typeof a === 'object' ? a : {}) as Record<string, unknown>;
      const name = text(arg.name, 128);
      return name
        ? [{ name, ...(text(arg.description, 500) ? { description: text(arg.description, 500) } : {}), ...(arg.required === true ? { required: true } : {}) }]
        : [];
    });
    target.arguments = args;
  }
  if (completions && kind !== 'resource') target.completions = true;
  const prefix = `${sanitizeName(connectorName).slice(0, PREFIX_LENGTH) || 'mcp'}__`;
  return {
    name: (prefix + (sanitizeName(label) || 'item')).slice(0, MAX_TOOL_NAME),
    kind,
    description: text(item.description, MAX_DESCRIPTION) ?? `The ${KIND_WORD[kind]} ${label.slice(0, 128)} of the MCP server ${connectorName}.`,
    inputSchema: EMPTY_INPUT,
    target,
  };
}

/**
 * The specs of one kind's listing: checked one at a time, names unique within the kind (`_2`, `_3`... in upstream
 * order), an identity listed twice served once (a read could reach either).
 */
export function upstreamItemSpecs(
  kind: 'resource' | 'resource_template' | 'prompt',
  listed: unknown[],
  connectorName: string,
  completions: boolean,
): { specs: ToolSpec<McpItemTarget>[]; skipped: SkippedTool[] } {
  const field = kind === 'resource' ? 'uri' : kind === 'resource_template' ? 'uriTemplate' : 'name';
  const specs: ToolSpec<McpItemTarget>[] = [];
  const skipped: SkippedTool[] = [];
  const names = new Set<string>();
  const identities = new Set<string>();
  for (const raw of listed.slice(0, MAX_UPSTREAM_ITEMS)) {
    const spec = itemSpec(kind, raw, field, connectorName, completions);
    const shown = `${KIND_WORD[kind]} ${String((raw as Record<string, unknown> | null)?.[field] ?? '(none)')
      .slice(0, 128)
      .replace(CONTROL, '?')}`;
    if (typeof spec === 'string') {
      skipped.push({ name: shown, reason: spec });
      continue;
    }
    if (identities.has(spec.target.upstream)) {
      skipped.push({ name: shown, reason: `another ${KIND_WORD[kind]} of this server has the same ${field}` });
      continue;
    }
    identities.add(spec.target.upstream);
    let name = spec.name;
    for (let k = 2; names.has(name); k++) name = `${spec.name.slice(0, MAX_TOOL_NAME - `_${k}`.length)}_${k}`;
    names.add(name);
    specs.push({ ...spec, name });
  }
  if (listed.length > MAX_UPSTREAM_ITEMS) skipped.push({ name: `(more ${KIND_WORD[kind]}s)`, reason: `only the first ${MAX_UPSTREAM_ITEMS} are served` });
  return { specs, skipped };
}
