/**
 * What MCP's resources and prompts methods answer, independent of JSON-RPC (decisions 0314, 0315): the schema of each
 * database connector (its schema tool's row governs it) and an upstream MCP server's resources, resource templates and
 * prompts, each governed by its own row like a tool: only enabled items of connectors in the credential's scope are
 * listed or served; an item flagged for approval is not served (a read cannot wait for a person); every read, get and
 * completion is audited (`resource.read`, `prompt.got`, `completion.asked`), answered only once its row is written.
 * Names and URIs carry the connector: `toolgate://<connector>/<upstream URI>`, so a read names exactly one connector
 * and the gateway forwards only what it listed (or what an enabled template of it matches).
 */
import { getDriver } from '../connectors/registry.ts';
import { ConnectorError } from '../connectors/types.ts';
import type { McpItemTarget } from '../connectors/mcp/items.ts';
import { actorOf, type Principal } from '../principal.ts';
import { trialExpired } from '../billing/trial.ts';
import type { CatalogTool, OrgCatalog } from './catalog.ts';
import type { RuntimeOrg, ToolRuntimeDeps } from './runtime.ts';
import { schemaDocument } from './schema.ts';

const RESOURCE_SCHEME = 'toolgate://';

/** How an item request ended: an answer, or why nothing was answered (mcp/server.ts words each). */
export type ItemOutcome =
  | { kind: 'ok'; result: Record<string, unknown> }
  | { kind: 'not_found'; what: 'resource' | 'prompt'; name: string }
  | { kind: 'scope'; name: string }
  | { kind: 'trial_ended'; endedAt: Date }
  | { kind: 'audit_busy' }
  | { kind: 'failed'; message: string }
  | { kind: 'unrecorded' };

const served = (principal: Principal, item: CatalogTool): boolean =>
  item.enabled && !item.requiresApproval && (principal.connectorIds === null || principal.connectorIds.includes(item.connector.id));

const targetOf = (item: CatalogTool) => item.spec.target as McpItemTarget;
const gatewayUri = (item: CatalogTool, upstream: string) => `${RESOURCE_SCHEME}${item.connector.resourceHost}/${upstream}`;
const schemaUri = (tool: CatalogTool) => `${RESOURCE_SCHEME}${tool.connector.resourceHost}/schema`;

/** What the endpoint serves this credential, for the capabilities it declares (resources, prompts, completions). */
export function servedKinds(catalog: OrgCatalog, principal: Principal): { resources: boolean; prompts: boolean; completions: boolean } {
  const items = catalog.items.filter((i) => served(principal, i));
  return {
    resources: items.some((i) => i.kind !== 'prompt') || catalog.tools.some((t) => t.kind === 'schema' && served(principal, t)),
    prompts: items.some((i) => i.kind === 'prompt'),
    completions: items.some((i) => targetOf(i).completions === true),
  };
}

export function listResources(catalog: OrgCatalog, principal: Principal): Record<string, unknown> {
  const schemas = catalog.tools
    .filter((t) => t.kind === 'schema' && served(principal, t))
    .map((t) => ({
      uri: schemaUri(t),
      name: t.name,
      title: `Schema of ${t.connector.name}`,
      description: `The tables of the ${t.connector.type} connector "${t.connector.name}" that you may query, as JSON (what ${t.name} answers).`,
      mimeType: 'application/json',
    }));
  const upstream = catalog.items
    .filter((i) => i.kind === 'resource' && served(principal, i))
    .map((i) => {
      const t = targetOf(i);
      return {
        uri: gatewayUri(i, t.upstream),
        name: i.name,
        ...(t.title ? { title: t.title } : {}),
        description: i.description,
        ...(t.mimeType ? { mimeType: t.mimeType } : {}),
      };
    });
  return { resources: [...schemas, ...upstream] };
}

export function listResourceTemplates(catalog: OrgCatalog, principal: Principal): Record<string, unknown> {
  const templates = catalog.items
    .filter((i) => i.kind === 'resource_template' && served(principal, i))
    .map((i) => {
      const t = targetOf(i);
      return {
        uriTemplate: gatewayUri(i, t.upstream),
        name: i.name,
        ...(t.title ? { title: t.title } : {}),
        description: i.description,
        ...(t.mimeType ? { mimeType: t.mimeType } : {}),
      };
    });
  return { resourceTemplates: templates };
}

export function listPrompts(catalog: OrgCatalog, principal: Principal): Record<string, unknown> {
  const prompts = catalog.items
    .filter((i) => i.kind === 'prompt' && served(principal, i))
    .map((i) => {
      const t = targetOf(i);
      return { name: i.name, ...(t.title ? { title: t.title } : {}), description: i.description, arguments: t.arguments ?? [] };
    });
  return { prompts };
}

/**
 * Whether an expanded URI is one an RFC 6570 template yields: its literal parts in order (the first at the start, the
 * last at the end), anything for each expression. Leftmost matching of the parts is exact for this shape and linear,
 * so no template of the upstream's choosing can make a read backtrack.
 */
function matchesTemplate(template: string, uri: string): boolean {
  const parts = template.split(/\{[^}]*\}/);
  if (parts.length === 1) return template === uri;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!uri.startsWith(first) || uri.length < first.length + last.length || !uri.endsWith(last)) return false;
  let at = first.length;
  const end = uri.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = uri.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** What a gateway URI names: the schema of a connector, an upstream resource, or a URI one of its templates yields. */
function resolveUri(catalog: OrgCatalog, uri: string): { schema: CatalogTool } | { item: CatalogTool; upstream: string } | null {
  if (!uri.startsWith(RESOURCE_SCHEME)) return null;
  const rest = uri.slice(RESOURCE_SCHEME.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return null;
  const host = rest.slice(0, slash);
  const upstream = rest.slice(slash + 1);
  const schema = catalog.tools.find((t) => t.kind === 'schema' && t.connector.resourceHost === host);
  if (schema) return upstream === 'schema' ? { schema } : null;
  const own = catalog.items.filter((i) => i.connector.resourceHost === host);
  const exact = own.find((i) => i.kind === 'resource' && targetOf(i).upstream === upstream);
  // A listed resource is governed by its own row, even where a template would also yield its URI.
  if (exact) return { item: exact, upstream };
  const template = own.find((i) => i.kind === 'resource_template' && i.enabled && matchesTemplate(targetOf(i).upstream, upstream));
  return template ? { item: template, upstream } : null;
}

/** The shared ladder of an item request: scope, trial, audit capacity, the request, its audit row. */
async function runItem(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  item: CatalogTool,
  audit: { action: string; name: string },
  answer: () => Promise<Record<string, unknown>> | Record<string, unknown>,
): Promise<ItemOutcome> {
  if (principal.connectorIds !== null && !principal.connectorIds.includes(item.connector.id)) return { kind: 'scope', name: audit.name };
  if (trialExpired(org, new Date())) return { kind: 'trial_ended', endedAt: org.trialExpiresAt! };
  if (!deps.audit.accepting()) return { kind: 'audit_busy' };
  const started = performance.now();
  let outcome: ItemOutcome;
  try {
    outcome = { kind: 'ok', result: await answer() };
  } catch (err) {
    if (!(err instanceof ConnectorError)) throw err;
    outcome = { kind: 'failed', message: err.message };
  }
  const status = outcome.kind === 'ok' ? 'success' : 'error';
  try {
    await deps.audit.toolCall({
      orgId: org.id,
      action: audit.action,
      actor: actorOf(principal),
      targetType: item.kind === 'prompt' ? 'prompt' : 'resource',
      targetId: audit.name.slice(0, 300),
      outcome: status,
      details: {
        name: item.name,
        connector_id: item.connector.id,
        connector_type: item.connector.type,
        outcome: status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        counted: false,
      },
    });
  } catch {
    return { kind: 'unrecorded' };
  }
  return outcome;
}

/** Sends one item request to the connector's driver under the call limits. */
function upstreamRequest(deps: ToolRuntimeDeps, org: RuntimeOrg, item: CatalogTool, method: string, params: Record<string, unknown>, signal?: AbortSignal) {
  const driver = getDriver(item.connector.type);
  if (!driver?.request) throw new ConnectorError(`The connector type ${item.connector.type} serves no ${method} on this gateway.`, 'invalid_config');
  const { config } = deps;
  return driver.request(method, params, {
    connectorId: item.connector.id,
    config: item.connector.config,
    credential: item.connector.credential,
    allowWrite: false,
    allowDdl: false,
    readOnly: true,
    outbound: deps.outbound,
    orgId: org.id,
    limits: {
      statementTimeoutMs: config.statementTimeoutMs,
      lockTimeoutMs: config.lockTimeoutMs,
      maxRows: config.maxResultRows,
      maxResultBytes: config.maxResultBytes,
      maxConcurrentCalls: config.connectorMaxConcurrentCalls,
      queueTimeoutMs: config.connectorQueueTimeoutMs,
    },
    signal,
  });
}

/** resources/read: the schema document of a database connector, or an upstream resource with its URIs in gateway form. */
export async function readResource(deps: ToolRuntimeDeps, org: RuntimeOrg, principal: Principal, uri: string, signal?: AbortSignal): Promise<ItemOutcome> {
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const found = resolveUri(catalog, uri);
  const item = found ? ('schema' in found ? found.schema : found.item) : null;
  if (!found || !item?.enabled || item.requiresApproval) return { kind: 'not_found', what: 'resource', name: uri };
  const audit = { action: 'resource.read', name: uri };
  if ('schema' in found) {
    const text = schemaDocument(item.connector, item.described ?? [], deps.config.maxResultBytes);
    return runItem(deps, org, principal, item, audit, () => ({ contents: [{ uri, mimeType: 'application/json', text }] }));
  }
  return runItem(deps, org, principal, item, audit, async () => {
    const result = await upstreamRequest(deps, org, item, 'resources/read', { uri: found.upstream }, signal);
    return { contents: contentsOf(result, item) };
  });
}

/** The upstream's contents blocks (text or blob), each URI put in gateway form; anything else is left out. */
function contentsOf(result: Record<string, unknown>, item: CatalogTool): Record<string, unknown>[] {
  const contents = Array.isArray(result.contents) ? result.contents : [];
  return contents.flatMap((c) => {
    if (!c || typeof c !== 'object' || typeof (c as { uri?: unknown }).uri !== 'string') return [];
    const block = c as Record<string, unknown>;
    if (typeof block.text !== 'string' && typeof block.blob !== 'string') return [];
    return [{ ...block, uri: gatewayUri(item, block.uri as string) }];
  });
}

/** prompts/get: the upstream prompt's messages for these arguments. */
export async function getPrompt(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  name: string,
  args: Record<string, string>,
  signal?: AbortSignal,
): Promise<ItemOutcome> {
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const item = catalog.items.find((i) => i.kind === 'prompt' && i.name === name);
  if (!item?.enabled || item.requiresApproval) return { kind: 'not_found', what: 'prompt', name };
  return runItem(deps, org, principal, item, { action: 'prompt.got', name }, async () => {
    const result = await upstreamRequest(deps, org, item, 'prompts/get', { name: targetOf(item).upstream, arguments: args }, signal);
    const messages = Array.isArray(result.messages)
      ? result.messages.filter((m) => m && typeof m === 'object' && typeof (m as { role?: unknown }).role === 'string')
      : [];
    return { ...(typeof result.description === 'string' ? { description: result.description } : {}), messages };
  });
}

/** completion/complete for an upstream prompt's or template's argument (only where the upstream declared completions). */
export async function complete(
  deps: ToolRuntimeDeps,
  org: RuntimeOrg,
  principal: Principal,
  params: { ref: { type: string; name?: string; uri?: string }; argument: Record<string, unknown>; context?: Record<string, unknown> },
  signal?: AbortSignal,
): Promise<ItemOutcome> {
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const { ref } = params;
  const key = ref.type === 'ref/prompt' ? (ref.name ?? '') : (ref.uri ?? '');
  const item =
    ref.type === 'ref/prompt'
      ? catalog.items.find((i) => i.kind === 'prompt' && i.name === key)
      : catalog.items.find((i) => i.kind === 'resource_template' && gatewayUri(i, targetOf(i).upstream) === key);
  if (!item || !item.enabled || item.requiresApproval || targetOf(item).completions !== true) {
    return { kind: 'not_found', what: ref.type === 'ref/prompt' ? 'prompt' : 'resource', name: key };
  }
  const upstreamRef =
    ref.type === 'ref/prompt' ? { type: 'ref/prompt', name: targetOf(item).upstream } : { type: 'ref/resource', uri: targetOf(item).upstream };
  return runItem(deps, org, principal, item, { action: 'completion.asked', name: key }, async () => {
    const result = await upstreamRequest(
      deps,
      org,
      item,
      'completion/complete',
      { ref: upstreamRef, argument: params.argument, ...(params.context ? { context: params.context } : {}) },
      signal,
    );
    const c = (result.completion ?? {}) as Record<string, unknown>;
    const values = Array.isArray(c.values) ? c.values.filter((v): v is string => typeof v === 'string').slice(0, 100) : [];
    return { completion: { values, ...(typeof c.total === 'number' ? { total: c.total } : {}), ...(c.hasMore === true ? { hasMore: true } : {}) } };
  });
}
