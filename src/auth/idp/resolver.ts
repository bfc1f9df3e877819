/** Finds the org's IdP configuration in the store and verifies its tokens (read per request: changes apply at once). */
import { and, eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import type { Db } from '../../store/db.ts';
import { idpConfigs } from '../../store/schema.ts';
import type { IdpPrincipal, IdpResolver } from '../authenticate.ts';
import type { Role } from '../principal.ts';
import type { IdpConfig } from './identity.ts';
import { peekIssuer } from './identity.ts';
import type { IdpVerifier } from './verifier.ts';

export type IdpConfigRow = typeof idpConfigs.$inferSelect;

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

function audiences(token: string): string[] {
  try {
    const aud = decodeJwt(token).aud;
    return Array.isArray(aud) ? aud : aud ? [aud] : [];
  } catch {
    return [];
  }
}

export function createIdpResolver(db: Db, verifier: IdpVerifier): IdpResolver {
  async function verify(row: IdpConfigRow, token: string): Promise<IdpPrincipal> {
    const identity = await verifier.verify(row.orgId, toVerifierConfig(row), token);
    return { orgId: row.orgId, subject: identity.subject, email: identity.email, roles: identity.roles, scopes: identity.scopes };
  }
  return {
    async forOrg(orgId, token) {
      const [row] = await db.select().from(idpConfigs).where(eq(idpConfigs.orgId, orgId));
      return row ? verify(row, token) : null;
    },
    async forRest(token) {
      // The token names its issuer and audience; (issuer, audience) is unique across orgs, so it names one org.
      const issuer = peekIssuer(token);
      if (!issuer) return null;
      for (const audience of audiences(token)) {
        const [row] = await db.select().from(idpConfigs).where(and(eq(idpConfigs.issuer, issuer), eq(idpConfigs.audience, audience)));
        if (row) return verify(row, token);
      }
      return null;
    },
  };
}
