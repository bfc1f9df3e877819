/** Onboarding and provisioning of orgs: the org, its first credentials, and its MCP server instance. */
import { recordAudit, type Actor } from '../audit/repository.ts';
import { createApiKey, createOAuthClient, MANAGE_SCOPE, MCP_SCOPE } from '../auth/credentials.ts';
import { conflict, notFound } from '../errors.ts';
import type { Store } from '../store/db.ts';
import { countServingTools } from '../connectors/repository.ts';
import { reprovisionConnectors, type ConnectorServiceDeps } from '../connectors/service.ts';
import { findOrgById, insertOrg, markProvisioned, SlugTakenError, updateOrgSettings, type OrgRow, type Plan } from './repository.ts';
import { inviteMember } from '../members/service.ts';

/** What the org service uses: the connector service's parts (provisioning re-validates connectors). */
export type OrgServiceDeps = ConnectorServiceDeps;

export async function onboardOrg(
  deps: OrgServiceDeps,
  input: {
    slug: string;
    name: string;
    plan?: Plan;
    trialDays?: number;
    burstLimitPerSecond?: number;
    /** The org's first admin member, invited with a one-time link (issue 40). */
    admin?: { email: string; publicUrl: string };
  },
  actor: Actor,
) {
  const created = await deps.store.db
    .transaction(async (tx) => {
      const org = await insertOrg(tx, {
        slug: input.slug,
        name: input.name,
        plan: input.plan ?? 'starter',
        trialDays: input.trialDays ?? 14,
        burstLimitPerSecond: input.burstLimitPerSecond ?? null,
      });
      const key = await createApiKey(tx, org.id, { name: 'default', connectorIds: null });
      const client = await createOAuthClient(tx, org.id, { name: 'default', scopes: [MCP_SCOPE, MANAGE_SCOPE] });
      await recordAudit(tx, { orgId: org.id, action: 'org.created', actor, targetType: 'org', targetId: org.id, details: { slug: org.slug, plan: org.plan } });
      const admin = input.admin
        ? await inviteMember({ db: deps.store.db, publicUrl: input.admin.publicUrl }, org.id, { email: input.admin.email, roles: ['admin'] }, actor, tx)
        : null;
      return { org, key, client, admin };
    })
    .catch((err: unknown) => {
      if (err instanceof SlugTakenError) throw conflict('slug_taken', `The slug "${input.slug}" is already taken.`);
      throw err;
    });
  // Provisioning happens automatically at onboarding.
  const org = await provisionOrg(deps, created.org.id, { type: 'system', id: null });
  return { ...created, org };
}

/** Builds (or rebuilds) the org's MCP server instance; idempotent. */
export async function provisionOrg(deps: OrgServiceDeps, orgId: string, actor: Actor): Promise<OrgRow> {
  // The catalog is built from the org's live connectors: re-introspect each and wait for the outcome.
  await reprovisionConnectors(deps, orgId);
  const org = await markProvisioned(deps.store.db, orgId);
  // Told here, not only by the router: the CLI onboards orgs without it (catalog_version changed).
  await deps.authCache.changed();
  await recordAudit(deps.store.db, { orgId, action: 'org.provisioned', actor, targetType: 'org', targetId: orgId });
  return org;
}

export async function getOrg(deps: { store: Pick<Store, 'db'> }, orgId: string): Promise<OrgRow> {
  const org = await findOrgById(deps.store.db, orgId);
  if (!org) throw notFound('org_not_found', 'No such org.');
  return org;
}

/** Changes the org's settings (what a refused statement keeps: decision 0321), audited as `org.updated` with the fields. */
export async function updateOrg(
  deps: { store: Pick<Store, 'db'> },
  orgId: string,
  patch: { auditStatements?: OrgRow['auditStatements'] },
  actor: Actor,
): Promise<OrgRow> {
  return deps.store.db.transaction(async (tx) => {
    const values = patch.auditStatements === undefined ? {} : { auditStatements: patch.auditStatements };
    const row = Object.keys(values).length ? await updateOrgSettings(tx, orgId, values) : await findOrgById(tx, orgId);
    if (!row) throw notFound('org_not_found', 'No such org.');
    const details = patch.auditStatements === undefined ? { fields: [] } : { fields: ['audit_statements'], audit_statements: patch.auditStatements };
    await recordAudit(tx, { orgId, action: 'org.updated', actor, targetType: 'org', targetId: orgId, details });
    return row;
  });
}

/** The org of the path, which must be the token's org; any other id is "not found", revealing nothing. */
export async function requireOwnOrg(deps: { store: Pick<Store, 'db'> }, pathOrgId: string, tokenOrgId: string): Promise<OrgRow> {
  const org = pathOrgId === tokenOrgId ? await findOrgById(deps.store.db, pathOrgId) : undefined;
  if (!org) throw notFound('org_not_found', 'No such org.');
  return org;
}

/** The catalog's size: tools of connectors that serve them (a failed connector's tools are not on the endpoint). */
export async function catalogSize(deps: { store: Pick<Store, 'db'> }, org: OrgRow): Promise<number> {
  return countServingTools(deps.store.db, org.id);
}
