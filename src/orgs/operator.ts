/**
 * The operator's actions on orgs (operator API and CLI): list and find by slug, change the plan, suspend and resume;
 * each change audited in the org and told to every instance's credential cache (docs/decisions/0210).
 */
import { recordAudit, type Actor } from '../audit/repository.ts';
import { limits, type BillingDeps } from '../billing/service.ts';
import type { AuthChanges } from '../auth/epoch.ts';
import { notFound } from '../errors.ts';
import type { Plan } from '../limits/plans.ts';
import { findOrgBySlug, listOrgsAfter, lockOrgBySlug, setOrgPlan, setOrgSuspended, type OrgRow } from './repository.ts';

export interface OperatorDeps extends BillingDeps {
  authCache: Pick<AuthChanges, 'changed'>;
}

const OPERATOR: Actor = { type: 'operator', id: null };

const noSuchOrg = (slug: string) => notFound('org_not_found', `No org with slug "${slug}".`);

/** One page of orgs in slug order; `next` is the cursor of the following page (null on the last). */
export async function listOrgs(deps: Pick<OperatorDeps, 'store'>, cursor: string | null, limit: number) {
  const rows = await listOrgsAfter(deps.store.db, cursor, limit + 1);
  const page = rows.slice(0, limit);
  return { orgs: page, next: rows.length > limit ? page[page.length - 1]!.slug : null };
}

export async function orgBySlug(deps: Pick<OperatorDeps, 'store'>, slug: string): Promise<OrgRow> {
  const org = await findOrgBySlug(deps.store.db, slug);
  if (!org) throw noSuchOrg(slug);
  return org;
}

/** The org with its limits and the usage against them (the finance role's GET /api/billing/limits). */
export async function orgDetail(deps: OperatorDeps, org: OrgRow) {
  return { org, limits: await limits(deps, org.id) };
}

export interface OrgChange {
  plan?: Plan;
  suspended?: boolean;
}

/**
 * Applies the change under the org row's lock and audits each part that changed; a value already in force changes
 * nothing (and records nothing). A plan is set even when the org's usage is over the new figures (decision 0210).
 */
export async function changeOrg(deps: OperatorDeps, slug: string, change: OrgChange, actor: Actor = OPERATOR): Promise<OrgRow> {
  const changed = await deps.store.db.transaction(async (tx) => {
    let org = await lockOrgBySlug(tx, slug);
    if (!org) throw noSuchOrg(slug);
    let wrote = false;
    // Setting the current plan still ends a trial: the org subscribes to it.
    if (change.plan !== undefined && (change.plan !== org.plan || org.subscriptionStatus !== 'active')) {
      const from = { plan: org.plan, subscription_status: org.subscriptionStatus };
      org = await setOrgPlan(tx, org.id, change.plan);
      await recordAudit(tx, { orgId: org.id, action: 'org.plan_changed', actor, targetType: 'org', targetId: org.id, details: { from, to: change.plan } });
      wrote = true;
    }
    if (change.suspended !== undefined && change.suspended !== (org.suspendedAt !== null)) {
      org = await setOrgSuspended(tx, org.id, change.suspended);
      const action = change.suspended ? 'org.suspended' : 'org.resumed';
      await recordAudit(tx, { orgId: org.id, action, actor, targetType: 'org', targetId: org.id });
      wrote = true;
    }
    return { org, wrote };
  });
  // Every instance drops its cached lookups, so the new plan's limits and the suspension apply on the next request
  // (the router does this after any operator write too; the CLI's direct path has no router).
  if (changed.wrote) await deps.authCache.changed();
  return changed.org;
}
