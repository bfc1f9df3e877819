/**
 * The URLs and metadata documents that let an MCP client discover how to sign in to one org's endpoint: the
 * protected resource (RFC 9728) and the org's authorization server (RFC 8414), both derived from the public URL.
 */
import { MCP_SCOPE } from '../credentials.ts';

/** The org's MCP endpoint: the resource that access tokens are bound to (`aud`), and the RFC 8707 resource indicator. */
export const resourceUrl = (publicUrl: string, slug: string) => `${publicUrl}/mcp/${slug}`;
/** The org's authorization server: one issuer per org, so a token of one org can never pass for another's. */
const issuerUrl = (publicUrl: string, slug: string) => `${publicUrl}/oauth/${slug}`;
/** Where the resource's metadata is (RFC 9728 section 3.1: the well-known name inserted before the resource path). */
export const resourceMetadataUrl = (publicUrl: string, slug: string) => `${publicUrl}/.well-known/oauth-protected-resource/mcp/${slug}`;

const connectorScope = (connectorId: string) => `${MCP_SCOPE}:${connectorId}`;

/** RFC 9728 metadata of the org's endpoint. `extraIssuers`: the org's IdP when it issues tokens for this resource. */
export function protectedResourceMetadata(publicUrl: string, slug: string, connectorIds: string[], extraIssuers: string[]) {
  return {
    resource: resourceUrl(publicUrl, slug),
    authorization_servers: [issuerUrl(publicUrl, slug), ...extraIssuers],
    scopes_supported: [MCP_SCOPE, ...connectorIds.map(connectorScope)],
    bearer_methods_supported: ['header'],
    resource_name: `Toolgate MCP endpoint of ${slug}`,
    resource_documentation: `${publicUrl}/docs`,
  };
}

/** RFC 8414 metadata of the org's authorization server (authorization code + PKCE S256 only, public clients). */
export function authorizationServerMetadata(publicUrl: string, slug: string, connectorIds: string[], registration: boolean) {
  const issuer = issuerUrl(publicUrl, slug);
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    revocation_endpoint: `${issuer}/revoke`,
    ...(registration ? { registration_endpoint: `${issuer}/register` } : {}),
    jwks_uri: `${publicUrl}/.well-known/jwks.json`,
    scopes_supported: [MCP_SCOPE, ...connectorIds.map(connectorScope)],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}
