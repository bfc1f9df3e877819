/** SQL of the tools/ folder: the catalog's read and the per-tool settings (tools joined with their connectors). */
import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import { SERVING_STATUSES } from '../connectors/repository.ts';
import type { Queryable } from '../store/db.ts';
import { connectors, tools } from '../store/schema.ts';

type ToolRow = typeof tools.$inferSelect;
type ConnectorRow = typeof connectors.$inferSelect;

/** A tool with the connector it belongs to: what the settings list and update return (handlers/views.ts shapes it). */
export type ToolSettingsRow = { tool: ToolRow; connector: { id: string; name: string; type: string } };
/** Columns a tool's settings update may set. */
export type ToolChanges = Partial<typeof tools.$inferInsert>;

/** The org's tools of serving, live connectors, each with its connector: the catalog's one read per version. */
export async function catalogRows(db: Queryable, orgId: string): Promise<{ tool: ToolRow; connector: ConnectorRow }[]> {
  return db
    .select({ tool: tools, connector: connectors })
    .from(tools)
    .innerJoin(connectors, eq(connectors.id, tools.connectorId))
    .where(and(eq(tools.orgId, orgId), eq(connectors.orgId, orgId), inArray(connectors.status, SERVING_STATUSES), isNull(connectors.archivedAt)));
}

/** The org's tools with their connector, optionally of one connector or one tool, by base name then id. */
export async function toolSettingsRows(db: Queryable, orgId: string, filter: { connectorId?: string; toolId?: string } = {}): Promise<ToolSettingsRow[]> {
  const where = [eq(tools.orgId, orgId), eq(connectors.orgId, orgId)];
  if (filter.connectorId) where.push(eq(tools.connectorId, filter.connectorId));
  if (filter.toolId) where.push(eq(tools.id, filter.toolId));
  return db
    .select({ tool: tools, connector: { id: connectors.id, name: connectors.name, type: connectors.type } })
    .from(tools)
    .innerJoin(connectors, eq(connectors.id, tools.connectorId))
    .where(and(...where))
    .orderBy(asc(tools.baseName), asc(tools.id));
}

export async function updateToolRow(db: Queryable, orgId: string, toolId: string, changes: ToolChanges): Promise<void> {
  await db
    .update(tools)
    .set(changes)
    .where(and(eq(tools.id, toolId), eq(tools.orgId, orgId)));
}
