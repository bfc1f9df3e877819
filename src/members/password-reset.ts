/**
 * A member who forgot their password (decision 0386): after the answer, an active member of the org gets a one-time
 * reset link by mail (30 minutes, the newest one only, at most 3 an hour); anyone else gets nothing, and the caller
 * cannot tell which. Following the link is `acceptLink`: the password is replaced and the member's sessions end.
 */
import { recordAudit } from '../audit/repository.ts';
import type { Db } from '../store/db.ts';
import { sendLinkMail, type LinkMailDeps } from './link-mail.ts';
import { countLinksSince, findMemberByEmail } from './repository.ts';
import { issueLink } from './service.ts';

/** How long a forgot-password link works: long enough to read the mail, short enough that an old inbox is no key. */
const FORGOT_LINK_TTL_MS = 30 * 60_000;
/** Reset links (mailed or admin-issued) per member per hour beyond which no further mail goes out. */
const RESET_MAILS_PER_HOUR = 3;

export interface PasswordResetDeps extends LinkMailDeps {
  db: Db;
  publicUrl: string;
}

export type ResetOutcome = 'mailed' | 'not_sent' | 'no_member' | 'capped';

/** Runs after the answer: the look-up, the cap, the link and the mail. */
export async function mailPasswordReset(deps: PasswordResetDeps, org: { id: string; name: string; slug: string }, email: string): Promise<ResetOutcome> {
  const member = await findMemberByEmail(deps.db, org.id, email);
  if (member?.status !== 'active' || member.passwordHash === null) return 'no_member';
  const link = await deps.db.transaction(async (tx) => {
    if ((await countLinksSince(tx, member.id, 'password_reset', new Date(Date.now() - 3600_000))) >= RESET_MAILS_PER_HOUR) return null;
    const issued = await issueLink(tx, deps.publicUrl, member, 'password_reset', FORGOT_LINK_TTL_MS);
    await recordAudit(tx, {
      orgId: org.id,
      action: 'member.password_reset_requested',
      actor: { type: 'anonymous', id: null },
      targetType: 'member',
      targetId: member.id,
    });
    return issued;
  });
  if (!link) {
    deps.log.info('password reset mail skipped: hourly cap', { org_id: org.id, member_id: member.id });
    return 'capped';
  }
  return (await sendLinkMail(deps, { kind: 'forgot_password', org, member, link })) ? 'mailed' : 'not_sent';
}
