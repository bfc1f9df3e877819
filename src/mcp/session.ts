/**
 * Who calls the MCP endpoint of which org: the org named in the URL and the caller's credential (X-API-Key, or a
 * bearer token), checked together so that an unknown slug and another org's credential get the same 401 and nothing
 * is revealed about which orgs exist.
 */
import type { Authenticator } from '../auth/authenticate.ts';
import type { Principal } from '../principal.ts';
import { orgSuspended, unauthenticated } from '../errors.ts';
import type { Store } from '../store/db.ts';
import type { McpAuthCache } from './auth-cache.ts';
import { findMcpOrg, findMcpOrgWithApiKey, type McpOrg } from './lookup.ts';

/** The nil uuid: no org has it, so every credential checked against it is refused like a foreign one. */
const NO_ORG = '00000000-0000-0000-0000-000000000000';

export interface McpSession {
  org: McpOrg;
  principal: Principal;
  /** The request's signal: it aborts when the HTTP client goes away, and a tool call then cancels its statement. */
  signal?: AbortSignal;
}

export interface SessionDeps {
  store: Pick<Store, 'db'>;
  auth: Pick<Authenticator, 'apiKeyPrincipal' | 'mcpToken'>;
  /** This instance's cache of the lookups (off without a shared auth epoch, or with a TTL of 0). */
  authCache: McpAuthCache;
}

/** What a request presents: an API key, or a bearer token (the Authorization header's, or the console session's; null: none). */
export type McpCredential = { apiKey: string } | { bearer: string | null };

/** The org and the caller for a request carrying X-API-Key, in one (batched) store query or from the cache. */
async function withApiKey(deps: SessionDeps, slug: string, apiKey: string): Promise<{ org: McpOrg | undefined; principal: Principal }> {
  const found = await findMcpOrgWithApiKey(deps.store.db, slug, apiKey.trim(), deps.authCache);
  // An unknown slug is checked against NO_ORG, like a foreign key: the answer is the one an invalid key gets.
  const principal = deps.auth.apiKeyPrincipal(found?.id ?? NO_ORG, found?.key);
  if (!found) return { org: undefined, principal };
  const { key: _key, ...org } = found;
  return { org, principal };
}

/** Authenticates a credential for the org `slug`; throws the 401/403 AppError the endpoint answers otherwise. */
export async function openSession(deps: SessionDeps, slug: string, credential: McpCredential, signal?: AbortSignal): Promise<McpSession> {
  // For an unknown slug the credential is checked against an org id no credential belongs to, so the answer
  // (message and WWW-Authenticate) is exactly the one another org's or an invalid credential gets.
  let org: McpOrg | undefined;
  let principal: Principal;
  if ('apiKey' in credential) ({ org, principal } = await withApiKey(deps, slug, credential.apiKey));
  else {
    // The org from the cache; the token itself is checked as always (a revoked client is refused in auth/).
    org = await findMcpOrg(deps.store.db, slug, deps.authCache);
    principal = await deps.auth.mcpToken(credential.bearer, org?.id ?? NO_ORG, slug);
  }
  if (!org) throw unauthenticated('The API key is invalid or revoked.');
  // Told only to a valid credential of the org, so nothing is revealed about an org to strangers.
  if (org.suspendedAt) throw orgSuspended();
  return { org, principal, signal };
}
