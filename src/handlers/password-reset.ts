/**
 * `POST /members/password-reset` (decision 0386): the door limits, then one answer for everyone; the look-up of the
 * org and the member, the link and the mail run after the answer (members/password-reset.ts), so neither the body,
 * the status nor the time tells whether the e-mail is a member's.
 */
import { AppError, json } from '../errors.ts';
import { emailKey } from '../members/repository.ts';
import { mailPasswordReset } from '../members/password-reset.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import { findOrgBySlug } from '../orgs/repository.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import type { Handler, RequestContext } from './context.ts';

const TAKEN = {
  message:
    'If this e-mail belongs to an active member of the org, a link to set a new password is on its way. It works once, for 30 minutes. No mail? Ask an admin of the org.',
};

export const requestMemberPasswordReset: Handler = async ({ request, deps, body }: RequestContext<{ org: string; email: string }>) => {
  if (!deps.mailer) {
    throw new AppError(409, 'mail_not_configured', 'This gateway sends no mail: ask an admin of your org for a password-reset link (Members page).');
  }
  // Every request counts, as a failed sign-in does, in the buckets of 0133: this e-mail from this address, this
  // address (shared with the sign-in doors), this e-mail from anywhere. The key does not depend on the answer.
  const subject = { client: `reset:${body.org.toLowerCase()}:${emailKey(body.email)}`, address: sourceAddressOf(request, deps.config.trustedProxies) };
  const decision = await deps.authFailures.begin(subject);
  if (!decision.allowed) {
    countLimitRefusal('auth_failures');
    const retryAfter = String(decision.retryAfterSeconds);
    throw new AppError(429, 'rate_limited', `Too many password-reset requests; retry after ${retryAfter} seconds.`, { 'retry-after': retryAfter });
  }
  await deps.authFailures.failed(subject);
  const resetDeps = { db: deps.store.db, publicUrl: deps.config.publicUrl, mailer: deps.mailer, jobs: deps.jobs, log: deps.log };
  deps.jobs.run(async () => {
    try {
      const org = await findOrgBySlug(deps.store.db, body.org);
      if (org && !org.suspendedAt) await mailPasswordReset(resetDeps, org, body.email);
    } catch (err) {
      deps.log.error('password reset request failed', { error: err instanceof Error ? err.name : 'unknown' });
    }
  });
  return json(TAKEN, 202, { 'cache-control': 'no-store' });
};
