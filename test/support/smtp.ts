/**
 * A real SMTP server in process (smtp-server, from the nodemailer authors) on a loopback port: the gateway's mailer
 * talks SMTP to it over TCP as it would to a provider, and the suite reads what arrived. Not a mock: the transport,
 * the protocol and the message encoding are the real ones. Also a listener that accepts and never greets (an SMTP
 * server that hangs) and a port nobody listens on (one that is down).
 */
import { createServer, type Server } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  /** The text part, decoded from its transfer encoding. */
  text: string;
  raw: string;
}

export interface TestSmtp {
  port: number;
  /** TOOLGATE_SMTP_URL for it (with the user and password it requires, when it requires one). */
  url: string;
  received: ReceivedMail[];
  /** The mails to `to` that arrived; waits up to `timeoutMs` for at least `count`. */
  mailsTo(to: string, count?: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

function decodeQuotedPrintable(text: string): string {
  const bytes = text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

function parseMail(raw: string, from: string, to: string[]): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  const text =
    encoding === 'quoted-printable'
      ? decodeQuotedPrintable(body)
      : encoding === 'base64'
        ? Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
        : body;
  return { from, to, subject: header('Subject'), text, raw };
}

export async function startSmtp(auth: { user: string; pass: string } | null = null): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS to offer (the test has no certificate a client would trust).
    disabledCommands: auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !auth,
    allowInsecureAuth: true,
    logger: false,
    onAuth(credentials, _session, callback) {
      if (auth && credentials.username === auth.user && credentials.password === auth.pass) callback(null, { user: auth.user });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        received.push(
          parseMail(
            Buffer.concat(chunks).toString('latin1'),
            from,
            session.envelope.rcptTo.map((r) => r.address),
          ),
        );
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  const credentials = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : '';
  return {
    port,
    url: `smtp://${credentials}127.0.0.1:${port}`,
    received,
    async mailsTo(to, count = 1, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      const mine = () => received.filter((m) => m.to.some((address) => address.toLowerCase() === to.toLowerCase()));
      while (mine().length < count && Date.now() < deadline) await Bun.sleep(20);
      return mine();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A TCP listener that accepts connections and never says a word: an SMTP server that hangs. */
export async function startSilentListener(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port nobody listens on (bound, then freed): connections to it are refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
