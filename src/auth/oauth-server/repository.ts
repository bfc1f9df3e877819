/** SQL of the gateway's per-org authorization server: clients, grants, codes, refresh tokens and the org's settings. */
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Queryable } from '../../store/db.ts';
import { connectors, mcpOauthClients, mcpOauthCodes, mcpOauthGrants, mcpOauthRefreshTokens, mcpOauthSettings } from '../../store/schema.ts';

export type GrantRow = typeof mcpOauthGrants.$inferSelect;
export type RegisteredClientRow = typeof mcpOauthClients.$inferSelect;

/** The org's connectors that scopes may name (archived ones are gone from the endpoint, so from the scopes too). */
export async function activeConnectors(db: Queryable, orgId: string): Promise<Array<{ id: string; name: string }>> {
  return db
    .select({ id: connectors.id, name: connectors.name })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), isNull(connectors.archivedAt)))
    .orderBy(asc(connectors.name));
}

/** Whether the org accepts dynamic client registration (on unless an admin switched it off). */
export async function registrationEnabled(db: Queryable, orgId: string): Promise<boolean> {
  const [row] = await db.select({ on: mcpOauthSettings.registrationEnabled }).from(mcpOauthSettings).where(eq(mcpOauthSettings.orgId, orgId));
  return row?.on ?? true;
}

export async function setRegistrationEnabled(db: Queryable, orgId: string, enabled: boolean): Promise<void> {
  await db
    .insert(mcpOauthSettings)
    .values({ orgId, registrationEnabled: enabled })
    .onConflictDoUpdate({ target: mcpOauthSettings.orgId, set: { registrationEnabled: enabled, updatedAt: new Date() } });
}

export async function findRegisteredClient(db: Queryable, orgId: string, clientId: string): Promise<RegisteredClientRow | undefined> {
  const [row] = await db
    .select()
    .from(mcpOauthClients)
    .where(and(eq(mcpOauthClients.orgId, orgId), eq(mcpOauthClients.clientId, clientId)));
  return row;
}

export async function countActiveRegisteredClients(db: Queryable, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(mcpOauthClients)
    .where(and(eq(mcpOauthClients.orgId, orgId), eq(mcpOauthClients.kind, 'registered'), isNull(mcpOauthClients.revokedAt)));
  return row?.n ?? 0;
}

export async function insertRegisteredClient(db: Queryable, values: typeof mcpOauthClients.$inferInsert): Promise<RegisteredClientRow> {
  const [row] = await db.insert(mcpOauthClients).values(values).returning();
  return row!;
}

export async function listRegisteredClients(db: Queryable, orgId: string): Promise<RegisteredClientRow[]> {
  return db.select().from(mcpOauthClients).where(eq(mcpOauthClients.orgId, orgId)).orderBy(desc(mcpOauthClients.createdAt));
}

/** Revokes a registered client and every grant it holds; false when the org has no such active client. */
export async function revokeRegisteredClient(db: Queryable, orgId: string, clientId: string): Promise<RegisteredClientRow | undefined> {
  const [row] = await db
    .update(mcpOauthClients)
    .set({ revokedAt: new Date() })
    .where(and(eq(mcpOauthClients.orgId, orgId), eq(mcpOauthClients.clientId, clientId), isNull(mcpOauthClients.revokedAt)))
    .returning();
  if (row) {
    await db
      .update(mcpOauthGrants)
      .set({ revokedAt: new Date(), revokedReason: 'client_revoked' })
      .where(and(eq(mcpOauthGrants.orgId, orgId), eq(mcpOauthGrants.clientId, clientId), isNull(mcpOauthGrants.revokedAt)));
  }
  return row;
}

export async function insertGrant(db: Queryable, values: typeof mcpOauthGrants.$inferInsert): Promise<GrantRow> {
  const [row] = await db.insert(mcpOauthGrants).values(values).returning();
  return row!;
}

export async function findGrant(db: Queryable, grantId: string): Promise<GrantRow | undefined> {
  const [row] = await db.select().from(mcpOauthGrants).where(eq(mcpOauthGrants.id, grantId));
  return row;
}

export async function listGrants(db: Queryable, orgId: string): Promise<GrantRow[]> {
  return db.select().from(mcpOauthGrants).where(eq(mcpOauthGrants.orgId, orgId)).orderBy(desc(mcpOauthGrants.createdAt)).limit(1000);
}

/** Revokes a grant (the family of its codes and refresh tokens); returns it when it was active. */
export async function revokeGrant(db: Queryable, grantId: string, reason: string, orgId?: string): Promise<GrantRow | undefined> {
  const where = [eq(mcpOauthGrants.id, grantId), isNull(mcpOauthGrants.revokedAt)];
  if (orgId) where.push(eq(mcpOauthGrants.orgId, orgId));
  const [row] = await db
    .update(mcpOauthGrants)
    .set({ revokedAt: new Date(), revokedReason: reason })
    .where(and(...where))
    .returning();
  return row;
}

export async function touchGrant(db: Queryable, grantId: string): Promise<void> {
  await db.update(mcpOauthGrants).set({ lastUsedAt: new Date() }).where(eq(mcpOauthGrants.id, grantId));
}

export async function insertCode(db: Queryable, values: typeof mcpOauthCodes.$inferInsert): Promise<void> {
  await db.insert(mcpOauthCodes).values(values);
}

export async function findCode(db: Queryable, codeHash: string) {
  const [row] = await db.select().from(mcpOauthCodes).where(eq(mcpOauthCodes.codeHash, codeHash));
  return row;
}

/** Marks a code used; false when it already was (the one request that flips it wins). */
export async function useCode(db: Queryable, codeHash: string): Promise<boolean> {
  const rows = await db
    .update(mcpOauthCodes)
    .set({ usedAt: new Date() })
    .where(and(eq(mcpOauthCodes.codeHash, codeHash), isNull(mcpOauthCodes.usedAt)))
    .returning({ h: mcpOauthCodes.codeHash });
  return rows.length === 1;
}

export async function insertRefreshToken(db: Queryable, values: typeof mcpOauthRefreshTokens.$inferInsert): Promise<void> {
  await db.insert(mcpOauthRefreshTokens).values(values);
}

export async function findRefreshToken(db: Queryable, tokenHash: string) {
  const [row] = await db.select().from(mcpOauthRefreshTokens).where(eq(mcpOauthRefreshTokens.tokenHash, tokenHash));
  return row;
}

/** Marks a refresh token used (rotated); false when it already was: a reuse. */
export async function useRefreshToken(db: Queryable, tokenHash: string): Promise<boolean> {
  const rows = await db
    .update(mcpOauthRefreshTokens)
    .set({ usedAt: new Date() })
    .where(and(eq(mcpOauthRefreshTokens.tokenHash, tokenHash), isNull(mcpOauthRefreshTokens.usedAt)))
    .returning({ h: mcpOauthRefreshTokens.tokenHash });
  return rows.length === 1;
}
