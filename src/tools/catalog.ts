/** The org's tool catalog as the MCP endpoint sees it: built once per catalog version, with validators compiled once. */
import Ajv, { type ValidateFunction } from 'ajv';
import { credentialContext } from '../connectors/repository.ts';
import type { ItemKind, SqlTarget, ToolSpec, CallPolicy, ToolPolicy } from '../connectors/types.ts';
import { sanitizeName } from '../connectors/shared/naming.ts';
import { describeTables, type DescribedTable, type TableSource as DescribedSource } from './schema.ts';
import { describedColumns, policyKey } from '../connectors/shared/policy.ts';
import { columnList } from '../connectors/shared/toolspec.ts';
import { applyTableFilter } from '../connectors/table-filter.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import { catalogRows } from './repository.ts';
import { singleToolName, singleToolSpec } from './layout.ts';
import { connectorTables, isCollection, isSqlTable, tableKey, type ConnectorTables, type TableSource } from './tables.ts';

interface ConnectorRuntime {
  id: string;
  type: string;
  /** The type's own config (its schema in the contract's ConnectorConfig oneOf); only its driver reads it. */
  config: unknown;
  credential: string | null;
  allowWrite: boolean;
  allowDdl: boolean;
  name: string;
  /** The host of the connector's resource URIs (`toolgate://<host>/...`): its name sanitised, unique in the org. */
  resourceHost: string;
  /** The connector's `single`-layout tool was built (once per catalog). */
  single?: boolean;
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
  /** A SQL connector's tables with their tool rows' governance (issue 38): every call of the connector carries them. */
  tables?: ConnectorTables;
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
  const compiled = new Map<string, ValidateFunction>();
  const sources = new Map<string, TableSource[]>();
  const described = new Map<string, DescribedSource[]>();
  for (const { tool, connector } of rows) {
    const policy = tool.policy === null ? null : preparePolicy(deps, orgId, tool.policy as unknown as ToolPolicy);
    // Every table tool row governs its table, listed or not (free_sql off, or a `single` layout): decision 0292.
    if (tool.savedVersion === null) addTableSource(sources, connector.id, tool, policy);
    if (tool.savedVersion === null && tool.kind === 'tool') addDescribed(described, connector.id, tool, policy);
    // free_sql off: the connector's table tools are not served (not listed, and a call to one finds no tool); in the
    // `single` layout the connector's one SQL tool serves them (decision 0299).
    if (tool.savedVersion === null && (!connector.freeSql || (singleLayout(connector) && isSqlTable((tool.spec as { target?: unknown }).target)))) continue;
    const runtime = runtimeOf(deps, runtimes, connector);
    const spec = tool.spec as unknown as ToolSpec;
    // A saved tool over a table the connector's filter now leaves out is not served either (decision 0303), from the
    // filter's change on; the table's row is withdrawn once the revalidation it starts has run (decision 0405).
    if (tool.savedVersion !== null && excludedTable(spec, connector)) continue;
    // One stored tool whose schema no longer compiles (stored before its checks existed) is left out, not the org's
    // whole catalog: every other tool stays callable.
    let validate: ValidateFunction;
    try {
      validate = compileShared(ajv, compiled, spec.inputSchema);
    } catch {
      continue;
    }
    const writable = !tool.readOnly && !policy && (connector.allowWrite || connector.allowDdl);
    list.push({
      id: tool.id,
      kind: tool.kind as ItemKind,
      name: tool.toolNameOverride ?? tool.baseName,
      description: withConnectorLine(tool.toolDescriptionOverride ?? (policy ? policyDescription(spec, policy.policy) : spec.description), connector),
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
  const tables = attachTables(list, sources, version);
  for (const { connector } of rows) {
    if (!singleLayout(connector) || !connector.freeSql || runtimes.get(connector.id)?.single) continue;
    const runtime = runtimeOf(deps, runtimes, connector);
    runtime.single = true;
    const own = tables.get(connector.id);
    if (own && !isSqlTable(own.list[0]?.target)) continue; // the `single` layout is for SQL tables only
    const tool = own && singleTool(runtime, connector, own, (schema) => compileShared(ajv, compiled, schema), list);
    if (tool) list.push(tool);
  }
  list.sort((a, b) => a.name.localeCompare(b.name));
  nameResourceHosts([...runtimes.values()], rows);
  const tools = list.filter((t) => t.kind === 'tool' || t.kind === 'schema');
  describeSchemas(tools, described);
  return { version, tools, byName: new Map(tools.map((t) => [t.name, t])), items: list.filter((t) => t.kind !== 'tool' && t.kind !== 'schema') };
}

/** A table tool row as its connector's schema tool describes it (listed or not: a `single` layout lists none). */
function addDescribed(described: Map<string, DescribedSource[]>, connectorId: string, tool: CatalogRow, policy: Omit<CallPolicy, 'caller'> | null): void {
  const list = described.get(connectorId) ?? [];
  described.set(connectorId, list);
  list.push({
    name: tool.toolNameOverride ?? tool.baseName,
    enabled: tool.enabled,
    target: (tool.spec as { target?: unknown }).target,
    policy: policy?.policy ?? null,
  });
}

/**
 * Each schema tool's description of its connector's tables (decision 0313). A table's `tool` is the tool that queries
 * it: its own when served, else the connector's `single`-layout tool.
 */
function describeSchemas(tools: CatalogTool[], described: Map<string, DescribedSource[]>): void {
  const served = new Set(tools.filter((t) => t.enabled).map((t) => t.name));
  for (const t of tools) {
    if (t.kind !== 'schema') continue;
    const single = tools.find((o) => o.connector === t.connector && o.id === t.connector.id);
    t.described = describeTables(described.get(t.connector.id) ?? []).map((d) => (served.has(d.tool) || !single ? d : { ...d, tool: single.name }));
  }
}

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

/**
 * Every tool description ends naming its connector, `Connector: <name> (<description>)` (the parenthesis only when
 * the connector has a description), so an agent can tell production from staging when two connectors serve the same
 * table (issue 38 item 5, docs/decisions/0305). Written at catalog build: a renamed connector renames it at once.
 */
export function withConnectorLine(text: string, connector: { name: string; description: string | null }): string {
  return `${text}\nConnector: ${connector.name}${connector.description ? ` (${connector.description})` : ''}`;
}

function excludedTable(spec: ToolSpec, connector: { includeTables: string[]; excludeTables: string[] }): boolean {
  return applyTableFilter([spec], { include: connector.includeTables, exclude: connector.excludeTables }).length === 0;
}

/** Keywords that only annotate a schema: they never change what validates (or which defaults Ajv fills in). */
const ANNOTATIONS = new Set(['description', 'title', 'examples', '$comment']);
/** Keywords whose value maps names to schemas: a key there is a property name, never an annotation. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not a schema: kept exactly (a `description` key inside a default is a value). */
const LITERALS = new Set(['default', 'const', 'enum']);

/** A schema's text without its annotations, keys in order: two schemas with the same shape validate alike. */
export function shapeOf(schema: unknown, map = false): string {
  if (Array.isArray(schema)) return `[${schema.map((s) => shapeOf(s)).join(',')}]`;
  if (schema === null || typeof schema !== 'object') return JSON.stringify(schema);
  const keys = Object.keys(schema)
    .filter((k) => map || !ANNOTATIONS.has(k))
    .sort();
  const value = (k: string) => (schema as Record<string, unknown>)[k];
  return `{${keys.map((k) => `${JSON.stringify(k)}:${!map && LITERALS.has(k) ? JSON.stringify(value(k)) : shapeOf(value(k), !map && SCHEMA_MAPS.has(k))}`).join(',')}}`;
}

/**
 * One compiled validator per schema shape in a catalog build: a 2,000-table connector's tools differ only in their
 * descriptions, so they share one function (compiling each took ~0.5 ms: a second per build at 2,000 tools).
 * A shared function is safe: its `errors` are read right after the call that set them.
 */
function compileShared(ajv: Ajv, compiled: Map<string, ValidateFunction>, schema: ToolSpec['inputSchema']): ValidateFunction {
  const shape = shapeOf(schema);
  let validate = compiled.get(shape);
  if (!validate) compiled.set(shape, (validate = ajv.compile(schema)));
  return validate;
}

type CatalogRow = Awaited<ReturnType<typeof catalogRows>>[number]['tool'];

function addTableSource(sources: Map<string, TableSource[]>, connectorId: string, tool: CatalogRow, policy: Omit<CallPolicy, 'caller'> | null): void {
  const target = (tool.spec as { target?: unknown }).target;
  if (!isSqlTable(target) && !isCollection(target)) return;
  const list = sources.get(connectorId) ?? [];
  sources.set(connectorId, list);
  list.push({
    toolId: tool.id,
    target,
    enabled: tool.enabled,
    policy,
    requiresApproval: tool.requiresApproval,
    approvalEmails: tool.approvalEmails,
    approvalTtlSeconds: tool.approvalTtlSeconds,
  });
}

/**
 * Gives every SQL tool its connector's tables. A saved tool has no policy of its own (decision 0292): the policy of
 * the table its statement reads is its policy, so saving a statement never widens what the table's policy allows.
 */
function attachTables(list: CatalogTool[], sources: Map<string, TableSource[]>, version: number): Map<string, ConnectorTables> {
  const tables = new Map([...sources].map(([id, rows]) => [id, connectorTables(`${version}:${id}`, rows)]));
  const unserved = new Set<CatalogTool>();
  for (const t of list) {
    const own = tables.get(t.connector.id);
    const target = t.spec.target as Partial<SqlTarget> & { database?: unknown; collection?: unknown };
    // A saved tool is served only while the table it reads has a served row: a withdrawn (or never written) row must
    // not leave it running ungoverned (decision 0405).
    if (target.saved && !savedTableServed(target, own)) {
      unserved.add(t);
      continue;
    }
    if (!own) continue;
    // A MongoDB tool, saved pipelines included: its `$lookup`s read the connector's collections (decision 0328).
    if (isSqlTable(target) || isCollection(target) || (target.saved && isCollection({ ...target, saved: undefined }))) t.tables = own;
    else if (target.saved && typeof target.table === 'string') {
      t.tables = own;
      t.policy = own.policies[own.indexOf.get(tableKey(target.schema ?? '', target.table))!] ?? null;
    }
  }
  if (unserved.size) list.splice(0, list.length, ...list.filter((t) => !unserved.has(t)));
  return tables;
}

/** Whether the table (or collection) a saved tool reads is one of its connector's served tables. */
function savedTableServed(target: { schema?: unknown; table?: unknown; database?: unknown; collection?: unknown }, own: ConnectorTables | undefined): boolean {
  const schema = target.schema ?? target.database ?? '';
  const table = target.table ?? target.collection;
  return own !== undefined && typeof schema === 'string' && typeof table === 'string' && own.indexOf.has(tableKey(schema, table));
}

type CatalogConnector = Awaited<ReturnType<typeof catalogRows>>[number]['connector'];

const singleLayout = (connector: CatalogConnector): boolean => connector.toolLayout === 'single';

function runtimeOf(deps: CatalogDeps, runtimes: Map<string, ConnectorRuntime>, connector: CatalogConnector): ConnectorRuntime {
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
  return runtime;
}

/**
 * The `single` layout's one SQL tool (decision 0299): not a tools row; its id is the connector's (approvals name it),
 * it has no settings of its own, and every table it reads is governed by that table's row. It only reads. Its name
 * is `query_<connector name>`, or with the connector id's first characters when another tool has that name.
 */
function singleTool(
  runtime: ConnectorRuntime,
  connector: CatalogConnector,
  tables: ConnectorTables,
  compile: (schema: ToolSpec['inputSchema']) => ValidateFunction,
  list: CatalogTool[],
): CatalogTool | null {
  let name = singleToolName(connector.name);
  if (list.some((t) => t.name === name)) name = `${name.slice(0, 55)}_${connector.id.slice(0, 8)}`;
  const spec = singleToolSpec({ name: connector.name, type: connector.type }, tables, name);
  if (!spec) return null;
  return {
    id: connector.id,
    kind: 'tool',
    name,
    description: withConnectorLine(spec.description, connector),
    inputSchema: spec.inputSchema,
    outputSchema: spec.outputSchema,
    annotations: spec.annotations!,
    enabled: true,
    readOnly: true,
    requiresApproval: false,
    approvalTtlSeconds: 3600,
    approvalEmails: [],
    connector: runtime,
    spec,
    validate: compile(spec.inputSchema),
    // The policy of the table it names (its target), as a table tool carries its own; the others' come with ctx.tables.
    policy: tables.policies[tables.indexOf.get(tableKey(spec.target.schema, spec.target.table))!] ?? null,
    tables,
  };
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
