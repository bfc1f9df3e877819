/**
 * Mailing a member's one-time link (decision 0385): an invitation, an admin-issued reset, a forgotten password. Sent
 * from a background job, never on the response path; a failure is logged with the kind, the org and the member's
 * id and the failure's class, never the address, the link or its token, and changes no answer.
 */
import type { Mailer } from '../mail/mailer.ts';
import { MailError } from '../mail/mailer.ts';
import type { JobTracker } from '../util/jobs.ts';
import type { Logger } from '../util/log.ts';
import type { LinkView } from './service.ts';

type LinkMailKind = 'invitation' | 'admin_reset' | 'forgot_password';

export interface LinkMailDeps {
  mailer: Mailer | null;
  jobs: JobTracker;
  log: Logger;
}

export interface LinkMail {
  kind: LinkMailKind;
  org: { id: string; name: string; slug: string };
  member: { id: string; email: string };
  link: LinkView;
}

const until = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

function messageOf({ kind, org, member, link }: LinkMail) {
  const where = `${org.name} (${org.slug})`;
  const ignore = 'If you did not expect this mail, ignore it: nothing changes until the link is followed.';
  if (kind === 'invitation') {
    return {
      subject: `You are invited to ${org.name} on Toolgate`,
      text: `An admin of ${where} invited ${member.email} to its Toolgate gateway.\n\nChoose your password with this link (it works once, until ${until(link.expires_at)}):\n${link.url}\n\n${ignore}\n`,
    };
  }
  const who = kind === 'admin_reset' ? `An admin of ${where} issued` : `Someone (we hope you) asked for`;
  return {
    subject: `Set a new Toolgate password for ${org.name}`,
    text: `${who} a link to set a new password for ${member.email} at ${where}.\n\nSet it with this link (it works once, until ${until(link.expires_at)}):\n${link.url}\n\nSetting a new password signs you out of the console and of every MCP client.\n${ignore}\n`,
  };
}

/** Sends the mail now (the caller is a background job); true when the server took it. Never throws. */
export async function sendLinkMail(deps: LinkMailDeps, mail: LinkMail): Promise<boolean> {
  if (!deps.mailer) return false;
  const about = { kind: mail.kind, org_id: mail.org.id, member_id: mail.member.id };
  try {
    await deps.mailer.send({ to: mail.member.email, ...messageOf(mail) });
    deps.log.info('member link mailed', about);
    return true;
  } catch (err) {
    deps.log.error('member link mail not sent', { ...about, reason: err instanceof MailError ? err.reason : 'failed' });
    return false;
  }
}
