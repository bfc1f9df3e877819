/**
 * One wire connection at a time to an in-process PGlite (a single session), handed over instead of refused.
 *
 * PGLiteSocketServer with maxConnections 1 answers a second connection with "Too many connections" and closes it, and
 * its own handler lets go of a closed connection only a turn of the event loop later. The connector's call pool keeps
 * an idle connection for seconds while validation, introspection or a second pool connection may ask for another:
 * without this gate each of those failed as "the connection was closed unexpectedly". Here a new connection waits
 * its turn (first come, first served); the connection holding the session is closed for it as soon as it is idle
 * (its last answer ended in ReadyForQuery outside a transaction and nothing was sent since) and has been for
 * HANDOVER_IDLE_MS, so a pool that is working keeps its connection and an idle one gives way.
 */
import type net from 'node:net';

/**
 * How long the holder must have been idle before a waiting connection takes the session from it: a call that holds
 * its connection across statements (postgres.js `reserve`) is idle between them for far less.
 */
const HANDOVER_IDLE_MS = 300;
/** How long a connection waits for its turn before it fails (the pool's connect timeout is of the same order). */
const WAIT_LIMIT_MS = 10_000;
/** ReadyForQuery with status idle ('I'): the end of every answer outside a transaction. */
const READY_IDLE = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

interface Holder {
  /** Null until its connection is open. */
  socket: net.Socket | null;
  /** Since when the connection has been idle; null while a request is unanswered or it is in a transaction. */
  idleSince: number | null;
  handoverTimer: ReturnType<typeof setTimeout> | null;
}

function newHolder(): Holder {
  return { socket: null, idleSince: null, handoverTimer: null };
}

export class OneConnectionAtATime {
  #holder: Holder | null = null;
  #waiters: Array<{ grant: () => void; fail: (err: Error) => void }> = [];

  /** @param serverBusy whether the server still counts a connection (its handler lets go a turn after the close). */
  constructor(private readonly serverBusy: () => boolean) {}

  /** Waits for the session, then opens a connection with `open` and holds the session until that socket closes. */
  async connect(open: () => Promise<net.Socket>): Promise<net.Socket> {
    if (this.#holder || this.#waiters.length > 0) await this.#wait();
    else this.#holder = newHolder();
    const holder = this.#holder!;
    let socket: net.Socket;
    try {
      await this.#serverReleased();
      socket = await open();
    } catch (err) {
      this.#release(holder);
      throw err;
    }
    holder.socket = socket;
    this.#watch(holder, socket);
    return socket;
  }

  #wait(): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve();
        },
        fail: reject,
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error('the sample database is busy: no connection became free in time'));
      }, WAIT_LIMIT_MS);
      timer.unref?.();
      this.#waiters.push(waiter);
      this.#handOverWhenIdle();
    });
  }

  /** The server's handler of the previous connection lets go a turn of the event loop after it closed. */
  async #serverReleased(): Promise<void> {
    for (let waited = 0; this.serverBusy() && waited < 2_000; waited += 2) await new Promise((r) => setTimeout(r, 2));
  }

  #watch(holder: Holder, socket: net.Socket): void {
    // Anything the client sends is a request until the answer's ReadyForQuery says the session is idle again.
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...args: unknown[]) => {
      holder.idleSince = null;
      return write(...args);
    }) as typeof socket.write;
    let tail = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      tail = Buffer.concat([tail, chunk]).subarray(-READY_IDLE.length);
      holder.idleSince = tail.equals(READY_IDLE) ? Date.now() : null;
      if (holder.idleSince !== null) this.#handOverWhenIdle();
    });
    socket.once('close', () => this.#release(holder));
  }

  /** Closes the holder for a waiting connection once it has been idle for HANDOVER_IDLE_MS. */
  #handOverWhenIdle(): void {
    const holder = this.#holder;
    if (!holder?.socket || this.#waiters.length === 0 || holder.idleSince === null) return;
    const socket = holder.socket;
    if (holder.handoverTimer) clearTimeout(holder.handoverTimer);
    const due = holder.idleSince + HANDOVER_IDLE_MS - Date.now();
    holder.handoverTimer = setTimeout(
      () => {
        holder.handoverTimer = null;
        if (this.#holder === holder && holder.idleSince !== null && Date.now() - holder.idleSince >= HANDOVER_IDLE_MS) socket.destroy();
        else this.#handOverWhenIdle();
      },
      Math.max(0, due),
    );
  }

  #release(holder: Holder): void {
    if (this.#holder !== holder) return;
    if (holder.handoverTimer) clearTimeout(holder.handoverTimer);
    const next = this.#waiters.shift();
    this.#holder = next ? newHolder() : null;
    next?.grant();
  }

  /** Fails every waiting connection (the database closes for good). */
  close(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.fail(new Error('the sample database is closed'));
  }
}
