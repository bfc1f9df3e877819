/**
 * The token endpoint of an org's authorization server (public clients, PKCE): the authorization_code grant (one-time
 * codes; a replayed code revokes its grant) and the refresh_token grant (each refresh token works once and is
 * replaced; presenting a used one revokes the whole family, i.e. the grant), and revocation (RFC 7009).
 */
import { createHash } from 'node:crypto';
import { recordAudit } from '../../audit/repository.ts';
import { OAuthError } from '../../errors.ts';
import type { Db } from '../../store/db.ts';
import { hashSecret, randomSecret } from '../../util/crypto.ts';
import type { TokenSigner } from '../signing.ts';
import { issuerOf, type OrgRef } from './authorize.ts';
import { resourceUrl } from './metadata.ts';
import { findCode, findGrant, findRefreshToken, insertRefreshToken, revokeGrant, touchGrant, useCode, useRefreshToken, type GrantRow } from './repository.ts';

/** Access tokens of a person are short-lived; the refresh token (rotating) carries the sign-in on. */
const SIGNED_IN_ACCESS_TTL_SECONDS = 600;
const REFRESH_TTL_MS = 30 * 24 * 3600_000;

export interface TokenDeps {
  db: Db;
  signer: Pick<TokenSigner, 'issueSignedIn' | 'verifySignedIn'>;
  publicUrl: string;
}

export interface TokenForm {
  grant_type?: string;
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  client_id?: string;
  refresh_token?: string;
  resource?: string;
  scope?: string;
}

const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);

async function issueTokens(deps: TokenDeps, org: OrgRef, grant: GrantRow, scopes: string[]) {
  const accessToken = await deps.signer.issueSignedIn({
    issuer: issuerOf(deps.publicUrl, org.slug),
    audience: resourceUrl(deps.publicUrl, org.slug),
    orgId: org.id,
    grantId: grant.id,
    subject: grant.subject,
    clientId: grant.clientId,
    scopes,
    ttlSeconds: SIGNED_IN_ACCESS_TTL_SECONDS,
  });
  const refreshToken = randomSecret(32);
  await insertRefreshToken(deps.db, { tokenHash: hashSecret(refreshToken), grantId: grant.id, expiresAt: new Date(Date.now() + REFRESH_TTL_MS) });
  await touchGrant(deps.db, grant.id);
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: SIGNED_IN_ACCESS_TTL_SECONDS,
    refresh_token: refreshToken,
    scope: scopes.join(' '),
  };
}

/** Revokes a grant for a detected attack (a replayed code, a reused refresh token), audited. */
async function revokeFamily(db: Db, grant: GrantRow, reason: 'code_replayed' | 'refresh_token_reused'): Promise<void> {
  if (!(await revokeGrant(db, grant.id, reason))) return;
  await recordAudit(db, {
    orgId: grant.orgId,
    action: 'mcp_grant.revoked',
    actor: { type: 'system', id: null },
    targetType: 'mcp_grant',
    targetId: grant.id,
    outcome: 'denied',
    details: { reason, client_id: grant.clientId },
  });
}

function checkResource(deps: TokenDeps, org: OrgRef, form: TokenForm): void {
  if (form.resource !== undefined && form.resource !== resourceUrl(deps.publicUrl, org.slug)) {
    throw new OAuthError(400, 'invalid_target', "The resource must be this org's MCP endpoint.");
  }
}

async function exchangeCode(deps: TokenDeps, org: OrgRef, form: TokenForm) {
  if (!form.code || !form.client_id || !form.redirect_uri) throw new OAuthError(400, 'invalid_request', 'code, client_id and redirect_uri are required.');
  if (!form.code_verifier) throw new OAuthError(400, 'invalid_request', 'code_verifier is required (PKCE).');
  checkResource(deps, org, form);
  const codeHash = hashSecret(form.code);
  const code = await findCode(deps.db, codeHash);
  const grant = code ? await findGrant(deps.db, code.grantId) : undefined;
  if (!code || !grant || grant.orgId !== org.id) throw invalidGrant('The authorization code is invalid.');
  if (code.usedAt || !(await useCode(deps.db, codeHash))) {
    // RFC 6749 section 4.1.2: a code used twice revokes what was issued on it.
    await revokeFamily(deps.db, grant, 'code_replayed');
    throw invalidGrant('The authorization code was already used; the tokens issued on it are revoked.');
  }
  if (code.expiresAt.getTime() <= Date.now()) throw invalidGrant('The authorization code has expired.');
  if (grant.revokedAt) throw invalidGrant('The authorization was revoked.');
  if (grant.clientId !== form.client_id) throw invalidGrant('The authorization code was issued to another client.');
  if (code.redirectUri !== form.redirect_uri) throw invalidGrant('redirect_uri differs from the one of the authorization request.');
  const challenge = createHash('sha256').update(form.code_verifier).digest('base64url');
  if (challenge !== code.codeChallenge) throw invalidGrant('The code_verifier does not match the code_challenge.');
  return issueTokens(deps, org, grant, grant.scopes);
}

async function refresh(deps: TokenDeps, org: OrgRef, form: TokenForm) {
  if (!form.refresh_token || !form.client_id) throw new OAuthError(400, 'invalid_request', 'refresh_token and client_id are required.');
  checkResource(deps, org, form);
  const tokenHash = hashSecret(form.refresh_token);
  const row = await findRefreshToken(deps.db, tokenHash);
  const grant = row ? await findGrant(deps.db, row.grantId) : undefined;
  if (!row || !grant || grant.orgId !== org.id || grant.clientId !== form.client_id) throw invalidGrant('The refresh token is invalid.');
  if (grant.revokedAt) throw invalidGrant('The authorization was revoked.');
  if (row.usedAt || !(await useRefreshToken(deps.db, tokenHash))) {
    await revokeFamily(deps.db, grant, 'refresh_token_reused');
    throw invalidGrant('The refresh token was already used; the authorization is revoked.');
  }
  if (row.expiresAt.getTime() <= Date.now()) throw invalidGrant('The refresh token has expired.');
  const asked = form.scope?.trim() ? [...new Set(form.scope.trim().split(/\s+/))] : grant.scopes;
  if (asked.some((s) => !grant.scopes.includes(s))) throw new OAuthError(400, 'invalid_scope', 'A refresh may only narrow the granted scopes.');
  return issueTokens(deps, org, grant, asked);
}

export async function exchangeToken(deps: TokenDeps, org: OrgRef, form: TokenForm) {
  if (form.grant_type === 'authorization_code') return exchangeCode(deps, org, form);
  if (form.grant_type === 'refresh_token') return refresh(deps, org, form);
  throw new OAuthError(400, 'unsupported_grant_type', 'Only authorization_code and refresh_token are supported here.');
}

/** RFC 7009: a refresh token or an access token of this org ends its grant; anything else is quietly ignored. */
export async function revokeToken(deps: TokenDeps, org: OrgRef, token: string, clientId: string | undefined): Promise<void> {
  let grantId: string | null = null;
  const row = await findRefreshToken(deps.db, hashSecret(token));
  if (row) grantId = row.grantId;
  else {
    try {
      const claims = await deps.signer.verifySignedIn(token, issuerOf(deps.publicUrl, org.slug), resourceUrl(deps.publicUrl, org.slug));
      grantId = claims.tg_grant;
    } catch {
      return;
    }
  }
  const grant = await findGrant(deps.db, grantId);
  // A client may revoke only its own tokens (RFC 7009 section 2.1); a public client names itself by client_id.
  if (!grant || grant.orgId !== org.id || (clientId !== undefined && clientId !== grant.clientId)) return;
  if (await revokeGrant(deps.db, grant.id, 'revoked_by_client')) {
    await recordAudit(deps.db, {
      orgId: org.id,
      action: 'mcp_grant.revoked',
      actor: { type: 'oauth_client', id: grant.clientId },
      targetType: 'mcp_grant',
      targetId: grant.id,
      details: { reason: 'revoked_by_client' },
    });
  }
}
