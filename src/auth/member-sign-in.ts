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
import { emailKey, findMember, findMemberByEmail, updateMember, type MemberRow, type PasskeyRow } from '../members/repository.ts';
import { claimedCredential, findPasskey, PasskeyRefused, verifySignIn, type PasskeyDeps } from '../members/passkeys.ts';
import { sha256Hex, type SecretBox } from '../util/crypto.ts';

export type MemberSignIn =
  | { kind: 'ok'; member: MemberRow }
  | { kind: 'wrong'; message: string }
  | { kind: 'refused'; message: string; retryAfterSeconds: number };

const WRONG_CREDENTIALS = 'The e-mail or the password is wrong.';
/** Every refused passkey gets these words: an unknown, removed or foreign one, a replay, another origin, a suspended member. */
const PASSKEY_REFUSED = 'This passkey was not accepted. Try again, or sign in with your password.';

class WrongCredentials extends Error {
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
const accountKey = (orgId: string | null, email: string) => `member:${orgId ?? 'none'}:${emailKey(email).slice(0, 320)}`;

/**
 * One sign-in attempt under the limits (refused attempts check nothing), audited in `auditOrgId` (the member as the
 * actor when it succeeds); a WrongCredentials from `check` is the one wrong answer.
 */
async function limitedSignIn(
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

export interface PasskeySignInDeps extends MemberSignInDeps {
  publicUrl: string;
  box: SecretBox;
}

/**
 * A member signs in with a discoverable passkey: `orgId` is the org whose page asked (null: the console, any org);
 * `binding` is what the challenge was issued to. The claimed credential names the account the limits count against
 * (password and passkey failures of a member count together); an unknown credential, one of another org, one whose
 * member is not active, a replayed or foreign challenge, another origin and a bad signature get one answer.
 */
export async function signInMemberWithPasskey(
  deps: PasskeySignInDeps,
  orgId: string | null,
  response: unknown,
  binding: string,
  address: string,
): Promise<MemberSignIn> {
  const credentialId = claimedCredential(response);
  const found = credentialId ? await findPasskey(deps.db, credentialId) : undefined;
  const passkey = found && (orgId === null || found.orgId === orgId) ? found : undefined;
  const member = passkey ? await findMember(deps.db, passkey.orgId, passkey.memberId) : undefined;
  const client = member ? accountKey(member.orgId, member.email) : `passkey:${orgId ?? 'any'}:${sha256Hex(credentialId ?? '').slice(0, 32)}`;
  return limitedSignIn(deps, orgId ?? member?.orgId ?? null, { client, address }, { method: 'passkey', wrong: PASSKEY_REFUSED }, () =>
    checkPasskey(deps, response, binding, passkey, member),
  );
}

async function checkPasskey(deps: PasskeySignInDeps, response: unknown, binding: string, passkey?: PasskeyRow, member?: MemberRow): Promise<MemberRow> {
  if (!passkey || !member) throw new WrongCredentials('unknown_credential');
  const passkeyDeps: PasskeyDeps = { db: deps.db, publicUrl: deps.publicUrl, box: deps.box };
  try {
    await verifySignIn(passkeyDeps, response, binding, passkey, member);
  } catch (err) {
    if (err instanceof PasskeyRefused) throw new WrongCredentials(err.reason);
    throw err;
  }
  // Checked after the signature, as the password's status is: a suspended member's passkey says no more than a wrong one.
  if (member.status !== 'active') throw new WrongCredentials('member');
  return member;
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
