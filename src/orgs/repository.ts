/** SQL of orgs: create, find, list, provision state, plan and suspension; the org's directory of names. */
import { and, asc, desc, eq, gt, isNull, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { apiKeys, connectors, oauthClients, orgs, tools, webhooks } from '../store/schema.ts';

export type OrgRow = typeof orgs.$inferSelect;
export type { Plan } from '../limits/plans.ts';
import type { Plan } from '../limits/plans.ts';

export async function insertOrg(
  db: Queryable,
  input: { slug: string; name: string; plan: Plan; trialDays: number; burstLimitPerSecond: number | null },
): Promise<OrgRow> {
  const trialExpiresAt = input.trialDays > 0 ? new Date(Date.now() + input.trialDays * 86_400_000) : null;
  const [row] = await db
    .insert(orgs)
    .values({
      slug: input.slug,
      name: input.name,
      plan: input.plan,
      subscriptionStatus: trialExpiresAt ? 'trialing' : 'active',
      trialExpiresAt,
      provisionStatus: 'not_provisioned',
      burstLimitPerSecond: input.burstLimitPerSecond,
    })
    .onConflictDoNothing({ target: orgs.slug })
    .returning();
  if (!row) throw new SlugTakenError(input.slug);
  return row;
}

export class SlugTakenError extends Error {
  constructor(readonly slug: string) {
    super(`slug ${slug} is taken`);
  }
}

export async function findOrgById(db: Queryable, id: string): Promise<OrgRow | undefined> {
  const [row] = await db.select().from(orgs).where(eq(orgs.id, id));
  return row;
}

export async function findOrgBySlug(db: Queryable, slug: string): Promise<OrgRow | undefined> {
  const [row] = await db.select().from(orgs).where(eq(orgs.slug, slug));
  return row;
}

export async function markProvisioned(db: Queryable, orgId: string): Promise<OrgRow> {
  const [row] = await db
    .update(orgs)
    .set({ provisionStatus: 'provisioned', provisionedAt: new Date(), catalogVersion: sql`${orgs.catalogVersion} + 1` })
    .where(eq(orgs.id, orgId))
    .returning();
  return row!;
}

/** Sets the org's settings (PATCH /api/org); undefined when there is no such org. */
export async function updateOrgSettings(db: Queryable, orgId: string, values: Pick<Partial<OrgRow>, 'auditStatements'>): Promise<OrgRow | undefined> {
  const [row] = await db.update(orgs).set(values).where(eq(orgs.id, orgId)).returning();
  return row;
}

/** Orgs in slug order after `afterSlug` (null: from the first), at most `limit`. */
export async function listOrgsAfter(db: Queryable, afterSlug: string | null, limit: number): Promise<OrgRow[]> {
  const query = db.select().from(orgs);
  return (afterSlug === null ? query : query.where(gt(orgs.slug, afterSlug))).orderBy(asc(orgs.slug)).limit(limit);
}

/**
 * Locks the org's row for a change by the operator (concurrent changes of one org queue here). FOR NO KEY UPDATE, as
 * billing/repository.ts lockOrgPlan: FOR UPDATE conflicts with the KEY SHARE lock of the foreign-key check of an audit
 * row inserted under the org's chain head, and the change then waits for that head: a deadlock, a 500.
 */
export async function lockOrgBySlug(db: Queryable, slug: string): Promise<OrgRow | undefined> {
  const [row] = await db.select().from(orgs).where(eq(orgs.slug, slug)).for('no key update');
  return row;
}

/** Sets the plan and makes the subscription active (the org subscribes to it: a trial ends). */
export async function setOrgPlan(db: Queryable, orgId: string, plan: Plan): Promise<OrgRow> {
  const [row] = await db.update(orgs).set({ plan, subscriptionStatus: 'active', trialExpiresAt: null }).where(eq(orgs.id, orgId)).returning();
  return row!;
}

export async function setOrgSuspended(db: Queryable, orgId: string, suspended: boolean): Promise<OrgRow> {
  const [row] = await db
    .update(orgs)
    .set({ suspendedAt: suspended ? new Date() : null })
    .where(eq(orgs.id, orgId))
    .returning();
  return row!;
}

/** At most this many of each kind in the org's directory (newest first). */
const DIRECTORY_LIMIT = 1000;

/**
 * Names by id for a UI (GET /api/org/directory): API keys and OAuth clients (names only), connectors (archived too),
 * tools (their served name) and webhooks (their URL). One query per kind, each bounded.
 */
export async function orgDirectory(db: Queryable, orgId: string) {
  const [keys, clients, sources, served, hooks] = await Promise.all([
    db
      .select({ id: apiKeys.id, name: apiKeys.name, revokedAt: apiKeys.revokedAt })
      .from(apiKeys)
      .where(eq(apiKeys.orgId, orgId))
      .orderBy(desc(apiKeys.createdAt))
      .limit(DIRECTORY_LIMIT),
    db
      .select({ clientId: oauthClients.clientId, name: oauthClients.name, revokedAt: oauthClients.revokedAt })
      .from(oauthClients)
      .where(eq(oauthClients.orgId, orgId))
      .orderBy(desc(oauthClients.createdAt))
      .limit(DIRECTORY_LIMIT),
    db
      .select({ id: connectors.id, name: connectors.name, type: connectors.type, archivedAt: connectors.archivedAt })
      .from(connectors)
      .where(eq(connectors.orgId, orgId))
      .orderBy(desc(connectors.createdAt))
      .limit(DIRECTORY_LIMIT),
    db
      .select({ id: tools.id, baseName: tools.baseName, override: tools.toolNameOverride, connectorId: tools.connectorId })
      .from(tools)
      // A withdrawn tool is served nowhere, here neither (decision 0405): an audit row of it shows its id, as of a deleted one.
      .where(and(eq(tools.orgId, orgId), isNull(tools.withdrawnAt)))
      .orderBy(desc(tools.createdAt))
      .limit(DIRECTORY_LIMIT),
    db.select({ id: webhooks.id, url: webhooks.url }).from(webhooks).where(eq(webhooks.orgId, orgId)).orderBy(desc(webhooks.createdAt)).limit(DIRECTORY_LIMIT),
  ]);
  return {
    api_keys: keys.map((k) => ({ id: k.id, name: k.name, revoked: k.revokedAt !== null })),
    oauth_clients: clients.map((c) => ({ client_id: c.clientId, name: c.name, revoked: c.revokedAt !== null })),
    connectors: sources.map((c) => ({ id: c.id, name: c.name, type: c.type, archived: c.archivedAt !== null })),
    tools: served.map((t) => ({ id: t.id, name: t.override ?? t.baseName, connector_id: t.connectorId })),
    webhooks: hooks.map((w) => ({ id: w.id, url: w.url })),
  };
}
