/**
 * The org's authorization server on the wire: discovery documents (RFC 9728, RFC 8414), the token, revocation and
 * registration endpoints, and the admins' REST view of sign-ins (the person's pages: oauth-signin.ts).
 */
import { findIdpConfig } from '../auth/idp/repository.ts';
import { authorizationServerMetadata, protectedResourceMetadata, resourceUrl } from '../auth/oauth-server/metadata.ts';
import { activeConnectors, registrationEnabled } from '../auth/oauth-server/repository.ts';
import { json, notFound, OAuthError } from '../errors.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import type { AppDeps } from '../deps.ts';
import type { Handler } from './context.ts';
import { exchangeToken, revokeToken, type TokenForm } from '../auth/oauth-server/token.ts';
import { registerClient } from '../auth/oauth-server/register.ts';
import * as admin from '../auth/oauth-server/admin.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { actorOf } from '../principal.ts';
import { orgCanSignIn } from './oauth-member-sign-in.ts';

/** Public documents, cached five minutes (any page may read them: CORS is the router's, decision 0249). */
const METADATA_HEADERS = { 'cache-control': 'public, max-age=300' };

async function orgOf(deps: AppDeps, slug: string) {
  const org = await findOrgBySlug(deps.store.db, slug);
  if (!org) throw notFound('org_not_found', 'No org has this slug.');
  return { id: org.id, slug: org.slug, name: org.name, suspended: org.suspendedAt !== null };
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
  const registration = await registrationEnabled(deps.store.db, org.id);
  return json(authorizationServerMetadata(deps.config.publicUrl, slug, connectorIds, registration), 200, METADATA_HEADERS);
};

/** The same document where OpenID Connect clients look (the MCP authorization spec has clients try both). */
export const getOpenIdConfiguration: Handler = (ctx) => getAuthorizationServerMetadata(ctx);
export const getOpenIdConfigurationAppended: Handler = (ctx) => getAuthorizationServerMetadata(ctx);

export const issueMcpToken: Handler = async ({ params, body, deps }) => {
  const org = await orgOf(deps, params.orgSlug!);
  if (org.suspended) {
    throw new OAuthError(400, 'unauthorized_client', 'The org is suspended by the gateway operator: no token is issued until it is resumed.');
  }
  const tokens = await exchangeToken({ db: deps.store.db, signer: deps.signer, publicUrl: deps.config.publicUrl }, org, body as TokenForm);
  return json(tokens, 200, { 'cache-control': 'no-store', pragma: 'no-cache' });
};

/** RFC 7009: 200 whatever the token was (nothing is revealed about tokens that are not the caller's). */
export const revokeMcpToken: Handler = async ({ params, body, deps }) => {
  const org = await orgOf(deps, params.orgSlug!);
  const form = body as { token: string; client_id?: string };
  await revokeToken({ db: deps.store.db, signer: deps.signer, publicUrl: deps.config.publicUrl }, org, form.token, form.client_id);
  return new Response(null, { status: 200, headers: { 'cache-control': 'no-store' } });
};

export const registerMcpClient: Handler = async ({ request, params, body, deps }) => {
  const org = await orgOf(deps, params.orgSlug!);
  // A client registered with an org nobody can sign in to would only lead a person to a dead end (issue 40).
  if (!(await orgCanSignIn(deps, org.id))) {
    return json(
      {
        error: 'access_denied',
        error_description:
          "This org cannot sign anyone in yet: its admins invite members (the console's Members page) or configure an identity provider. Until then, connect with an API key.",
      },
      403,
      { 'cache-control': 'no-store' },
    );
  }
  return registerClient({ db: deps.store.db, limiter: deps.limiter }, org, body as object, sourceAddressOf(request, deps.config.trustedProxies));
};

export const listMcpGrants: Handler = async ({ principal, query, deps }) =>
  json(await admin.listSignIns(deps.store.db, principal!.orgId, query.subject as string | undefined));

export const revokeMcpGrant: Handler = async ({ principal, params, deps }) =>
  json(await admin.revokeSignIn(deps.store.db, principal!.orgId, params.grantId!, actorOf(principal)));

export const listMcpClients: Handler = async ({ principal, deps }) => json(await admin.listClients(deps.store.db, principal!.orgId));

export const createMcpClient: Handler = async ({ principal, body, deps }) =>
  json(await admin.preregisterClient(deps.store.db, principal!.orgId, body as { client_name: string; redirect_uris: string[] }, actorOf(principal)), 201);

export const revokeMcpClient: Handler = async ({ principal, params, deps }) =>
  json(await admin.revokeClient(deps.store.db, principal!.orgId, params.clientId!, actorOf(principal)));

export const setMcpSignInSettings: Handler = async ({ principal, body, deps }) =>
  json(await admin.setRegistration(deps.store.db, principal!.orgId, (body as { registration_enabled: boolean }).registration_enabled, actorOf(principal)));
