/**
 * A member signs in with e-mail and password, or with a passkey, on every door that takes one (the console, the org's
 * MCP authorization server): the failed-sign-in limits first (per account and address, per address, per account; the
 * anti-lockout rule), then the hash or the signature; an unknown e-mail, a member without a password and a suspended
 * one are checked against a dummy hash and get the answer a wrong password gets; every refused passkey gets one answer
 * too. The member's principal is read from the store on every request.
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
/** Every refused passkey gets these words: an unknown, removed or foreign one, a replay, another origin, a suspended member. */
export const PASSKEY_REFUSED = 'This passkey was not accepted. Try again, or sign in with your password.';

/** A refused credential: the one wrong answer (the reason goes to the audit row only). */
export class WrongCredentials extends Error {
  constructor(readonly reason?: string) {
    super('wrong credentials');
  }
}

export interface MemberSignInDeps {
  db: Db;
  authFailures: AuthFailureLimiter;
}

/** `orgId` null: no org has the slug asked for; the same limits, work and answer as for an unknown e-mail. */
export async function signInMember(deps: MemberSignInDeps, orgId: string | null, email: string, password: string, address: string): Promise<MemberSignIn> {
  const subject = { client: accountKey(orgId, email), address };
  return limitedSignIn(deps, orgId, subject, { method: 'password', wrong: WRONG_CREDENTIALS }, () => checkPassword(deps, orgId, email, password));
}

/** The failed-sign-in limits' name of a member's account, whichever credential is tried: password and passkey count together. */
export const accountKey = (orgId: string | null, email: string) => `member:${orgId ?? 'none'}:${emailKey(email).slice(0, 320)}`;

/**
 * One sign-in attempt under the limits (refused attempts check nothing), audited in `auditOrgId` (the member as the
 * actor when it succeeds); a WrongCredentials from `check` is the one wrong answer.
 */
export async function limitedSignIn(
  deps: MemberSignInDeps,
  auditOrgId: string | null,
  subject: { client: string; address: string },
  how: { method: 'password' | 'passkey'; wrong: string },
  check: () => Promise<MemberRow>,
): Promise<MemberSignIn> {
  const audit = (input: Omit<Parameters<typeof recordAudit>[1], 'orgId'>) =>
    auditOrgId ? recordAudit(deps.db, { orgId: auditOrgId, ...input }) : Promise.resolve();
  const failed = (outcome: 'denied' | 'refused', reason?: string) =>
    audit({
      action: 'member.sign_in_failed',
      actor: { type: 'anonymous', id: null },
      outcome,
      details: { method: how.method, ...(reason ? { reason } : {}) },
    });
  try {
    const member = await limitedAttempt(
      deps.authFailures,
      subject,
      check,
      (err) => (err instanceof WrongCredentials ? 'failed' : 'unjudged'),
      async (refusal) => {
        countLimitRefusal('auth_failures');
        throw Object.assign(new Error(refusalMessage(refusal)), { retryAfterSeconds: refusal.retryAfterSeconds });
      },
    );
    await updateMember(deps.db, member.orgId, member.id, { lastSignInAt: new Date() });
    const details = { method: how.method };
    await recordAudit(deps.db, {
      orgId: member.orgId,
      action: 'member.signed_in',
      actor: { type: 'user', id: member.email },
      targetType: 'member',
      targetId: member.id,
      details,
    });
    return { kind: 'ok', member };
  } catch (err) {
    if (err instanceof WrongCredentials) {
      await failed('denied', err.reason);
      return { kind: 'wrong', message: how.wrong };
    }
    if (err instanceof HashingBusy) return { kind: 'refused', message: err.message, retryAfterSeconds: 2 };
    const retryAfterSeconds = (err as { retryAfterSeconds?: number }).retryAfterSeconds;
    if (typeof retryAfterSeconds === 'number') {
      await failed('refused');
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
