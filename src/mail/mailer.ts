/**
 * Outgoing mail over SMTP (nodemailer), configured by TOOLGATE_SMTP_URL (decision 0385): one transport per gateway,
 * every SMTP step bounded by TOOLGATE_SMTP_TIMEOUT_MS. Callers send from background jobs, never on a response path;
 * a failure is thrown to them as a MailError whose text names no address, link or credential.
 */
import type { Transporter } from 'nodemailer';
import type { Config } from '../config.ts';

interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /** The server as it may be printed: scheme, host and port, never the user or the password. */
  readonly describe: string;
  close(): void;
}

/** Why a mail was not sent, in words safe for a log line: a class of failure and the SMTP code, nothing else. */
export class MailError extends Error {
  constructor(readonly reason: 'refused' | 'timeout' | 'rejected' | 'failed') {
    super(`mail not sent (${reason})`);
  }
}

/** TOOLGATE_SMTP_URL as it may be printed: the user and the password are replaced (they are secrets). */
export function describeSmtpUrl(smtpUrl: string): string {
  const url = new URL(smtpUrl);
  const port = url.port || (url.protocol === 'smtps:' ? '465' : '587');
  return `${url.protocol}//${url.hostname}:${port}${url.username || url.password ? ' (with credentials)' : ''}`;
}

function reasonOf(err: unknown): MailError['reason'] {
  // A socket error comes as ESOCKET with the system's code kept in originalCode.
  const code = (err as { originalCode?: string }).originalCode ?? (err as { code?: string }).code;
  if (code === 'ETIMEDOUT' || code === 'ETIMEOUT' || code === 'ESOCKET_TIMEOUT') return 'timeout';
  if (code === 'ECONNECTION' || code === 'ECONNREFUSED' || code === 'EDNS') return 'refused';
  if (code === 'EENVELOPE' || code === 'EMESSAGE' || code === 'EAUTH') return 'rejected';
  return 'failed';
}

/** The gateway's mailer, or null when TOOLGATE_SMTP_URL is not set (no mail is sent; links are only shown). */
export function createMailer(config: Pick<Config, 'smtpUrl' | 'smtpFrom' | 'smtpTimeoutMs'>): Mailer | null {
  if (!config.smtpUrl || !config.smtpFrom) return null;
  const timeout = config.smtpTimeoutMs;
  const smtpUrl = config.smtpUrl;
  // nodemailer (~9 MB resident) is loaded with the first mail, not at start (decision 0410).
  let transport: Promise<Transporter> | null = null;
  const transportOf = (): Promise<Transporter> =>
    (transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        url: smtpUrl,
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
        dnsTimeout: timeout,
        // nodemailer logs nothing of its own: its lines could carry addresses and the message.
        logger: false,
        debug: false,
      } as Parameters<typeof nodemailer.createTransport>[0]),
    ));
  const from = config.smtpFrom;
  return {
    describe: describeSmtpUrl(config.smtpUrl),
    async send(message) {
      try {
        // One address as an object: nodemailer does not split it at commas into more recipients.
        await (await transportOf()).sendMail({ from, to: { name: '', address: message.to }, subject: message.subject, text: message.text });
      } catch (err) {
        throw new MailError(reasonOf(err));
      }
    },
    close: () => void transport?.then((t) => t.close()).catch(() => undefined),
  };
}
