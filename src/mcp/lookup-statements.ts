/**
 * The MCP endpoint's per-request reads (lookup.ts), as drizzle prepared statements built once per database handle:
 * the org by slug, and API keys with their orgs by batches of (slug, key hash).
 */
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../store/db.ts';
import { apiKeys, orgs } from '../store/schema.ts';

/** The org columns the MCP endpoint reads (McpOrg): one list for both lookups. */
const MCP_ORG_COLUMNS = {
  id: orgs.id,
  slug: orgs.slug,
  catalogVersion: orgs.catalogVersion,
  plan: orgs.plan,
  burstLimitPerSecond: orgs.burstLimitPerSecond,
  subscriptionStatus: orgs.subscriptionStatus,
  trialExpiresAt: orgs.trialExpiresAt,
  suspendedAt: orgs.suspendedAt,
  auditStatements: orgs.auditStatements,
};

export const orgBySlug = (db: Db) =>
  db
    .select(MCP_ORG_COLUMNS)
    .from(orgs)
    .where(eq(orgs.slug, sql.placeholder('slug')))
    .prepare('toolgate_mcp_org');
export const keysByHash = (db: Db) =>
  db
    .select({ ...MCP_ORG_COLUMNS, keyId: apiKeys.id, keyHash: apiKeys.keyHash, keyConnectorIds: apiKeys.connectorIds, keyAttributes: apiKeys.attributes })
    .from(apiKeys)
    .innerJoin(orgs, eq(orgs.id, apiKeys.orgId))
    .where(
      and(
        sql`${apiKeys.keyHash} = any(${sql.placeholder('keyHashes')}::text[])`,
        isNull(apiKeys.revokedAt),
        sql`${orgs.slug} = any(${sql.placeholder('slugs')}::text[])`,
      ),
    )
    .prepare('toolgate_mcp_api_keys');

/** One row of keysByHash: the org's columns with the key's id, hash and connector scope. */
export type KeyRow = Awaited<ReturnType<ReturnType<typeof keysByHash>['execute']>>[number];
