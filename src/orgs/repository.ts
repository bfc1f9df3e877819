/** SQL of orgs: create, find, list, provision state, plan and suspension. */
import { asc, eq, gt, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { orgs } from '../store/schema.ts';

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

/** Orgs in slug order after `afterSlug` (null: from the first), at most `limit`. */
export async function listOrgsAfter(db: Queryable, afterSlug: string | null, limit: number): Promise<OrgRow[]> {
  const query = db.select().from(orgs);
  return (afterSlug === null ? query : query.where(gt(orgs.slug, afterSlug))).orderBy(asc(orgs.slug)).limit(limit);
}

/** Locks the org's row for a change by the operator (concurrent changes of one org queue here). */
export async function lockOrgBySlug(db: Queryable, slug: string): Promise<OrgRow | undefined> {
  const [row] = await db.select().from(orgs).where(eq(orgs.slug, slug)).for('update');
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
