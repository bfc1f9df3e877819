/** SQL of connectors and the tools they yield; every query is scoped by org. */
import { and, asc, count, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { connectors, orgs, tools } from '../store/schema.ts';
import type { SkippedTool, ToolSpec } from './types.ts';
import { MAX_TOOL_NAME, sanitizeName } from './shared/naming.ts';
import { relationName } from './table-filter.ts';

export type ConnectorRow = typeof connectors.$inferSelect;
/** Columns a connector's update may set. */
export type ConnectorChanges = Partial<typeof connectors.$inferInsert>;

export async function insertConnector(db: Queryable, values: typeof connectors.$inferInsert): Promise<ConnectorRow> {
  const [row] = await db.insert(connectors).values(values).returning();
  return row!;
}

/** Sets columns of a connector row by id (the caller checked the org); the row as it is then. */
export async function updateConnectorRow(db: Queryable, id: string, changes: ConnectorChanges): Promise<ConnectorRow> {
  const [row] = await db.update(connectors).set(changes).where(eq(connectors.id, id)).returning();
  return row!;
}

/** The org's live (not archived) connector of this name, if any. */
export async function findLiveConnectorByName(db: Queryable, orgId: string, name: string): Promise<ConnectorRow | undefined> {
  const [row] = await db
    .select()
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), eq(connectors.name, name), isNull(connectors.archivedAt)));
  return row;
}

/** The context a connector's credential is sealed under (credentialSealed): a sealed value opens for its own row only. */
export function credentialContext(connectorId: string): string {
  return `connector_credential:${connectorId}`;
}

/**
 * Marks the org's catalog as changed so every instance reloads it on the next request. The version is a column of the
 * org row, but only connector and tool changes move it, so the query sits here, below connectors/ and tools/.
 */
export async function bumpCatalogVersion(db: Queryable, orgId: string): Promise<void> {
  await db
    .update(orgs)
    .set({ catalogVersion: sql`${orgs.catalogVersion} + 1` })
    .where(eq(orgs.id, orgId));
}

/**
 * A connector being revalidated keeps serving the tools it had: agents do not lose them while an admin
 * re-checks a working connector. A failed validation removes them.
 */
const SERVING_STATUSES = ['active', 'validating'];

/** The condition for a tools row joined with its connector: the org's served tool (not withdrawn, decision 0405) of a serving, live connector. */
export function servedToolOf(orgId: string) {
  return and(
    eq(tools.orgId, orgId),
    isNull(tools.withdrawnAt),
    eq(connectors.orgId, orgId),
    inArray(connectors.status, SERVING_STATUSES),
    isNull(connectors.archivedAt),
  );
}

export async function findConnector(db: Queryable, orgId: string, id: string): Promise<ConnectorRow | undefined> {
  const [row] = await db
    .select()
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), eq(connectors.id, id), isNull(connectors.archivedAt)));
  return row;
}

export async function listConnectors(db: Queryable, orgId: string, status?: string): Promise<ConnectorRow[]> {
  const where = [eq(connectors.orgId, orgId), isNull(connectors.archivedAt)];
  if (status) where.push(eq(connectors.status, status));
  return db
    .select()
    .from(connectors)
    .where(and(...where))
    .orderBy(asc(connectors.createdAt), asc(connectors.id));
}

/** Tool rows written per INSERT by applyIntrospection. */
const INSERT_CHUNK = 500;

/** What introspection did to a connector's existing rows, for its audit row. */
export interface Introspected {
  /** Served rows whose name changed (their table kept them). */
  renamed: Rename[];
  /** Rows no longer served (table excluded or gone, upstream tool gone): withdrawn with their settings. */
  withdrawn: string[];
  /** Withdrawn rows served again, with every setting they had, by the name they now have. */
  returned: string[];
}

/**
 * Brings a connector's tools in line with the introspected set and records the source's tools that were skipped. A
 * table's row is matched by the table it reads (`schema.table`), so its settings follow it when its name changes (a
 * `_2` of an older naming renamed after the connector: decision 0305); a tool without a table (an upstream MCP
 * server's) by its kind and base name. A row no longer served is withdrawn, never deleted, and comes back with its
 * settings when its table does (decision 0405). Runs only when `generation` is still current, so a stale job never
 * wins (null).
 */
export async function applyIntrospection(
  db: Queryable,
  orgId: string,
  connector: { id: string; name: string },
  generation: number,
  specs: ToolSpec[],
  skipped: SkippedTool[] = [],
): Promise<Introspected | null> {
  const connectorId = connector.id;
  const [current] = await db
    .update(connectors)
    .set({ status: 'active', statusReason: null, skippedTools: skipped, updatedAt: new Date() })
    .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId), eq(connectors.validationGeneration, generation), isNull(connectors.archivedAt)))
    .returning({ id: connectors.id });
  if (!current) return null;
  // One naming pass per org at a time: two connectors validating together must not pick the same free name.
  await db.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${orgId}))`);
  specs = await avoidOrgCollisions(db, orgId, connector, specs);
  const matched = await matchExistingRows(db, orgId, connectorId, specs);
  // In chunks, not a statement per tool: a 2,000-table connector is 4 statements here, not 2,000.
  for (let i = 0; i < specs.length; i += INSERT_CHUNK) {
    await db
      .insert(tools)
      .values(
        specs
          .slice(i, i + INSERT_CHUNK)
          .map((spec) => ({ orgId, connectorId, kind: spec.kind ?? 'tool', baseName: spec.name, spec: spec as unknown as Record<string, unknown> })),
      )
      .onConflictDoUpdate({
        // Served rows only (tools_served_name): a withdrawn row holding this name belongs to another table and must
        // not lend it its settings; the new table gets a row of its own.
        target: [tools.connectorId, tools.kind, tools.baseName],
        targetWhere: isNull(tools.withdrawnAt),
        set: { spec: sql`excluded.spec`, updatedAt: new Date() },
        setWhere: isNull(tools.savedVersion),
      });
  }
  return matched;
}

/** A tool row whose base name changed at introspection (its table kept it). */
interface Rename {
  from: string;
  to: string;
}

/** The key a spec or row is matched by: its table for a table tool, else its kind and name. */
function matchKey(kind: string, target: unknown, name: string): string {
  const relation = kind === 'tool' ? relationName(target) : null;
  return relation !== null ? `table:${relation}` : `${kind}:${name}`;
}

/**
 * Brings the connector's source rows (not saved tools: those are the admin's) in line with the new specs: a row,
 * served or withdrawn, whose table (or, without one, kind and name) is in the specs takes the name its spec now has
 * and is served; the other served rows are withdrawn, keeping every setting. Renames go through a temporary name,
 * so two rows trading names never meet the unique index. Rows are deleted only with their connector (archive).
 */
async function matchExistingRows(db: Queryable, orgId: string, connectorId: string, specs: ToolSpec[]): Promise<Introspected> {
  const rows = await db
    .select({ id: tools.id, kind: tools.kind, baseName: tools.baseName, spec: tools.spec, withdrawnAt: tools.withdrawnAt })
    .from(tools)
    .where(and(eq(tools.connectorId, connectorId), eq(tools.orgId, orgId), isNull(tools.savedVersion)))
    // Served rows claim their table first; of withdrawn rows of one table (never expected) the latest withdrawn.
    .orderBy(sql`${tools.withdrawnAt} DESC NULLS FIRST`, asc(tools.createdAt), asc(tools.id));
  const wantedName = new Map<string, string>();
  for (const spec of specs) wantedName.set(matchKey(spec.kind ?? 'tool', spec.target, spec.name), spec.name);
  const claimed = new Set<string>();
  const withdraw: { id: string; name: string }[] = [];
  const moves: { id: string; from: string; to: string; back: boolean }[] = [];
  for (const row of rows) {
    const key = matchKey(row.kind, (row.spec as { target?: unknown }).target, row.baseName);
    const wanted = wantedName.get(key);
    if (wanted === undefined || claimed.has(key)) {
      if (row.withdrawnAt === null) withdraw.push({ id: row.id, name: row.baseName });
      continue;
    }
    claimed.add(key);
    const back = row.withdrawnAt !== null;
    if (back || wanted !== row.baseName) moves.push({ id: row.id, from: row.baseName, to: wanted, back });
  }
  // Withdrawn rows keep their names, which the served-name index no longer counts: the names are free at once.
  if (withdraw.length) {
    await db
      .update(tools)
      .set({ withdrawnAt: new Date(), updatedAt: new Date() })
      .where(
        and(
          eq(tools.orgId, orgId),
          inArray(
            tools.id,
            withdraw.map((w) => w.id),
          ),
        ),
      );
  }
  for (const m of moves)
    await db
      .update(tools)
      .set({ baseName: `~${m.id}`, withdrawnAt: null })
      .where(eq(tools.id, m.id));
  for (const m of moves) await db.update(tools).set({ baseName: m.to, updatedAt: new Date() }).where(eq(tools.id, m.id));
  return {
    renamed: moves.filter((m) => !m.back).map(({ from, to }) => ({ from, to })),
    withdrawn: withdraw.map((w) => w.name).sort(),
    returned: moves
      .filter((m) => m.back)
      .map((m) => m.to)
      .sort(),
  };
}

/**
 * The name a connector's tool takes when another connector already has its name (two databases with an `invoices`
 * table): derived from the connector's name, `query_<connector>_<table>` for a table tool (`<name>_<connector>`
 * otherwise), so an agent can tell them apart; never a bare `_2` (decision 0305). When the connector's name gives
 * nothing new (it sanitises to the type, or two connectors sanitise alike) the connector's id prefix is added.
 */
function derivedNames(spec: ToolSpec, type: string, connector: { id: string; name: string }): string[] {
  const owner = sanitizeName(connector.name).replace(/_+/g, '_').replace(/^_|_$/g, '') || 'connector';
  const short = connector.id.replace(/-/g, '').slice(0, 6);
  const prefix = `query_${sanitizeName(type)}_`;
  const fit = (head: string, tail: string) => `${head.slice(0, Math.max(8, MAX_TOOL_NAME - tail.length))}${tail}`.slice(0, MAX_TOOL_NAME);
  if (spec.name.startsWith(prefix)) {
    const table = spec.name.slice(prefix.length);
    return [fit(`query_${owner}`, `_${table}`), fit(`query_${owner}_${short}`, `_${table}`)];
  }
  return [fit(spec.name, `_${owner}`), fit(spec.name, `_${owner}_${short}`)];
}

/**
 * Tool names are unique per org: when another connector already has a tool of the same name, this connector's tool
 * takes a name derived from the connector's (derivedNames). The first connector keeps the plain name, so names stay
 * stable as connectors are added.
 */
async function avoidOrgCollisions(db: Queryable, orgId: string, connector: { id: string; name: string }, specs: ToolSpec[]): Promise<ToolSpec[]> {
  const connectorId = connector.id;
  const existing = await db
    .select({
      connectorId: tools.connectorId,
      kind: tools.kind,
      baseName: tools.baseName,
      override: tools.toolNameOverride,
      saved: tools.savedVersion,
      withdrawn: tools.withdrawnAt,
    })
    .from(tools)
    .where(eq(tools.orgId, orgId));
  const [own] = await db.select({ type: connectors.type }).from(connectors).where(eq(connectors.id, connectorId));
  // Names are unique per list: tools and schema tools share tools/list; resources, templates and prompts have their own.
  const taken = new Set<string>();
  for (const o of existing) {
    const ns = namespaceOf(o.kind);
    // A withdrawn row's base name is free (decision 0405); its override, an admin's choice, stays reserved for its return.
    if (o.withdrawn !== null) {
      if (o.override) taken.add(`${ns}:${o.override}`);
      continue;
    }
    // A saved tool of this connector keeps its name too: a table named like it gets a derived name.
    if (o.connectorId !== connectorId || o.saved !== null) taken.add(`${ns}:${o.baseName}`);
    // An override is taken for every other tool, this connector's new tables included (a table added later must
    // not get the name agents already use for another tool); an override equal to its own base name is no clash.
    if (o.override && !(o.connectorId === connectorId && o.override === o.baseName)) taken.add(`${ns}:${o.override}`);
  }
  taken.add('tool:check_approval_status');
  const mine = new Set(specs.map((s) => `${namespaceOf(s.kind)}:${s.name}`));
  return specs.map((spec) => {
    const ns = namespaceOf(spec.kind);
    const free = (name: string) => !taken.has(`${ns}:${name}`) && !mine.has(`${ns}:${name}`);
    if (!taken.has(`${ns}:${spec.name}`)) {
      taken.add(`${ns}:${spec.name}`);
      return spec;
    }
    const candidates = derivedNames(spec, own?.type ?? '', connector);
    let name = candidates.find(free);
    for (let n = 2; name === undefined; n++) {
      const suffix = `_${n}`;
      const candidate = candidates[0]!.slice(0, MAX_TOOL_NAME - suffix.length) + suffix;
      if (free(candidate)) name = candidate;
    }
    taken.add(`${ns}:${name}`);
    return { ...spec, name };
  });
}

/** The list a kind's names appear in (schema tools are tools to an agent). */
const namespaceOf = (kind: string | undefined): string => (kind === undefined || kind === 'schema' ? 'tool' : kind);

export async function markFailed(db: Queryable, orgId: string, connectorId: string, generation: number, reason: string): Promise<boolean> {
  const [row] = await db
    .update(connectors)
    .set({ status: 'failed', statusReason: reason.slice(0, 500), skippedTools: [], updatedAt: new Date() })
    .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId), eq(connectors.validationGeneration, generation), isNull(connectors.archivedAt)))
    .returning({ id: connectors.id });
  return row !== undefined;
}

/** Moves a connector to validating and returns the new generation that its job must present. */
export async function startValidation(db: Queryable, orgId: string, connectorId: string): Promise<ConnectorRow | undefined> {
  const [row] = await db
    .update(connectors)
    .set({ status: 'validating', statusReason: null, validationGeneration: sql`${connectors.validationGeneration} + 1`, updatedAt: new Date() })
    .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId), isNull(connectors.archivedAt)))
    .returning();
  return row;
}

export async function archive(db: Queryable, orgId: string, connectorId: string): Promise<boolean> {
  const [row] = await db
    .update(connectors)
    .set({ archivedAt: new Date(), updatedAt: new Date() })
    .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId), isNull(connectors.archivedAt)))
    .returning({ id: connectors.id });
  if (!row) return false;
  // An archived connector's rows go, withdrawn ones too: archiving is the one way a source row is deleted.
  await db.delete(tools).where(and(eq(tools.connectorId, connectorId), eq(tools.orgId, orgId)));
  return true;
}

export async function liveConnectorIds(db: Queryable, orgId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await db
    .select({ id: connectors.id })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), inArray(connectors.id, ids), isNull(connectors.archivedAt)));
  return rows.map((r) => r.id);
}

/** Served tools (not withdrawn) of the org's connectors that serve them (active or validating, not archived): the size of its catalog. */
export async function countServingTools(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(tools).innerJoin(connectors, eq(connectors.id, tools.connectorId)).where(servedToolOf(orgId));
  return Number(row?.n ?? 0);
}
