/** The org's own identity provider (BYOIDP) settings: read, set (JWKS URI checked against the outbound policy), delete. */
import { recordAudit, type Actor } from '../../audit/repository.ts';
import { conflict, notFound, unprocessable } from '../../errors.ts';
import { assertOutboundUrl, OutboundRefusedError, type OutboundPolicy } from '../../net/outbound.ts';
import type { Store } from '../../store/db.ts';
import type { SecretBox } from '../../util/crypto.ts';
import * as repo from './repository.ts';
import type { IdpVerifier } from './verifier.ts';

export interface IdpServiceDeps {
  store: Pick<Store, 'db'>;
  outbound: OutboundPolicy;
  /** Seals the console client secret. */
  box: SecretBox;
  /** Its per-org key cache is dropped when the configuration changes. */
  idpVerifier: Pick<IdpVerifier, 'forget'>;
}

export interface IdpConfigInput {
  issuer: string;
  jwksUri: string;
  audience: string;
  roleClaim?: string;
  emailClaim?: string;
  defaultRole?: string | null;
  /** The settings console's OIDC client (src/console); undefined keeps nothing: absent means none. */
  consoleClientId?: string | null;
  /** undefined: keep the stored secret when the client id is unchanged; null: none (public client). */
  consoleClientSecret?: string | null;
}

/** The sealing context of an org's console client secret: a sealed value is bound to its org. */
export const consoleSecretContext = (orgId: string) => `idp_console_secret:${orgId}`;

export async function getIdpConfig(deps: Pick<IdpServiceDeps, 'store'>, orgId: string): Promise<repo.IdpConfigRow> {
  const row = await repo.findIdpConfig(deps.store.db, orgId);
  if (!row) throw notFound('idp_not_configured', 'This org has no identity provider configured.');
  return row;
}

export async function setIdpConfig(deps: IdpServiceDeps, orgId: string, input: IdpConfigInput, actor: Actor): Promise<repo.IdpConfigRow> {
  try {
    await assertOutboundUrl(input.jwksUri, deps.outbound, { requireHttps: true });
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw unprocessable('jwks_uri_refused', `The JWKS URI is not allowed: ${err.message}`);
    throw err;
  }
  const consoleClientId = input.consoleClientId ?? null;
  let consoleClientSecretSealed: string | null = null;
  if (consoleClientId !== null) {
    if (typeof input.consoleClientSecret === 'string') consoleClientSecretSealed = deps.box.encrypt(input.consoleClientSecret, consoleSecretContext(orgId));
    else if (input.consoleClientSecret === undefined) {
      // Re-saving the form without retyping the secret keeps it, but only for the same client.
      const current = await repo.findIdpConfig(deps.store.db, orgId);
      if (current?.consoleClientId === consoleClientId) consoleClientSecretSealed = current.consoleClientSecretSealed;
    }
  }
  const values: repo.IdpConfigValues = {
    orgId,
    issuer: input.issuer,
    jwksUri: input.jwksUri,
    audience: input.audience,
    roleClaim: input.roleClaim ?? 'role',
    emailClaim: input.emailClaim ?? 'email',
    defaultRole: input.defaultRole ?? null,
    consoleClientId,
    consoleClientSecretSealed,
    updatedAt: new Date(),
  };
  try {
    const row = await deps.store.db.transaction(async (tx) => {
      const saved = await repo.upsertIdpConfig(tx, values);
      await recordAudit(tx, { orgId, action: 'idp.updated', actor, targetType: 'idp', details: { issuer: input.issuer } });
      return saved;
    });
    deps.idpVerifier.forget(orgId);
    return row;
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
    if (code === '23505') throw conflict('idp_in_use', 'Another org already uses this issuer with this audience.');
    throw err;
  }
}

export async function deleteIdpConfig(deps: IdpServiceDeps, orgId: string, actor: Actor): Promise<void> {
  const deleted = await deps.store.db.transaction(async (tx) => {
    const done = await repo.deleteIdpConfig(tx, orgId);
    if (done) await recordAudit(tx, { orgId, action: 'idp.deleted', actor, targetType: 'idp' });
    return done;
  });
  if (!deleted) throw notFound('idp_not_configured', 'This org has no identity provider configured.');
  deps.idpVerifier.forget(orgId);
}
