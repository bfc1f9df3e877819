/** Finds the org's IdP configuration in the store and verifies its tokens (read per request: changes apply at once). */
import { decodeJwt } from 'jose';
import type { Db } from '../../store/db.ts';
import type { IdpPrincipal, IdpResolver } from '../authenticate.ts';
import type { Role } from '../../principal.ts';
import type { IdpConfig } from './identity.ts';
import { claimAttributes, peekIssuer } from './identity.ts';
import type { IdpVerifier } from './verifier.ts';
import { findIdpConfig, findIdpConfigsByIssuer, type IdpConfigRow } from './repository.ts';

export type { IdpConfigRow };

export function toVerifierConfig(row: IdpConfigRow): IdpConfig {
  return {
    issuer: row.issuer,
    jwksUri: row.jwksUri,
    audience: row.audience,
    roleClaim: row.roleClaim,
    emailClaim: row.emailClaim,
    defaultRole: (row.defaultRole as Role | null) ?? null,
  };
}

/** The token's audiences, unverified, deduplicated, strings only, in the token's order. */
function audiences(token: string): string[] {
  try {
    const aud: unknown = decodeJwt(token).aud;
    const list: unknown[] = Array.isArray(aud) ? aud : aud ? [aud] : [];
    return [...new Set(list.filter((a): a is string => typeof a === 'string' && a !== ''))];
  } catch {
    return [];
  }
}

export function createIdpResolver(db: Db, verifier: IdpVerifier): IdpResolver {
  async function verify(row: IdpConfigRow, token: string): Promise<IdpPrincipal> {
    const identity = await verifier.verify(row.orgId, toVerifierConfig(row), token);
    return {
      orgId: row.orgId,
      subject: identity.subject,
      email: identity.email,
      roles: identity.roles,
      scopes: identity.scopes,
      attributes: claimAttributes(identity.claims),
    };
  }
  return {
    async forOrg(orgId, token) {
      const row = await findIdpConfig(db, orgId);
      return row ? verify(row, token) : null;
    },
    async forRest(token) {
      // The token names its issuer and audience; (issuer, audience) is unique across orgs, so it names one org.
      const issuer = peekIssuer(token);
      if (!issuer) return null;
      // One query whatever the number of audiences: the token is unverified here, and a 16 KiB token can list
      // thousands of them (one query each would let anyone make every request cost thousands of queries).
      const candidates = audiences(token);
      if (candidates.length === 0) return null;
      const rows = await findIdpConfigsByIssuer(db, issuer, candidates);
      // Several matches (orgs sharing an issuer, the token naming each audience): the token's order decides, as before.
      const row = candidates.map((audience) => rows.find((r) => r.audience === audience)).find((r) => r !== undefined);
      return row ? verify(row, token) : null;
    },
  };
}
