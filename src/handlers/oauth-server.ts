/** The org's authorization server on the wire: discovery documents (RFC 9728, RFC 8414). */
import { findIdpConfig } from '../auth/idp/repository.ts';
import { authorizationServerMetadata, protectedResourceMetadata, resourceUrl } from '../auth/oauth-server/metadata.ts';
import { activeConnectors } from '../auth/oauth-server/repository.ts';
import { json, notFound } from '../errors.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler } from './context.ts';

/** Public documents: any page may read them (browser-based MCP clients discover from another origin). */
const METADATA_HEADERS = { 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' };

async function orgOf(deps: AppDeps, slug: string) {
  const org = await findOrgBySlug(deps.store.db, slug);
  if (!org) throw notFound('org_not_found', 'No org has this slug.');
  return org;
}

export const getProtectedResourceMetadata: Handler = async ({ params, deps }) => {
  const slug = params.orgSlug!;
  const org = await orgOf(deps, slug);
  const connectorIds = (await activeConnectors(deps.store.db, org.id)).map((c) => c.id);
  const idp = await findIdpConfig(deps.store.db, org.id);
  // The org's own IdP is an authorization server of this resource only when it issues tokens for it (item 3).
  const idpIssuers = idp && idp.audience === resourceUrl(deps.config.publicUrl, slug) ? [idp.issuer] : [];
  return json(protectedResourceMetadata(deps.config.publicUrl, slug, connectorIds, idpIssuers), 200, METADATA_HEADERS);
};

export const getAuthorizationServerMetadata: Handler = async ({ params, deps }) => {
  const slug = params.orgSlug!;
  const org = await orgOf(deps, slug);
  const connectorIds = (await activeConnectors(deps.store.db, org.id)).map((c) => c.id);
  return json(authorizationServerMetadata(deps.config.publicUrl, slug, connectorIds, false), 200, METADATA_HEADERS);
};

/** The same document where OpenID Connect clients look (the MCP authorization spec has clients try both). */
export const getOpenIdConfiguration: Handler = (ctx) => getAuthorizationServerMetadata(ctx);
export const getOpenIdConfigurationAppended: Handler = (ctx) => getAuthorizationServerMetadata(ctx);
