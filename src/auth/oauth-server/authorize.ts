/**
 * The authorization request of an org's authorization server: checked in the order RFC 6749 section 4.1.2.1 sets
 * (client and redirect_uri first: when either is wrong the person sees a page and nothing is redirected), then PKCE
 * (S256 only), the resource indicator (RFC 8707: the org's MCP URL) and the scopes. Every redirect back to the client
 * carries `iss` (RFC 9207).
 */
import type { OutboundPolicy } from '../../net/outbound.ts';
import type { Queryable } from '../../store/db.ts';
import { MCP_SCOPE } from '../credentials.ts';
import { ClientError, resolveClient, type OAuthClientInfo } from './clients.ts';
import { resourceUrl } from './metadata.ts';
import { REDIRECT_URI_RULE, redirectUriProblem } from './redirect-uris.ts';
import { activeConnectors } from './repository.ts';

export interface OrgRef {
  id: string;
  slug: string;
  name: string;
}

/** A checked request: who asks, where the answer goes, and what it may be granted. */
export interface AuthorizationRequest {
  client: OAuthClientInfo;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  /** The scopes asked for, all of them known to the org. */
  scopes: string[];
}

export type Checked =
  | { kind: 'ok'; request: AuthorizationRequest }
  /** Shown to the person; the client is not trusted with a redirect. */
  | { kind: 'page'; status: 400 | 404; message: string }
  | { kind: 'redirect'; location: string };

export const issuerOf = (publicUrl: string, slug: string) => `${publicUrl}/oauth/${slug}`;

/** The client's redirect_uri with the response parameters, `iss` always among them (RFC 9207). */
export function redirectTo(redirectUri: string, params: Record<string, string | null>, issuer: string): string {
  // The last line: a URI that escaped the check at the door is never redirected to (a 500, not a Location).
  if (redirectUriProblem(redirectUri)) throw new Error('refusing to redirect to an unchecked redirect URI');
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(params)) if (value !== null) url.searchParams.set(key, value);
  url.searchParams.set('iss', issuer);
  return url.href;
}

const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

interface CheckDeps {
  db: Queryable;
  outbound: OutboundPolicy;
  publicUrl: string;
}

async function identify(
  deps: CheckDeps,
  org: OrgRef,
  query: URLSearchParams,
): Promise<{ kind: 'page'; status: 400; message: string } | { kind: 'client'; client: OAuthClientInfo; redirectUri: string }> {
  let client: OAuthClientInfo;
  try {
    client = await resolveClient(deps.db, deps.outbound, org.id, query.get('client_id') ?? '');
  } catch (err) {
    if (err instanceof ClientError) return { kind: 'page', status: 400, message: err.message };
    throw err;
  }
  const redirectUri = query.get('redirect_uri') ?? '';
  // Exact match, character for character (no prefix, no normalisation).
  if (!client.redirectUris.includes(redirectUri)) {
    return { kind: 'page', status: 400, message: "The redirect_uri is not one of the client's registered redirect URIs." };
  }
  // Checked again at use, whatever its source (a row saved under an older rule included): never redirected to.
  const problem = redirectUriProblem(redirectUri);
  if (problem) return { kind: 'page', status: 400, message: `The redirect_uri is refused: it ${problem}. ${REDIRECT_URI_RULE}` };
  return { kind: 'client', client, redirectUri };
}

/** The scopes asked for (default `mcp:call`), or null when one of them is not the org's. */
async function requestedScopes(db: Queryable, orgId: string, scope: string | null): Promise<string[] | null> {
  const asked = scope?.trim() ? [...new Set(scope.trim().split(/\s+/))] : [MCP_SCOPE];
  const known = new Set([MCP_SCOPE, ...(await activeConnectors(db, orgId)).map((c) => `${MCP_SCOPE}:${c.id}`)]);
  return asked.every((s) => known.has(s)) ? asked : null;
}

export async function checkAuthorizationRequest(deps: CheckDeps, org: OrgRef, query: URLSearchParams): Promise<Checked> {
  const identified = await identify(deps, org, query);
  if (identified.kind === 'page') return identified;
  const { client, redirectUri } = identified;
  const state = query.get('state');
  const issuer = issuerOf(deps.publicUrl, org.slug);
  const refuse = (error: string, description: string): Checked => ({
    kind: 'redirect',
    location: redirectTo(redirectUri, { error, error_description: description, state }, issuer),
  });
  if (query.get('response_type') !== 'code') return refuse('unsupported_response_type', 'Only response_type=code is supported.');
  const challenge = query.get('code_challenge');
  if (!challenge || query.get('code_challenge_method') !== 'S256') {
    return refuse('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256 (plain is not accepted).');
  }
  if (!S256_CHALLENGE.test(challenge)) return refuse('invalid_request', 'code_challenge is not an S256 challenge (43 base64url characters).');
  const resources = query.getAll('resource');
  if (resources.some((r) => r !== resourceUrl(deps.publicUrl, org.slug))) {
    return refuse('invalid_target', `The resource must be this org's MCP endpoint, ${resourceUrl(deps.publicUrl, org.slug)}.`);
  }
  const scopes = await requestedScopes(deps.db, org.id, query.get('scope'));
  if (!scopes) return refuse('invalid_scope', 'A requested scope is not offered by this org.');
  return { kind: 'ok', request: { client, redirectUri, state, codeChallenge: challenge, scopes } };
}
