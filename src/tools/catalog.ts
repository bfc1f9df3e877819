/** The org's tool catalog as the MCP endpoint sees it: built once per catalog version, with validators compiled once. */
import Ajv, { type ValidateFunction } from 'ajv';
import { credentialContext } from '../connectors/repository.ts';
import type { ItemKind, SqlTarget, ToolSpec } from '../connectors/types.ts';
import { sanitizeName } from '../connectors/shared/naming.ts';
import { describeTables, type DescribedTable } from './schema.ts';
import { describedColumns, policyKey, type CallPolicy, type ToolPolicy } from '../connectors/shared/policy.ts';
import { columnList } from '../connectors/shared/toolspec.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import { catalogRows } from './repository.ts';

interface ConnectorRuntime {
  id: string;
  type: string;
  name: string;
  /** The host of the connector's resource URIs (`toolgate://<host>/...`): its name sanitised, unique in the org. */
  resourceHost: string;
  /** The type's own config (its schema in the contract's ConnectorConfig oneOf); only its driver reads it. */
  config: unknown;
  credential: string | null;
  allowWrite: boolean;
  allowDdl: boolean;
}

export interface CatalogTool {
  id: string;
  /** A tool (tools/list), a schema tool (tools/list, answered by the gateway), or an upstream resource, template or prompt. */
  kind: ItemKind;
  name: string;
  description: string;
  inputSchema: ToolSpec['inputSchema'];
  outputSchema?: ToolSpec['outputSchema'];
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; openWorldHint: boolean };
  enabled: boolean;
  readOnly: boolean;
  requiresApproval: boolean;
  approvalTtlSeconds: number;
  approvalEmails: string[];
  connector: ConnectorRuntime;
  spec: ToolSpec;
  validate: ValidateFunction;
  /** The tool's column and row policy, ready for calls (the caller's attributes are added per call); null: none. */
  policy?: Omit<CallPolicy, 'caller'> | null;
  /** A schema tool: the tables of its connector it describes (tools/schema.ts), derived once per catalog version. */
  described?: DescribedTable[];
}

export interface OrgCatalog {
  version: number;
  /** What tools/list serves: tools and schema tools, by name. */
  tools: CatalogTool[];
  byName: Map<string, CatalogTool>;
  /** Upstream resources, resource templates and prompts (resources/*, prompts/*), by name. */
  items: CatalogTool[];
}

/**
 * Tool input schemas come from introspection: compiled once per catalog version, with defaults applied, by an Ajv of
 * that build alone. Ajv keeps every schema it compiled (and registers any `$id`): one shared instance would grow with
 * every rebuild and let one org's schema collide with, or be referred to by, another org's.
 */
const newAjv = () => new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false });

/** What building a catalog uses: the store, and the secret box that opens connector credentials. */
export interface CatalogDeps {
  store: Pick<Store, 'db'>;
  box: SecretBox;
}

async function buildCatalog(deps: CatalogDeps, orgId: string, version: number): Promise<OrgCatalog> {
  const rows = await catalogRows(deps.store.db, orgId);
  const runtimes = new Map<string, ConnectorRuntime>();
  const list: CatalogTool[] = [];
  const ajv = newAjv();
  for (const { tool, connector } of rows) {
    // free_sql off: the connector's table tools are not served (not listed, and a call to one finds no tool).
    if (!connector.freeSql && tool.savedVersion === null) continue;
    let runtime = runtimes.get(connector.id);
    if (!runtime) {
      runtime = {
        id: connector.id,
        type: connector.type,
        name: connector.name,
        resourceHost: '',
        config: connector.config,
        credential: connector.credentialSealed ? deps.box.decrypt(connector.credentialSealed, credentialContext(connector.id)) : null,
        allowWrite: connector.allowWrite,
        allowDdl: connector.allowDdl,
      };
      runtimes.set(connector.id, runtime);
    }
    const spec = tool.spec as unknown as ToolSpec;
    // One stored tool whose schema no longer compiles (stored before its checks existed) is left out, not the org's
    // whole catalog: every other tool stays callable.
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(spec.inputSchema);
    } catch {
      continue;
    }
    const policy = tool.policy === null ? null : preparePolicy(deps, orgId, tool.policy as unknown as ToolPolicy);
    const writable = !tool.readOnly && !policy && (connector.allowWrite || connector.allowDdl);
    list.push({
      id: tool.id,
      kind: tool.kind as ItemKind,
      name: tool.toolNameOverride ?? tool.baseName,
      description: tool.toolDescriptionOverride ?? (policy ? policyDescription(spec, policy.policy) : spec.description),
      inputSchema: spec.inputSchema,
      outputSchema: spec.outputSchema,
      annotations: spec.annotations ?? { readOnlyHint: !writable, destructiveHint: writable, openWorldHint: false },
      enabled: tool.enabled,
      readOnly: tool.readOnly,
      requiresApproval: tool.requiresApproval,
      approvalTtlSeconds: tool.approvalTtlSeconds,
      approvalEmails: tool.approvalEmails,
      connector: runtime,
      spec,
      validate,
      policy,
    });
  }
  list.sort((a, b) => a.name.localeCompare(b.name));
  nameResourceHosts([...runtimes.values()], rows);
  const tools = list.filter((t) => t.kind === 'tool' || t.kind === 'schema');
  for (const t of tools)
    if (t.kind === 'schema') t.described = describeTables(list.filter((o) => o.kind === 'tool' && o.connector === t.connector).map(tableSource));
  return { version, tools, byName: new Map(tools.map((t) => [t.name, t])), items: list.filter((t) => t.kind !== 'tool' && t.kind !== 'schema') };
}

const tableSource = (t: CatalogTool) => ({ name: t.name, enabled: t.enabled, target: t.spec.target, policy: t.policy?.policy ?? null });

/**
 * Each connector's resource host: its name sanitised (`toolgate://<host>/...`); a name two connectors share takes
 * `_2`, `_3`... in the order the connectors were created, so an older connector's URIs never change.
 */
function nameResourceHosts(runtimes: ConnectorRuntime[], rows: { connector: { id: string; createdAt: Date } }[]): void {
  const created = new Map(rows.map((r) => [r.connector.id, r.connector.createdAt.getTime()]));
  const taken = new Set<string>();
  const order = [...runtimes].sort((a, b) => created.get(a.id)! - created.get(b.id)! || (a.id < b.id ? -1 : 1));
  for (const runtime of order) {
    const base = sanitizeName(runtime.name).replace(/_+/g, '_').replace(/^_|_$/g, '').slice(0, 48) || 'connector';
    let host = base;
    for (let n = 2; taken.has(host); n++) host = `${base}_${n}`;
    taken.add(host);
    runtime.resourceHost = host;
  }
}

/** A stored policy as calls use it: its key, and the org's mask key when a column is hashed. */
function preparePolicy(deps: CatalogDeps, orgId: string, policy: ToolPolicy): Omit<CallPolicy, 'caller'> {
  const hashed = policy.masked_columns.some((m) => m.mask === 'hash');
  return { policy, key: policyKey(policy), maskKey: hashed ? deps.box.derive(`toolgate mask key v1:${orgId}`) : null };
}

/** A table tool's description listing only what the caller may see (hidden columns left out, masked ones marked). */
function policyDescription(spec: ToolSpec, policy: ToolPolicy): string {
  const target = spec.target as Partial<SqlTarget> | undefined;
  if (!Array.isArray(target?.columns)) return spec.description;
  const before = `(columns: ${columnList(target.columns.map((c) => `${c.name} ${c.type}`))})`;
  const after = `(columns: ${columnList(describedColumns(target.columns, policy))})`;
  const rows = policy.row_filter === null ? '' : ' Rows are limited to those this caller may see.';
  return `${spec.description.replace(before, after)}${rows}`;
}

/** Per-instance cache keyed by org; a changed catalog_version (bumped in the shared store) rebuilds it. */
export class CatalogCache {
  private readonly entries = new Map<string, Promise<OrgCatalog>>();

  constructor(private readonly deps: CatalogDeps) {}

  async get(orgId: string, version: number): Promise<OrgCatalog> {
    const cached = this.entries.get(orgId);
    if (cached) {
      const catalog = await cached.catch(() => null);
      if (catalog && catalog.version === version) return catalog;
    }
    const building = buildCatalog(this.deps, orgId, version);
    this.entries.set(orgId, building);
    building.catch(() => this.entries.delete(orgId));
    return building;
  }
}
