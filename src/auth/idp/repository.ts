/** SQL of the org's identity-provider configuration (idp_configs): one row per org. */
import { and, eq, inArray } from 'drizzle-orm';
import type { Queryable } from '../../store/db.ts';
import { idpConfigs } from '../../store/schema.ts';

export type IdpConfigRow = typeof idpConfigs.$inferSelect;
export type IdpConfigValues = typeof idpConfigs.$inferInsert;

export async function findIdpConfig(db: Queryable, orgId: string): Promise<IdpConfigRow | undefined> {
  const [row] = await db.select().from(idpConfigs).where(eq(idpConfigs.orgId, orgId));
  return row;
}

/** The configurations of this issuer for any of these audiences ((issuer, audience) is unique across orgs). */
export async function findIdpConfigsByIssuer(db: Queryable, issuer: string, audiences: string[]): Promise<IdpConfigRow[]> {
  return db
    .select()
    .from(idpConfigs)
    .where(and(eq(idpConfigs.issuer, issuer), inArray(idpConfigs.audience, audiences)));
}

/** Inserts or replaces the org's configuration; a unique (issuer, audience) held by another org fails with 23505. */
export async function upsertIdpConfig(db: Queryable, values: IdpConfigValues): Promise<IdpConfigRow> {
  const [saved] = await db.insert(idpConfigs).values(values).onConflictDoUpdate({ target: idpConfigs.orgId, set: values }).returning();
  return saved!;
}

export async function deleteIdpConfig(db: Queryable, orgId: string): Promise<boolean> {
  const rows = await db.delete(idpConfigs).where(eq(idpConfigs.orgId, orgId)).returning({ orgId: idpConfigs.orgId });
  return rows.length > 0;
}
