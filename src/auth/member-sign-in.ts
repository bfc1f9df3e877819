/**
 * A member signs in with e-mail and password, on every door that takes one (the console, the org's MCP authorization
 * server): the failed-sign-in limits first (per e-mail of the org and per address, the anti-lockout rule), then the
 * hash; an unknown e-mail, a member without a password and a suspended one are checked against a dummy hash and get
 * the answer a wrong password gets. The member's principal is read from the store on every request.
 */
import { recordAudit } from '../audit/repository.ts';
import { limitedAttempt, refusalMessage, type AuthFailureLimiter } from '../limits/auth-failures.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import type { Principal, Role } from '../principal.ts';
import type { Db } from '../store/db.ts';
import { dummyHash, HashingBusy, MAX_PASSWORD_LENGTH, verifyPassword } from '../members/password.ts';
import { emailKey, findMember, findMemberByEmail, updateMember, type MemberRow } from '../members/repository.ts';

export type MemberSignIn =
  | { kind: 'ok'; member: MemberRow }
  | { kind: 'wrong'; message: string }
  | { kind: 'refused'; message: string; retryAfterSeconds: number };

const WRONG_CREDENTIALS = 'The e-mail or the password is wrong.';

class WrongCredentials extends Error {}

export interface MemberSignInDeps {
  db: Db;
  authFailures: AuthFailureLimiter;
}

/** `orgId` null: no org has the slug asked for; the same limits, work and answer as for an unknown e-mail. */
export async function signInMember(deps: MemberSignInDeps, orgId: string | null, email: string, password: string, address: string): Promise<MemberSignIn> {
  const subject = { client: `member:${orgId ?? 'none'}:${emailKey(email).slice(0, 320)}`, address };
  const audit = (input: Omit<Parameters<typeof recordAudit>[1], 'orgId'>) => (orgId ? recordAudit(deps.db, { orgId, ...input }) : Promise.resolve());
  try {
    const member = await limitedAttempt(
      deps.authFailures,
      subject,
      () => checkPassword(deps, orgId, email, password),
      (err) => (err instanceof WrongCredentials ? 'failed' : 'unjudged'),
      async (refusal) => {
        countLimitRefusal('auth_failures');
        throw Object.assign(new Error(refusalMessage(refusal)), { retryAfterSeconds: refusal.retryAfterSeconds });
      },
    );
    await updateMember(deps.db, member.orgId, member.id, { lastSignInAt: new Date() });
    await audit({ action: 'member.signed_in', actor: { type: 'user', id: member.email }, targetType: 'member', targetId: member.id });
    return { kind: 'ok', member };
  } catch (err) {
    if (err instanceof WrongCredentials) {
      await audit({ action: 'member.sign_in_failed', actor: { type: 'anonymous', id: null }, outcome: 'denied' });
      return { kind: 'wrong', message: WRONG_CREDENTIALS };
    }
    if (err instanceof HashingBusy) return { kind: 'refused', message: err.message, retryAfterSeconds: 2 };
    const retryAfterSeconds = (err as { retryAfterSeconds?: number }).retryAfterSeconds;
    if (typeof retryAfterSeconds === 'number') {
      await audit({ action: 'member.sign_in_failed', actor: { type: 'anonymous', id: null }, outcome: 'refused' });
      return { kind: 'refused', message: (err as Error).message, retryAfterSeconds };
    }
    throw err;
  }
}

async function checkPassword(deps: MemberSignInDeps, orgId: string | null, email: string, password: string): Promise<MemberRow> {
  const member = orgId && email.length <= 320 ? await findMemberByEmail(deps.db, orgId, email) : undefined;
  const usable = member?.status === 'active' && member.passwordHash !== null ? member : undefined;
  // The same work whoever asks: a dummy hash for an unknown e-mail, a member without a password or a suspended one.
  const matches = await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH + 1), usable?.passwordHash ?? (await dummyHash()));
  if (!usable || !matches || password.length > MAX_PASSWORD_LENGTH) throw new WrongCredentials();
  return usable;
}

/** The principal of an active member of `orgId` (read now: a suspension counts on the next request), or null. */
export async function memberPrincipal(db: Db, orgId: string, memberId: string, connectorIds: string[] | null): Promise<Principal | null> {
  const member = await findMember(db, orgId, memberId);
  if (member?.status !== 'active') return null;
  return {
    orgId,
    kind: 'idp_user',
    actorId: `member:${member.id}`,
    email: member.email,
    roles: member.roles as Role[],
    orgLevel: false,
    connectorIds,
    attributes: member.attributes,
  };
}
