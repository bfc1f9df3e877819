/**
 * A TCP proxy in front of a real PostgreSQL or MariaDB server that counts what the client sends, message by message:
 * statements (PostgreSQL `Q` simple queries and `E` Executes; MySQL commands by their command byte) and round trips
 * (each time the client writes after the server last answered: a pipelined batch is one). Used by
 * test/read-path.test.ts and bench/read-path.ts to count what one governed call costs at the wire. Plain TCP only
 * (the connectors under test use tls: disable), so the messages are readable.
 */
import net from 'node:net';

export type Protocol = 'postgresql' | 'mysql';

/** What the client sent, since the counter was last reset. */
export interface WireCounts {
  /** Client writes that followed an answer of the server: the round trips the client waited for. */
  roundTrips: number;
  /** PostgreSQL: simple queries plus Executes. MySQL: commands (COM_QUERY, COM_STMT_EXECUTE, COM_RESET_CONNECTION...). */
  statements: number;
  /** Per kind: PostgreSQL message type letters (Q P B D E S C H), MySQL command names. */
  byKind: Record<string, number>;
  /** The SQL texts of PostgreSQL `Q`/`P` messages and MySQL COM_QUERY / COM_STMT_PREPARE, in order. */
  texts: string[];
}

const MYSQL_COMMANDS: Record<number, string> = {
  1: 'QUIT',
  2: 'INIT_DB',
  3: 'QUERY',
  14: 'PING',
  17: 'CHANGE_USER',
  22: 'STMT_PREPARE',
  23: 'STMT_EXECUTE',
  25: 'STMT_CLOSE',
  26: 'STMT_RESET',
  31: 'RESET_CONNECTION',
};

/** Reads one connection's client stream message by message. */
class ClientParser {
  private buf: Buffer = Buffer.alloc(0);
  private started = false;
  constructor(
    private readonly protocol: Protocol,
    private readonly counts: () => WireCounts,
  ) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    for (;;) {
      const used = this.protocol === 'postgresql' ? this.pg() : this.my();
      if (used === 0) return;
      this.buf = this.buf.subarray(used);
    }
  }

  private count(kind: string, statement: boolean, text?: string): void {
    const c = this.counts();
    c.byKind[kind] = (c.byKind[kind] ?? 0) + 1;
    if (statement) c.statements++;
    if (text !== undefined) c.texts.push(text);
  }

  /** One PostgreSQL message: the startup packet (untyped) first, then typed messages. */
  private pg(): number {
    const b = this.buf;
    if (!this.started) {
      if (b.length < 4) return 0;
      const len = b.readUInt32BE(0);
      if (b.length < len) return 0;
      this.started = true;
      return len;
    }
    if (b.length < 5) return 0;
    const len = b.readUInt32BE(1);
    if (b.length < len + 1) return 0;
    const type = String.fromCharCode(b[0]!);
    const body = b.subarray(5, len + 1);
    if (type === 'Q') this.count('Q', true, body.toString('utf8', 0, body.indexOf(0)));
    else if (type === 'P') {
      const nameEnd = body.indexOf(0);
      this.count('P', false, body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1)));
    } else if (type === 'E') this.count('E', true);
    else if (type !== 'p') this.count(type, false); // p: password; not a statement
    return len + 1;
  }

  /** One MySQL packet: a command when its sequence id is 0 (the handshake answers have higher ones). */
  private my(): number {
    const b = this.buf;
    if (b.length < 4) return 0;
    const len = b.readUIntLE(0, 3);
    if (b.length < len + 4) return 0;
    if (b[3] === 0 && len > 0) {
      const name = MYSQL_COMMANDS[b[4]!] ?? `0x${b[4]!.toString(16)}`;
      const text = name === 'QUERY' || name === 'STMT_PREPARE' ? b.toString('utf8', 5, len + 4) : undefined;
      // STMT_CLOSE has no answer and runs nothing; QUIT ends the session.
      this.count(name, name !== 'STMT_CLOSE' && name !== 'QUIT', text);
    }
    return len + 4;
  }
}

export interface WireCounter {
  port: number;
  /** The counts since the last reset (a copy), and starts a new count. */
  take(): WireCounts;
  close(): Promise<void>;
}

const empty = (): WireCounts => ({ roundTrips: 0, statements: 0, byKind: {}, texts: [] });

/** Starts a counting proxy on 127.0.0.1 (a free port) in front of `target`. */
export async function startWireCounter(protocol: Protocol, target: { host: string; port: number }): Promise<WireCounter> {
  let counts = empty();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const parser = new ClientParser(protocol, () => counts);
    // The server answered since the client last wrote: the client's next write is a new round trip.
    let answered = true;
    client.on('data', (chunk: Buffer) => {
      if (answered) counts.roundTrips++;
      answered = false;
      parser.push(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      answered = true;
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    take: () => {
      const c = counts;
      counts = empty();
      return c;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
