/** Checks credentials at the door: gateway access tokens, API keys, the org's IdP tokens, and the operator token. */
import { timingSafeEqual, createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { forbidden, orgSuspended, unauthenticated } from '../errors.ts';
import type { Db } from '../store/db.ts';
import { looksLikeApiKey, MANAGE_SCOPE, MCP_SCOPE } from './credentials.ts';
import { activeClientAttributes, isOrgSuspended } from './repository.ts';
import type { Principal, Role } from '../principal.ts';
import type { AccessTokenClaims, TokenSigner } from './signing.ts';
import { bearerToken } from '../net/bearer.ts';
import type { SignedInTokens } from './oauth-server/access.ts';
import type { LastUseRecorder } from './last-use.ts';
import { memberPrincipal } from './member-sign-in.ts';

/** Resolves a bearer token that is not the gateway's own: the org's identity provider (see auth/idp). */
export interface IdpResolver {
  /** For the MCP endpoint: the org is known from the URL. Returns null when the org has no IdP configured. */
  forOrg(orgId: string, token: string): Promise<IdpPrincipal | null>;
  /** For /api/*: finds the org whose IdP issued the token (by issuer and audience). */
  forRest(token: string): Promise<IdpPrincipal | null>;
}

export interface IdpPrincipal {
  orgId: string;
  subject: string;
  email: string | null;
  roles: Role[];
  scopes: string[];
  /** Claims row filters may bind (identity.ts claimAttributes). */
  attributes?: Record<string, string>;
}

const CONNECTOR_SCOPE = /^mcp:call:([0-9a-f-]{36})$/;

/** Connector limits carried by scopes: `mcp:call` means all (null); otherwise the listed connector ids. */
function connectorsFromScopes(scopes: string[]): string[] | null | 'none' {
  if (scopes.includes(MCP_SCOPE)) return null;
  const ids = scopes.map((s) => CONNECTOR_SCOPE.exec(s)?.[1]).filter((id): id is string => Boolean(id));
  return ids.length ? ids : 'none';
}

/**
 * An API key sent as a bearer token is refused with where it goes instead (decision 0365); the key is not looked up,
 * and the answer never repeats it.
 */
const API_KEY_AS_BEARER_MCP = 'This is an API key: send it in the X-API-Key header, not as Authorization: Bearer.';
const API_KEY_AS_BEARER_REST = `This is an API key: API keys work only at an MCP endpoint, in the X-API-Key header. /api/* takes an OAuth access token with the ${MANAGE_SCOPE} scope.`;

function isGatewayToken(token: string, issuer: string): boolean {
  try {
    return decodeJwt(token).iss === issuer;
  } catch {
    return false;
  }
}

export class Authenticator {
  private readonly operatorDigest: Buffer | null;

  constructor(
    private readonly db: Db,
    private readonly signer: TokenSigner,
    operatorToken: string | null,
    private readonly idp: IdpResolver | null = null,
    private readonly signedIn: SignedInTokens | null = null,
    /** Notes each use of an API key or OAuth client (written later, coarsely: auth/last-use.ts); null: not recorded. */
    private readonly lastUse: LastUseRecorder | null = null,
  ) {
    this.operatorDigest = operatorToken ? createHash('sha256').update(operatorToken).digest() : null;
  }

  /** A client's secret was accepted at the token endpoint: that is a use of the client too. */
  clientUsed(clientId: string): void {
    this.lastUse?.used('oauth_client', clientId);
  }

  operator(request: Request): Principal {
    const token = bearerToken(request);
    if (!token) throw unauthenticated('The operator token is required.', token !== null);
    const digest = createHash('sha256').update(token).digest();
    if (!this.operatorDigest || !timingSafeEqual(digest, this.operatorDigest)) {
      throw unauthenticated('The operator token is invalid.', true);
    }
    return { orgId: '', kind: 'operator', actorId: 'operator', email: null, roles: [], orgLevel: true, connectorIds: null };
  }

  /** `/api/*`: a gateway token with the management scope, or a user token from the org's IdP. */
  rest(request: Request): Promise<Principal> {
    return this.restToken(bearerToken(request));
  }

  /** The same, for a token held elsewhere (a console session's): `null` is none presented, `''` a malformed header. */
  async restToken(token: string | null): Promise<Principal> {
    const principal = await this.restPrincipal(token);
    // A suspended org's credentials are refused (one primary-key read: management calls are not the hot path).
    if (await isOrgSuspended(this.db, principal.orgId)) throw orgSuspended();
    return principal;
  }

  private async restPrincipal(token: string | null): Promise<Principal> {
    if (!token) throw unauthenticated('Authorization: Bearer <token> is required.', token !== null);
    if (looksLikeApiKey(token)) throw unauthenticated(API_KEY_AS_BEARER_REST, true);
    // A person's token for an MCP endpoint is bound to that endpoint (its audience): never a REST credential.
    if (this.signedIn?.claims(token)) throw unauthenticated('The token is invalid or expired.', true);
    if (isGatewayToken(token, this.signer.issuer)) {
      const claims = await this.verifyGatewayToken(token);
      if (claims.member) return claims.member;
      if (!claims.scope.split(' ').includes(MANAGE_SCOPE)) {
        throw forbidden('insufficient_scope', `This token may only call tools; the REST interface needs the ${MANAGE_SCOPE} scope.`, MANAGE_SCOPE);
      }
      return { orgId: claims.tg_org, kind: 'oauth_client', actorId: claims.sub, email: null, roles: [], orgLevel: true, connectorIds: null };
    }
    const user = await this.resolveIdp(() => this.idp?.forRest(token) ?? Promise.resolve(null));
    if (!user) throw unauthenticated('The token is invalid or expired.', true);
    return { orgId: user.orgId, kind: 'idp_user', actorId: user.subject, email: user.email, roles: user.roles, orgLevel: false, connectorIds: null };
  }

  /**
   * The MCP endpoint of one org (`/mcp/{slug}`), for a bearer token: a person's token for exactly that endpoint, a
   * gateway token with an mcp:call scope, or the org's IdP token.
   * (X-API-Key requests are looked up by the endpoint itself, org and key in one batched query: see mcp/lookup.ts.)
   * `token`: the Authorization header's bearer or a console session's; `null` is none presented, `''` a malformed header.
   */
  async mcpToken(token: string | null, orgId: string, slug: string): Promise<Principal> {
    if (!token) throw unauthenticated('A credential is required: X-API-Key or Authorization: Bearer.', token !== null);
    if (looksLikeApiKey(token)) throw unauthenticated(API_KEY_AS_BEARER_MCP, true);
    if (this.signedIn?.claims(token)) return this.signedIn.principal(token, orgId, slug);
    if (isGatewayToken(token, this.signer.issuer)) {
      const { attributes, member, ...claims } = await this.verifyGatewayToken(token);
      // Another org's token gets the same answer as an invalid one: nothing is revealed about the other org.
      if (claims.tg_org !== orgId) throw unauthenticated('The token is invalid or expired.', true);
      // A member's console token calls tools as the member (the console's playground).
      if (member) return member;
      const limits = connectorsFromScopes(claims.scope.split(' '));
      if (limits === 'none') throw forbidden('insufficient_scope', `This token has no ${MCP_SCOPE} scope.`, MCP_SCOPE);
      return { orgId, kind: 'oauth_client', actorId: claims.sub, email: null, roles: [], orgLevel: false, connectorIds: limits, attributes };
    }
    const user = await this.resolveIdp(() => this.idp?.forOrg(orgId, token) ?? Promise.resolve(null));
    if (!user || user.orgId !== orgId) throw unauthenticated('The token is invalid or expired.', true);
    // Any valid IdP token may call tools; connector scopes, when present, limit it like an OAuth token.
    const limits = connectorsFromScopes(user.scopes);
    return {
      orgId,
      kind: 'idp_user',
      actorId: user.subject,
      email: user.email,
      roles: user.roles,
      orgLevel: false,
      connectorIds: limits === 'none' ? null : limits,
      attributes: user.attributes ?? {},
    };
  }

  /**
   * The principal of an active API key found by its hash (`row`: undefined when none matched), for the org `orgId`.
   * The MCP endpoint looks the org and the key up together in one query and hands the key row here, so both
   * paths give the same answers.
   */
  apiKeyPrincipal(
    orgId: string,
    row: { id: string; orgId: string; connectorIds: string[] | null; attributes?: Record<string, string> } | null | undefined,
  ): Principal {
    // Another org's key gets the same answer as an unknown one: nothing is revealed about the other org.
    if (!row || row.orgId !== orgId) throw unauthenticated('The API key is invalid or revoked.');
    this.lastUse?.used('api_key', row.id);
    return {
      orgId,
      kind: 'api_key',
      actorId: row.id,
      email: null,
      roles: [],
      orgLevel: false,
      connectorIds: row.connectorIds ?? null,
      attributes: row.attributes ?? {},
    };
  }

  private async verifyGatewayToken(token: string) {
    let claims: AccessTokenClaims;
    try {
      claims = await this.signer.verify(token);
    } catch {
      throw unauthenticated('The token is invalid or expired.', true);
    }
    if (typeof claims.tg_member === 'string') {
      // A member's token: the member is read on every request, so a suspension counts at once on every instance.
      const member = await memberPrincipal(this.db, claims.tg_org, claims.tg_member, null);
      if (!member) throw unauthenticated('The member behind this token is suspended or removed.', true);
      return { ...claims, attributes: member.attributes ?? {}, member };
    }
    // A revoked client's tokens stop working on the next request, on every instance (the store is shared). The same
    // read gives the client's attributes (row filters bind them).
    const attributes = await activeClientAttributes(this.db, claims.tg_org, claims.sub);
    if (attributes === null) throw unauthenticated('The token was issued to a client that has been revoked.', true);
    this.lastUse?.used('oauth_client', claims.sub);
    return { ...claims, attributes, member: null };
  }

  private async resolveIdp(resolve: () => Promise<IdpPrincipal | null>): Promise<IdpPrincipal | null> {
    try {
      return await resolve();
    } catch {
      return null;
    }
  }
}
