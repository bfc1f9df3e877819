/**
 * A passkey registered while following an invitation or password-reset link (decision 0380): the options are asked for
 * before the link is used (the challenge bound to the link's hash), the answer is checked before the link is followed,
 * and the passkey is stored once the link has set the password.
 */
import type { Actor } from '../audit/repository.ts';
import { notFound } from '../errors.ts';
import type { Queryable } from '../store/db.ts';
import { hashSecret } from '../util/crypto.ts';
import { registrationOptions, savePasskey, verifyRegistration, type NewPasskey, type PasskeyDeps, type PasskeyView } from './passkeys.ts';
import { findLiveLink } from './passkeys/repository.ts';
import { findMember, findMemberByEmail, type MemberRow } from './repository.ts';

const LINK_INVALID = 'This link is unknown, used or expired: ask an admin of the org for a new one.';

/** The member a live link is for (the link stays unused), or the link's one answer. */
async function linkMember(db: Queryable, token: string): Promise<{ member: MemberRow; binding: string }> {
  const tokenHash = hashSecret(token);
  const link = await findLiveLink(db, tokenHash, new Date());
  const member = link ? await findMember(db, link.orgId, link.memberId) : undefined;
  if (!link || !member || member.status === 'suspended') throw notFound('link_invalid', LINK_INVALID);
  // The challenge is bound to this link: accepted only when this link is followed.
  return { member, binding: `link:${tokenHash}` };
}

/** Options to register a passkey while following a link (before the link is used). */
export async function linkPasskeyOptions(deps: PasskeyDeps, token: string) {
  const { member, binding } = await linkMember(deps.db, token);
  return { options: await registrationOptions(deps, member, binding) };
}

/** The browser's answer to `linkPasskeyOptions`, checked while the link is still live; `saveLinkPasskey` stores it. */
export async function checkLinkPasskey(deps: PasskeyDeps, token: string, response: unknown): Promise<NewPasskey> {
  const { binding } = await linkMember(deps.db, token);
  return verifyRegistration(deps, binding, response);
}

/** Stores a checked passkey for the member who just followed the link (found by the org and e-mail it answered). */
export async function saveLinkPasskey(
  db: Queryable,
  done: { org_id: string; email: string },
  passkey: NewPasskey,
  name: string | undefined,
): Promise<PasskeyView> {
  const member = await findMemberByEmail(db, done.org_id, done.email);
  if (!member) throw notFound('link_invalid', LINK_INVALID);
  const actor: Actor = { type: 'user', id: member.email };
  return savePasskey(db, member, passkey, name, actor);
}
