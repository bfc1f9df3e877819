/** Invitation and admin-issued reset links also go by mail where SMTP is configured (decision 0385), after the answer. */
import { sendLinkMail } from '../members/link-mail.ts';
import { findMember } from '../members/repository.ts';
import type { LinkView } from '../members/service.ts';
import { findOrgById } from '../orgs/repository.ts';
import type { AppDeps } from '../deps.ts';

/** No-op without SMTP. The org and the member are read in the job, so the answer waits for nothing. */
export function mailMemberLink(deps: AppDeps, orgId: string, memberId: string, link: LinkView): void {
  if (!deps.mailer) return;
  deps.jobs.run(async () => {
    const [org, member] = await Promise.all([findOrgById(deps.store.db, orgId), findMember(deps.store.db, orgId, memberId)]);
    if (org && member) await sendLinkMail(deps, { kind: link.purpose === 'invitation' ? 'invitation' : 'admin_reset', org, member, link });
  });
}
