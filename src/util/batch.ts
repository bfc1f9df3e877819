/**
 * The one micro-batcher of the hot path (group commit; docs/decisions/0180-one-micro-batcher.md): the items asked
 * for during one turn of the event loop go out as ONE call, sent after the I/O of that turn (setImmediate), and each
 * caller is answered with its own result or error. While `maxInFlight` batches are out, new items wait for the next
 * batch, which goes out when one comes back: under load batches grow with the round trip, not the number of callers. A batch that reaches `maxItems` (or
 * `flush()` is called) goes out at once, whatever is in flight.
 *
 * The send function answers every item of its batch, in order, with a result or an `ItemFailure` (that item alone
 * fails); one `ItemFailure` for the whole batch, or a throw, fails every item. It may answer early through `answer`
 * and go on with work of its own: the batch holds its in-flight place until the send function's promise settles.
 * The send function is called synchronously when the batch is cut, so state its owner keeps for the batch being
 * filled (limits/quota-lease.ts: one lease per org and period; audit/recorder.ts: the refusals that ride along) is taken there.
 *
 * Used by: audit/recorder.ts (tool-call rows), limits/quota-lease.ts (quota grants and blocks), limits/burst.ts (Redis windows),
 * mcp/lookup.ts (API-key lookups), mcp/auth-cache.ts (auth-epoch reads).
 */

/** One item's failure in a batch's answer: that caller's promise rejects with `error`. */
export class ItemFailure {
  constructor(readonly error: unknown) {}
}

/** Items added after `close()`. */
export class BatcherClosedError extends Error {
  constructor() {
    super('batcher closed');
  }
}

/** A batch's answer: one entry per item, in the items' order, or one failure for all of them. */
export type BatchAnswer<R> = ArrayLike<R | ItemFailure> | ItemFailure;

export interface BatcherOptions<I, R> {
  /**
   * Sends one batch (never empty unless `moreWork` asked for it). Resolves with the batch's answer, or calls `answer`
   * first and resolves later (with nothing): the next batch may start only then. A throw before an answer fails every item.
   */
  send: (items: I[], answer: (answer: BatchAnswer<R>) => void) => Promise<BatchAnswer<R> | undefined>;
  /** Items per batch at most; a batch that reaches it goes out at once. */
  maxItems?: number;
  /** Batches out at once (default 1); Infinity: every turn's batch goes out at once. */
  maxInFlight?: number;
  /** Work outside the items that is worth a batch of its own (checked when scheduling and after each batch). */
  moreWork?: () => boolean;
  /** When a batch comes back and items are waiting: send them at once instead of after the turn's I/O. */
  resendAtOnce?: boolean;
}

type Resolve<R> = (value: R) => void;
type Reject = (err: unknown) => void;

const none = () => false;

export class MicroBatcher<I, R> {
  private items: I[] = [];
  private resolves: Resolve<R>[] = [];
  private rejects: Reject[] = [];
  private scheduled = false;
  private inFlight = 0;
  private closed = false;
  private readonly idle = new Set<() => void>();
  private readonly send: BatcherOptions<I, R>['send'];
  private readonly maxItems: number;
  private readonly maxInFlight: number;
  private readonly moreWork: () => boolean;
  private readonly resendAtOnce: boolean;
  private readonly flushNow = () => {
    this.scheduled = false;
    this.flush();
  };

  constructor(options: BatcherOptions<I, R>) {
    this.send = options.send;
    this.maxItems = options.maxItems ?? Number.POSITIVE_INFINITY;
    this.maxInFlight = options.maxInFlight ?? 1;
    this.moreWork = options.moreWork ?? none;
    this.resendAtOnce = options.resendAtOnce ?? false;
  }

  /** Items waiting for their batch (not counting those out). */
  get pending(): number {
    return this.items.length;
  }

  /** Batches out now. */
  get out(): number {
    return this.inFlight;
  }

  /** Adds `item` to the next batch; resolves with its own result. */
  add(item: I): Promise<R> {
    if (this.closed) return Promise.reject(new BatcherClosedError());
    return new Promise<R>((resolve, reject) => {
      this.items.push(item);
      this.resolves.push(resolve);
      this.rejects.push(reject);
      if (this.items.length >= this.maxItems) this.flush();
      else this.schedule();
    });
  }

  /** Asks for a batch after this turn's I/O without an item (work that `moreWork` reports). */
  schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(this.flushNow);
  }

  /** Resolves once nothing is waiting or out (every item added so far is answered and every send settled). */
  async drain(): Promise<void> {
    while (this.items.length || this.inFlight || this.moreWork()) {
      if (this.inFlight) await new Promise<void>((resolve) => this.idle.add(resolve));
      else this.flush();
    }
  }

  /** Refuses new items (BatcherClosedError), sends what is waiting and resolves once it is answered. */
  close(): Promise<void> {
    this.closed = true;
    return this.drain();
  }

  /** Sends what is waiting now, whatever is in flight (a batch its owner considers full). */
  flush(): void {
    if (this.items.length === 0 && !this.moreWork()) return;
    const items = this.items;
    const resolves = this.resolves;
    const rejects = this.rejects;
    this.items = [];
    this.resolves = [];
    this.rejects = [];
    this.inFlight++;
    let answered = false;
    const answer = (result: BatchAnswer<R>) => {
      if (answered) return;
      answered = true;
      settle(resolves, rejects, result);
    };
    let sent: Promise<BatchAnswer<R> | undefined>;
    try {
      sent = this.send(items, answer);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent.then(
      (result) => {
        if (!answered) answer(result ?? new ItemFailure(new Error('batch not answered')));
        this.done();
      },
      (err: unknown) => {
        answer(new ItemFailure(err));
        this.done();
      },
    );
  }

  private done(): void {
    this.inFlight--;
    if (this.items.length || this.moreWork()) {
      if (this.resendAtOnce && !this.scheduled) this.flush();
      else this.schedule();
    }
    if (this.inFlight === 0 && this.idle.size) {
      const idle = [...this.idle];
      this.idle.clear();
      for (const wake of idle) wake();
    }
  }
}

function settle<R>(resolves: Resolve<R>[], rejects: Reject[], result: BatchAnswer<R>): void {
  if (result instanceof ItemFailure) {
    for (const reject of rejects) reject(result.error);
    return;
  }
  for (let i = 0; i < resolves.length; i++) {
    const r = result[i];
    if (r instanceof ItemFailure) rejects[i]!(r.error);
    else if (i < result.length) resolves[i]!(r as R);
    else rejects[i]!(new Error('batch answered fewer items than it had'));
  }
}
