/**
 * What the browser carries through a sign-in (sealed cookies: the request while the person is at the IdP, then the
 * consent with its CSRF token), the consent page, and the grant and one-time code a consent creates.
 */
import { recordAudit } from '../../audit/repository.ts';
import type { Db } from '../../store/db.ts';
import { hashSecret, randomSecret, type SecretBox } from '../../util/crypto.ts';
import type { LoginTransaction } from '../idp/oidc-client.ts';
import type { AuthorizationRequest, OrgRef } from './authorize.ts';
import { insertCode, insertGrant } from './repository.ts';
import { MCP_SCOPE } from '../credentials.ts';

interface Person {
  subject: string;
  email: string | null;
  roles: string[];
  /** The IdP claims row filters bind (`:caller.<claim>`), as of sign-in. */
  attributes: Record<string, string>;
  /** The member's passkey this sign-in used: its removal revokes the grant (decision 0380). */
  passkeyId?: string;
}

export interface SignInTransaction {
  org: OrgRef;
  request: AuthorizationRequest;
  login: LoginTransaction;
  expiresAt: number;
}

export interface ConsentTransaction {
  org: OrgRef;
  request: AuthorizationRequest;
  person: Person;
  csrf: string;
  expiresAt: number;
}

const SIGN_IN_TTL_MS = 10 * 60_000;
const CONSENT_TTL_MS = 10 * 60_000;
/** One-time codes live a minute (RFC 6749 section 4.1.2 recommends at most ten). */
const CODE_TTL_MS = 60_000;
const MAX_SEALED = 8000;

export const SIGN_IN_COOKIE = 'tg_mcp_signin';
export const CONSENT_COOKIE = 'tg_mcp_consent';

export function sealSignIn(box: SecretBox, tx: Omit<SignInTransaction, 'expiresAt'>): string {
  return box.encrypt(JSON.stringify({ ...tx, expiresAt: Date.now() + SIGN_IN_TTL_MS }), 'mcp_signin');
}

export function sealConsent(box: SecretBox, input: Omit<ConsentTransaction, 'expiresAt' | 'csrf'>): { sealed: string; csrf: string; tx: ConsentTransaction } {
  const tx: ConsentTransaction = { ...input, csrf: randomSecret(24), expiresAt: Date.now() + CONSENT_TTL_MS };
  return { sealed: box.encrypt(JSON.stringify(tx), 'mcp_consent'), csrf: tx.csrf, tx };
}

function open<T extends { expiresAt: number; org: OrgRef }>(box: SecretBox, sealed: string | null, context: string, orgId: string): T | null {
  if (!sealed || sealed.length > MAX_SEALED) return null;
  try {
    const tx = JSON.parse(box.decrypt(sealed, context)) as T;
    return tx.expiresAt > Date.now() && tx.org.id === orgId ? tx : null;
  } catch {
    return null;
  }
}

export const openSignIn = (box: SecretBox, sealed: string | null, orgId: string) => open<SignInTransaction>(box, sealed, 'mcp_signin', orgId);
export const openConsent = (box: SecretBox, sealed: string | null, orgId: string) => open<ConsentTransaction>(box, sealed, 'mcp_consent', orgId);

/** The scopes the person ticked, kept only where the client asked for them (or for one connector of `mcp:call`). */
export function narrowScopes(requested: string[], ticked: string[]): string[] {
  const allowed = (s: string) => requested.includes(s) || (requested.includes(MCP_SCOPE) && s.startsWith(`${MCP_SCOPE}:`));
  const granted = [...new Set(ticked.filter(allowed))];
  // Everything covers each connector: the narrower ones say nothing more.
  return granted.includes(MCP_SCOPE) ? [MCP_SCOPE] : granted;
}

/** Records the consent as a grant and returns the one-time code for it (kept only as its hash). */
export async function grantConsent(db: Db, tx: ConsentTransaction, scopes: string[]): Promise<string> {
  const code = randomSecret(32);
  await db.transaction(async (t) => {
    const grant = await insertGrant(t, {
      orgId: tx.org.id,
      clientId: tx.request.client.clientId,
      clientKind: tx.request.client.kind,
      clientName: tx.request.client.name,
      subject: tx.person.subject,
      email: tx.person.email,
      roles: tx.person.roles,
      attributes: tx.person.attributes,
      scopes,
      passkeyId: tx.person.passkeyId ?? null,
    });
    await insertCode(t, {
      codeHash: hashSecret(code),
      grantId: grant.id,
      redirectUri: tx.request.redirectUri,
      codeChallenge: tx.request.codeChallenge,
      expiresAt: new Date(Date.now() + CODE_TTL_MS),
    });
    await recordAudit(t, {
      orgId: tx.org.id,
      action: 'mcp_grant.created',
      actor: { type: 'user', id: tx.person.email ?? tx.person.subject },
      targetType: 'mcp_grant',
      targetId: grant.id,
      details: { client_id: tx.request.client.clientId, scope: scopes.join(' ') },
    });
  });
  return code;
}
