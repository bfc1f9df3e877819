/**
 * The access tokens of the org's authorization server at the door: a token is verified for exactly one org's issuer
 * and resource (its MCP URL), and its grant is read from the store on every request, so a revoked grant or client
 * is refused at once on every instance. The principal is the person who signed in, with the roles the IdP gave them.
 */
import { decodeJwt } from 'jose';
import { forbidden, unauthenticated } from '../../errors.ts';
import type { Principal, Role } from '../../principal.ts';
import type { Db } from '../../store/db.ts';
import { MCP_SCOPE } from '../credentials.ts';
import type { TokenSigner } from '../signing.ts';
import { resourceUrl } from './metadata.ts';
import { findGrant } from './repository.ts';
import { memberPrincipal } from '../member-sign-in.ts';

const CONNECTOR_SCOPE = /^mcp:call:([0-9a-f-]{36})$/;
const INVALID = 'The token is invalid or expired.';

export class SignedInTokens {
  private readonly issuerPrefix: string;

  constructor(
    private readonly db: Db,
    private readonly signer: Pick<TokenSigner, 'verifySignedIn'>,
    private readonly publicUrl: string,
  ) {
    this.issuerPrefix = `${publicUrl}/oauth/`;
  }

  /** Whether the token claims to come from one of the orgs' authorization servers (read without verifying it). */
  claims(token: string): boolean {
    try {
      const iss = decodeJwt(token).iss;
      return typeof iss === 'string' && iss.startsWith(this.issuerPrefix);
    } catch {
      return false;
    }
  }

  /**
   * The person behind a signed-in token at the MCP endpoint `/mcp/{slug}` of org `orgId`; 401 for anything else.
   * The endpoint decides what is expected (RFC 8707, decision 0364): the issuer is its org's authorization server and
   * the audience its own MCP URL, never what the token says about itself; the org claim must agree as well.
   */
  async principal(token: string, orgId: string, slug: string): Promise<Principal> {
    let claims: Awaited<ReturnType<TokenSigner['verifySignedIn']>>;
    try {
      claims = await this.signer.verifySignedIn(token, `${this.issuerPrefix}${slug}`, resourceUrl(this.publicUrl, slug));
    } catch {
      throw unauthenticated(INVALID, true);
    }
    // Another org's token (its issuer, audience and org are all another's) gets the answer an invalid one gets.
    if (claims.tg_org !== orgId) throw unauthenticated(INVALID, true);
    const grant = await findGrant(this.db, claims.tg_grant);
    if (!grant || grant.orgId !== orgId || grant.revokedAt) throw unauthenticated('The sign-in behind this token has been revoked.', true);
    const scopes = claims.scope.split(' ');
    const connectorIds = scopes.includes(MCP_SCOPE) ? null : scopes.map((s) => CONNECTOR_SCOPE.exec(s)?.[1]).filter((id): id is string => Boolean(id));
    if (connectorIds?.length === 0) throw forbidden('insufficient_scope', `This token has no ${MCP_SCOPE} scope.`, MCP_SCOPE);
    if (grant.subject.startsWith('member:')) {
      // A member (issue 40): read now, so a suspension counts on the next request, with the member's current roles.
      const member = await memberPrincipal(this.db, orgId, grant.subject.slice('member:'.length), connectorIds);
      if (!member) throw unauthenticated('The member behind this sign-in is suspended or removed.', true);
      return { ...member, signedIn: true };
    }
    return {
      orgId,
      kind: 'idp_user',
      actorId: grant.subject,
      email: grant.email,
      roles: grant.roles as Role[],
      orgLevel: false,
      connectorIds,
      // The IdP claims as of sign-in: row filters bind them as for the IdP's own tokens.
      attributes: grant.attributes,
      signedIn: true,
    };
  }
}
