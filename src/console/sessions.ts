/**
 * Console sessions, kept server-side: the browser holds only a random id in an HttpOnly, SameSite=Strict cookie; the
 * row holds the id's hash, the org, and the sealed bearer the console's REST calls are sent with.
 */
import { createHmac } from 'node:crypto';
import type { Db } from '../store/db.ts';
import { deleteExpiredSessions, deleteSessionRow, findLiveSession, insertSession } from './repository.ts';
import { hashSecret, randomSecret, type SecretBox } from '../util/crypto.ts';

type SessionKind = 'idp_user' | 'oauth_client' | 'member';

export interface ConsoleSession {
  orgId: string;
  kind: SessionKind;
  /** The IdP subject, the OAuth client id, or the member id. */
  actor: string;
  /** The credential REST calls are sent with (the IdP access token, or a gateway token with org:manage). */
  bearer: string;
  expiresAt: Date;
  /** The member's passkey this session signed in with: removing it ends the session (decision 0380). */
  passkeyId?: string;
}

const sealContext = (idHash: string) => `console_session:${idHash}`;

/**
 * The CSRF token of a session: derived from its secret id, so the server needs no second secret and a page can
 * only learn it from GET /console/session (same origin, the cookie attached).
 */
export function csrfTokenOf(sessionId: string): string {
  return createHmac('sha256', sessionId).update('toolgate console csrf').digest('base64url');
}

/** Creates a session and returns its id (the cookie value); expired rows are swept on the way. */
export async function createSession(db: Db, box: SecretBox, session: ConsoleSession): Promise<string> {
  const id = randomSecret(32);
  const idHash = hashSecret(id);
  await deleteExpiredSessions(db, new Date());
  await insertSession(db, {
    idHash,
    orgId: session.orgId,
    kind: session.kind,
    actor: session.actor,
    bearerSealed: box.encrypt(session.bearer, sealContext(idHash)),
    expiresAt: session.expiresAt,
    passkeyId: session.passkeyId ?? null,
  });
  return id;
}

/** The live session of a cookie value, or null (unknown, expired, or not a session id at all). */
export async function findSession(db: Db, box: SecretBox, sessionId: string | null): Promise<ConsoleSession | null> {
  if (!sessionId || sessionId.length > 100) return null;
  const idHash = hashSecret(sessionId);
  const row = await findLiveSession(db, idHash, new Date());
  if (!row) return null;
  return {
    orgId: row.orgId,
    kind: row.kind as SessionKind,
    actor: row.actor,
    bearer: box.decrypt(row.bearerSealed, sealContext(idHash)),
    expiresAt: row.expiresAt,
  };
}

export async function deleteSession(db: Db, sessionId: string | null): Promise<void> {
  if (!sessionId || sessionId.length > 100) return;
  await deleteSessionRow(db, hashSecret(sessionId));
}
