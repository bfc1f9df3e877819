/** The org's own identity provider (BYOIDP): get, set, delete. */
import { eq } from 'drizzle-orm';
import { recordAudit } from '../audit/repository.ts';
import { actorOf } from '../auth/principal.ts';
import { conflict, json, notFound, unprocessable } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import { assertOutboundUrl, OutboundRefusedError } from '../net/outbound.ts';
import { idpConfigs } from '../store/schema.ts';
import type { IdpConfigInput } from '../../generated/client/types.gen.ts';

function view(row: typeof idpConfigs.$inferSelect) {
  return {
    issuer: row.issuer,
    jwks_uri: row.jwksUri,
    audience: row.audience,
    role_claim: row.roleClaim,
    email_claim: row.emailClaim,
    default_role: row.defaultRole as 'contributor' | 'admin' | 'finance' | null,
    updated_at: row.updatedAt.toISOString(),
  };
}

export const getIdpConfig: Handler = async ({ principal, deps }) => {
  const [row] = await deps.store.db.select().from(idpConfigs).where(eq(idpConfigs.orgId, principal!.orgId));
  if (!row) throw notFound('idp_not_configured', 'This org has no identity provider configured.');
  return json(view(row));
};

export const setIdpConfig: Handler = async ({ principal, deps, body }: RequestContext<IdpConfigInput>) => {
  try {
    await assertOutboundUrl(body.jwks_uri, deps.outbound, { requireHttps: true });
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw unprocessable('jwks_uri_refused', `The JWKS URI is not allowed: ${err.message}`);
    throw err;
  }
  const values = {
    orgId: principal!.orgId,
    issuer: body.issuer,
    jwksUri: body.jwks_uri,
    audience: body.audience,
    roleClaim: body.role_claim ?? 'role',
    emailClaim: body.email_claim ?? 'email',
    defaultRole: body.default_role ?? null,
    updatedAt: new Date(),
  };
  try {
    const row = await deps.store.db.transaction(async (tx) => {
      const [saved] = await tx.insert(idpConfigs).values(values).onConflictDoUpdate({ target: idpConfigs.orgId, set: values }).returning();
      await recordAudit(tx, { orgId: principal!.orgId, action: 'idp.updated', actor: actorOf(principal), targetType: 'idp', details: { issuer: body.issuer } });
      return saved!;
    });
    deps.idpVerifier.forget(principal!.orgId);
    return json(view(row));
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
    if (code === '23505') throw conflict('idp_in_use', 'Another org already uses this issuer with this audience.');
    throw err;
  }
};

export const deleteIdpConfig: Handler = async ({ principal, deps }) => {
  const deleted = await deps.store.db.transaction(async (tx) => {
    const rows = await tx.delete(idpConfigs).where(eq(idpConfigs.orgId, principal!.orgId)).returning({ orgId: idpConfigs.orgId });
    if (rows.length) await recordAudit(tx, { orgId: principal!.orgId, action: 'idp.deleted', actor: actorOf(principal), targetType: 'idp' });
    return rows.length > 0;
  });
  if (!deleted) throw notFound('idp_not_configured', 'This org has no identity provider configured.');
  deps.idpVerifier.forget(principal!.orgId);
  return json({ deleted: true });
};
