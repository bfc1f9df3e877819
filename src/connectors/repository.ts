/** SQL of connectors and the tools they yield; every query is scoped by org. */
import { and, asc, count, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { connectors, orgs, tools } from '../store/schema.ts';
import type { SkippedTool, ToolSpec } from './types.ts';

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
export const SERVING_STATUSES = ['active', 'validating'];

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

/**
 * Replaces a connector's tools with the introspected set, keeping the settings of tools that still exist
 * (matched by base name), and records the source's tools that were skipped. Runs only when `generation` is still
 * current, so a stale job never wins.
 */
export async function applyIntrospection(
  db: Queryable,
  orgId: string,
  connectorId: string,
  generation: number,
  specs: ToolSpec[],
  skipped: SkippedTool[] = [],
): Promise<boolean> {
  const [current] = await db
    .update(connectors)
    .set({ status: 'active', statusReason: null, skippedTools: skipped, updatedAt: new Date() })
    .where(and(eq(connectors.id, connectorId), eq(connectors.orgId, orgId), eq(connectors.validationGeneration, generation), isNull(connectors.archivedAt)))
    .returning({ id: connectors.id });
  if (!current) return false;
  // One naming pass per org at a time: two connectors validating together must not pick the same free name.
  await db.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${orgId}))`);
  specs = await avoidOrgCollisions(db, orgId, connectorId, specs);
  const keys = specs.map((s) => `${s.kind ?? 'tool'}:${s.name}`);
  // Saved-statement tools are the admin's, not the source's: introspection never replaces them.
  await db
    .delete(tools)
    .where(
      and(
        eq(tools.connectorId, connectorId),
        eq(tools.orgId, orgId),
        isNull(tools.savedVersion),
        ...(keys.length ? [notInArray(sql`${tools.kind} || ':' || ${tools.baseName}`, keys)] : []),
      ),
    );
  for (const spec of specs) {
    await db
      .insert(tools)
      .values({ orgId, connectorId, kind: spec.kind ?? 'tool', baseName: spec.name, spec: spec as unknown as Record<string, unknown> })
      .onConflictDoUpdate({
        target: [tools.connectorId, tools.kind, tools.baseName],
        set: { spec: spec as unknown as Record<string, unknown>, updatedAt: new Date() },
        setWhere: isNull(tools.savedVersion),
      });
  }
  return true;
}

/**
 * Tool names are unique per org: when another connector already has a tool of the same name (two databases
 * with a `users` table), this connector's tool takes the next free `_2`, `_3`... suffix. The first connector
 * keeps the plain name, so names stay stable as connectors are added.
 */
async function avoidOrgCollisions(db: Queryable, orgId: string, connectorId: string, specs: ToolSpec[]): Promise<ToolSpec[]> {
  const existing = await db
    .select({ connectorId: tools.connectorId, kind: tools.kind, baseName: tools.baseName, override: tools.toolNameOverride, saved: tools.savedVersion })
    .from(tools)
    .where(eq(tools.orgId, orgId));
  // Names are unique per namespace: tools and schema tools share tools/list; resources and prompts have their own lists.
  const taken = new Set<string>();
  for (const o of existing) {
    const ns = namespaceOf(o.kind);
    // A saved tool of this connector keeps its name too: a table named like it gets a suffixed name.
    if (o.connectorId !== connectorId || o.saved !== null) taken.add(`${ns}:${o.baseName}`);
    // An override is taken for every other tool, this connector's new tables included (a table added later must
    // not get the name agents already use for another tool); an override equal to its own base name is no clash.
    if (o.override && !(o.connectorId === connectorId && o.override === o.baseName)) taken.add(`${ns}:${o.override}`);
  }
  taken.add('tool:check_approval_status');
  const own = new Set(specs.map((s) => `${namespaceOf(s.kind)}:${s.name}`));
  return specs.map((spec) => {
    const ns = namespaceOf(spec.kind);
    if (!taken.has(`${ns}:${spec.name}`)) {
      taken.add(`${ns}:${spec.name}`);
      return spec;
    }
    for (let n = 2; ; n++) {
      const suffix = `_${n}`;
      const candidate = spec.name.slice(0, 64 - suffix.length) + suffix;
      if (!taken.has(`${ns}:${candidate}`) && !own.has(`${ns}:${candidate}`)) {
        taken.add(`${ns}:${candidate}`);
        return { ...spec, name: candidate };
      }
    }
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

/** Tools of the org's connectors that serve them (active or validating, not archived): the size of its catalog. */
export async function countServingTools(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(tools)
    .innerJoin(connectors, eq(connectors.id, tools.connectorId))
    .where(and(eq(tools.orgId, orgId), eq(connectors.orgId, orgId), inArray(connectors.status, SERVING_STATUSES), isNull(connectors.archivedAt)));
  return Number(row?.n ?? 0);
}
