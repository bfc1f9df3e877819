/**
 * A member signs in with a discoverable passkey (decision 0380), through the same door as the password
 * (auth/member-sign-in.ts limitedSignIn: the failed-sign-in limits first, one answer for every refusal, the member the
 * audit actor). The passkey that signed in is returned with the member, so what it starts ends when it is removed.
 */
import { findPasskey, claimedCredential, PasskeyRefused, verifySignIn } from '../members/passkeys.ts';
import type { PasskeyRow } from '../members/passkeys/repository.ts';
import { findMember, type MemberRow } from '../members/repository.ts';
import { sha256Hex } from '../util/crypto.ts';
import { accountKey, limitedSignIn, PASSKEY_REFUSED, WrongCredentials, type MemberSignIn, type MemberSignInDeps } from './member-sign-in.ts';

export interface PasskeySignInDeps extends MemberSignInDeps {
  publicUrl: string;
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
): Promise<MemberSignIn & { passkeyId?: string }> {
  const credentialId = claimedCredential(response);
  const found = credentialId ? await findPasskey(deps.db, credentialId) : undefined;
  const passkey = found && (orgId === null || found.orgId === orgId) ? found : undefined;
  const member = passkey ? await findMember(deps.db, passkey.orgId, passkey.memberId) : undefined;
  const client = member ? accountKey(member.orgId, member.email) : `passkey:${orgId ?? 'any'}:${sha256Hex(credentialId ?? '').slice(0, 32)}`;
  const outcome = await limitedSignIn(deps, orgId ?? member?.orgId ?? null, { client, address }, { method: 'passkey', wrong: PASSKEY_REFUSED }, () =>
    checkPasskey(deps, response, binding, passkey, member),
  );
  return outcome.kind === 'ok' && passkey ? { ...outcome, passkeyId: passkey.id } : outcome;
}

async function checkPasskey(deps: PasskeySignInDeps, response: unknown, binding: string, passkey?: PasskeyRow, member?: MemberRow): Promise<MemberRow> {
  if (!passkey || !member) throw new WrongCredentials('unknown_credential');
  try {
    await verifySignIn({ db: deps.db, publicUrl: deps.publicUrl }, response, binding, passkey, member);
  } catch (err) {
    if (err instanceof PasskeyRefused) throw new WrongCredentials(err.reason);
    throw err;
  }
  // Checked after the signature, as the password's status is: a suspended member's passkey says no more than a wrong one.
  if (member.status !== 'active') throw new WrongCredentials('member');
  return member;
}
