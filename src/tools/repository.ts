/** SQL of the tools/ folder: the catalog's read, the per-tool settings (tools joined with their connectors) and saved tools. */
import { and, asc, desc, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { servedToolOf } from '../connectors/repository.ts';
import type { Queryable } from '../store/db.ts';
import { approvals, connectors, savedToolVersions, tools } from '../store/schema.ts';

type ToolRow = typeof tools.$inferSelect;
type ConnectorRow = typeof connectors.$inferSelect;

/** A tool with the connector it belongs to: what the settings list and update return (handlers/views.ts shapes it). */
export type ToolSettingsRow = { tool: ToolRow; connector: { id: string; name: string; type: string; description: string | null } };
/** Columns a tool's settings update may set. */
export type ToolChanges = Partial<typeof tools.$inferInsert>;

/** The org's served tools (not withdrawn, decision 0405) of serving, live connectors, each with its connector: the catalog's one read per version. */
export async function catalogRows(db: Queryable, orgId: string): Promise<{ tool: ToolRow; connector: ConnectorRow }[]> {
  return db.select({ tool: tools, connector: connectors }).from(tools).innerJoin(connectors, eq(connectors.id, tools.connectorId)).where(servedToolOf(orgId));
}

/**
 * The org's tools with their connector, optionally of one connector or one tool, by base name then id. Withdrawn rows
 * are not tools to anyone (decision 0405): not listed, and an id of one is "no such tool".
 */
export async function toolSettingsRows(db: Queryable, orgId: string, filter: { connectorId?: string; toolId?: string } = {}): Promise<ToolSettingsRow[]> {
  const where = [eq(tools.orgId, orgId), isNull(tools.withdrawnAt), eq(connectors.orgId, orgId)];
  if (filter.connectorId) where.push(eq(tools.connectorId, filter.connectorId));
  if (filter.toolId) where.push(eq(tools.id, filter.toolId));
  return db
    .select({ tool: tools, connector: { id: connectors.id, name: connectors.name, type: connectors.type, description: connectors.description } })
    .from(tools)
    .innerJoin(connectors, eq(connectors.id, tools.connectorId))
    .where(and(...where))
    .orderBy(asc(tools.baseName), asc(tools.id));
}

/** Sets a served tool's columns; false when there is none (withdrawn since it was read: decision 0405). */
export async function updateToolRow(db: Queryable, orgId: string, toolId: string, changes: ToolChanges): Promise<boolean> {
  const rows = await db
    .update(tools)
    .set(changes)
    .where(and(eq(tools.id, toolId), eq(tools.orgId, orgId), isNull(tools.withdrawnAt)))
    .returning({ id: tools.id });
  return rows.length === 1;
}

/** Sets `enabled` on these served tools of the org (one statement, for a bulk change); how many it set. */
export async function setToolsEnabled(db: Queryable, orgId: string, toolIds: string[], enabled: boolean): Promise<number> {
  const rows = await db
    .update(tools)
    .set({ enabled, updatedAt: new Date() })
    .where(and(eq(tools.orgId, orgId), inArray(tools.id, toolIds), isNull(tools.withdrawnAt)))
    .returning({ id: tools.id });
  return rows.length;
}

type VersionRow = typeof savedToolVersions.$inferSelect;

/**
 * A connector's served table tools (not saved tools, nor the schema tool or upstream items of decisions 0313, 0315,
 * nor withdrawn rows: decision 0405), with their policies: the tables a saved statement may use.
 */
export async function sourceToolSpecs(
  db: Queryable,
  orgId: string,
  connectorId: string,
): Promise<{ spec: Record<string, unknown>; policy: Record<string, unknown> | null }[]> {
  return db
    .select({ spec: tools.spec, policy: tools.policy })
    .from(tools)
    .where(and(eq(tools.orgId, orgId), eq(tools.connectorId, connectorId), isNull(tools.savedVersion), isNull(tools.withdrawnAt), eq(tools.kind, 'tool')))
    .orderBy(asc(tools.baseName));
}

/** The policy of the table tool row of `schema.table` on a connector (decision 0292: the table's policy); null: none. */
export async function tablePolicyOf(db: Queryable, orgId: string, connectorId: string, schema: string, table: string): Promise<Record<string, unknown> | null> {
  const [row] = await db
    .select({ policy: tools.policy })
    .from(tools)
    .where(
      and(
        eq(tools.orgId, orgId),
        eq(tools.connectorId, connectorId),
        isNull(tools.savedVersion),
        isNull(tools.withdrawnAt),
        sql`${tools.spec}->'target'->>'schema' = ${schema}`,
        sql`${tools.spec}->'target'->>'table' = ${table}`,
      ),
    );
  return row?.policy ?? null;
}

/** A connector's saved-statement tools (or one of them), by name. */
export async function savedToolRows(db: Queryable, orgId: string, connectorId: string, toolId?: string): Promise<ToolRow[]> {
  const where = [eq(tools.orgId, orgId), eq(tools.connectorId, connectorId), isNotNull(tools.savedVersion)];
  if (toolId) where.push(eq(tools.id, toolId));
  return db
    .select()
    .from(tools)
    .where(and(...where))
    .orderBy(asc(tools.baseName));
}

/**
 * Every tool name agents see in the org (base names and overrides of served tools), except those of one tool
 * (resources and prompts are other lists). A withdrawn row's override is released by releaseWithdrawnOverride when an
 * admin claims its name.
 */
export async function takenToolNames(db: Queryable, orgId: string, exceptToolId?: string): Promise<Set<string>> {
  const rows = await db
    .select({ id: tools.id, baseName: tools.baseName, override: tools.toolNameOverride })
    .from(tools)
    .where(and(eq(tools.orgId, orgId), isNull(tools.withdrawnAt), inArray(tools.kind, ['tool', 'schema'])));
  const taken = new Set<string>();
  for (const r of rows) {
    if (r.id === exceptToolId) continue;
    taken.add(r.baseName);
    if (r.override) taken.add(r.override);
  }
  return taken;
}

/**
 * Clears the override `name` on the org's withdrawn rows (decision 0405): an override stays reserved while its row is
 * withdrawn, until an admin gives the name to another tool. Returns the ids of the rows that lost it.
 * `kinds`: only rows of these kinds (a saved tool's name clashes with tools and schema tools alone).
 */
export async function releaseWithdrawnOverride(db: Queryable, orgId: string, name: string, kinds?: ToolRow['kind'][]): Promise<string[]> {
  const where = [eq(tools.orgId, orgId), eq(tools.toolNameOverride, name), isNotNull(tools.withdrawnAt)];
  if (kinds) where.push(inArray(tools.kind, kinds));
  const rows = await db
    .update(tools)
    .set({ toolNameOverride: null, updatedAt: new Date() })
    .where(and(...where))
    .returning({ id: tools.id });
  return rows.map((r) => r.id);
}

export async function insertSavedTool(db: Queryable, row: typeof tools.$inferInsert): Promise<ToolRow> {
  const [created] = await db.insert(tools).values(row).returning();
  return created!;
}

/** Replaces a saved tool's definition when it is still at `fromVersion` (a concurrent change wins once); false otherwise. */
export async function replaceSavedTool(db: Queryable, orgId: string, toolId: string, fromVersion: number, changes: ToolChanges): Promise<boolean> {
  const rows = await db
    .update(tools)
    .set(changes)
    .where(and(eq(tools.id, toolId), eq(tools.orgId, orgId), eq(tools.savedVersion, fromVersion)))
    .returning({ id: tools.id });
  return rows.length === 1;
}

export async function deleteSavedToolRow(db: Queryable, orgId: string, toolId: string): Promise<void> {
  await db.delete(tools).where(and(eq(tools.id, toolId), eq(tools.orgId, orgId), isNotNull(tools.savedVersion)));
  await db
    .update(savedToolVersions)
    .set({ deletedAt: new Date() })
    .where(and(eq(savedToolVersions.toolId, toolId), eq(savedToolVersions.orgId, orgId)));
}

export async function insertSavedVersion(db: Queryable, row: typeof savedToolVersions.$inferInsert): Promise<void> {
  await db.insert(savedToolVersions).values(row);
}

/** Every stored version of a saved tool, newest first (also after the tool was deleted). */
export async function savedVersionRows(db: Queryable, orgId: string, connectorId: string, toolId: string): Promise<VersionRow[]> {
  return db
    .select()
    .from(savedToolVersions)
    .where(and(eq(savedToolVersions.orgId, orgId), eq(savedToolVersions.connectorId, connectorId), eq(savedToolVersions.toolId, toolId)))
    .orderBy(desc(savedToolVersions.version));
}

/**
 * Ends the pending approvals of a saved tool whose statement changed or that was deleted: an approver would approve
 * arguments for a statement that no longer runs. Returns how many were ended.
 */
export async function expireHeldCallsOfTool(db: Queryable, orgId: string, toolId: string, reason: string): Promise<number> {
  const ended = await db
    .update(approvals)
    .set({ status: 'expired', statusReason: reason, completedAt: new Date() })
    .where(and(eq(approvals.orgId, orgId), eq(approvals.toolId, toolId), eq(approvals.status, 'pending')))
    .returning({ id: approvals.id });
  return ended.length;
}

/** The org's naming lock for the rest of the transaction: the same one introspection's naming pass takes. */
export async function lockOrgNaming(db: Queryable, orgId: string): Promise<void> {
  await db.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${orgId}))`);
}
