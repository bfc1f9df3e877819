/** SQL of the gateway's per-org authorization server: clients, grants, codes, refresh tokens and the org's settings. */
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { Queryable } from '../../store/db.ts';
import { connectors } from '../../store/schema.ts';

/** The org's connectors that scopes may name (archived ones are gone from the endpoint, so from the scopes too). */
export async function activeConnectors(db: Queryable, orgId: string): Promise<Array<{ id: string; name: string }>> {
  return db
    .select({ id: connectors.id, name: connectors.name })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), isNull(connectors.archivedAt)))
    .orderBy(asc(connectors.name));
}
