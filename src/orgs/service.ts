/** Onboarding and provisioning of orgs: the org, its first credentials, and its MCP server instance. */
import { and, count, eq, inArray, isNull } from 'drizzle-orm';
import { recordAudit, type Actor } from '../audit/repository.ts';
import { createApiKey, createOAuthClient, apiKeyView, oauthClientView, MANAGE_SCOPE, MCP_SCOPE } from '../auth/credentials.ts';
import { conflict, notFound } from '../errors.ts';
import type { Config } from '../config.ts';
import type { Store } from '../store/db.ts';
import { connectors, tools } from '../store/schema.ts';
import { SERVING_STATUSES } from '../tools/catalog.ts';
import { reprovisionConnectors, type ConnectorServiceDeps } from '../connectors/service.ts';
import { burstLimitFor, monthlyQuotaFor } from '../limits/plans.ts';
import { findOrgById, insertOrg, markProvisioned, SlugTakenError, type OrgRow, type Plan } from './repository.ts';

/** What the org service uses: the connector service's parts (provisioning re-validates connectors) and two settings. */
export type OrgServiceDeps = ConnectorServiceDeps & { config: Pick<Config, 'publicUrl' | 'customBurstPerSecond'> };

export function orgView(org: OrgRow, customBurst: number) {
  return {
    id: org.id,
    slug: org.slug,
    name: org.name,
    plan: org.plan as Plan,
    subscription_status: org.subscriptionStatus as 'trialing' | 'active' | 'past_due' | 'canceled',
    trial_expires_at: org.trialExpiresAt?.toISOString() ?? null,
    provision_status: org.provisionStatus as 'provisioned' | 'not_provisioned',
    burst_limit_per_second: burstLimitFor(org.plan, org.burstLimitPerSecond, customBurst),
    monthly_tool_calls: monthlyQuotaFor(org.plan),
    created_at: org.createdAt.toISOString(),
  };
}

export function mcpEndpointUrl(deps: { config: Pick<Config, 'publicUrl'> }, slug: string): string {
  return `${deps.config.publicUrl}/mcp/${slug}`;
}

export async function onboardOrg(
  deps: OrgServiceDeps,
  input: { slug: string; name: string; plan?: Plan; trialDays?: number; burstLimitPerSecond?: number },
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
      return { org, key, client };
    })
    .catch((err: unknown) => {
      if (err instanceof SlugTakenError) throw conflict('slug_taken', `The slug "${input.slug}" is already taken.`);
      throw err;
    });
  // Provisioning happens automatically at onboarding.
  const org = await provisionOrg(deps, created.org.id, { type: 'system', id: null });
  return {
    org: orgView(org, deps.config.customBurstPerSecond),
    endpoint: mcpEndpointUrl(deps, org.slug),
    api_key: { ...apiKeyView(created.key.row), key: created.key.key },
    oauth_client: { ...oauthClientView(created.client.row), client_secret: created.client.clientSecret },
  };
}

/** Builds (or rebuilds) the org's MCP server instance; idempotent. */
export async function provisionOrg(deps: OrgServiceDeps, orgId: string, actor: Actor): Promise<OrgRow> {
  // The catalog is built from the org's live connectors: re-introspect each and wait for the outcome.
  await reprovisionConnectors(deps, orgId);
  const org = await markProvisioned(deps.store.db, orgId);
  await recordAudit(deps.store.db, { orgId, action: 'org.provisioned', actor, targetType: 'org', targetId: orgId });
  return org;
}

/** The org of the path, which must be the token's org; any other id is "not found", revealing nothing. */
export async function requireOwnOrg(deps: { store: Pick<Store, 'db'> }, pathOrgId: string, tokenOrgId: string): Promise<OrgRow> {
  const org = pathOrgId === tokenOrgId ? await findOrgById(deps.store.db, pathOrgId) : undefined;
  if (!org) throw notFound('org_not_found', 'No such org.');
  return org;
}

export async function provisioningStatus(deps: { store: Pick<Store, 'db'>; config: Pick<Config, 'publicUrl'> }, org: OrgRow) {
  // The catalog's size: tools of connectors that serve them (a failed connector's tools are not on the endpoint).
  const [row] = await deps.store.db
    .select({ n: count() })
    .from(tools)
    .innerJoin(connectors, eq(connectors.id, tools.connectorId))
    .where(and(eq(tools.orgId, org.id), eq(connectors.orgId, org.id), inArray(connectors.status, SERVING_STATUSES), isNull(connectors.archivedAt)));
  return {
    status: org.provisionStatus as 'provisioned' | 'not_provisioned',
    endpoint: mcpEndpointUrl(deps, org.slug),
    toolCount: Number(row?.n ?? 0),
  };
}
