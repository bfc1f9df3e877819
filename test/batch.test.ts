// The hot path's micro-batcher (src/util/batch.ts) on its own: what joins a batch, who gets which answer, the
// in-flight bound, the size cap, early answers, and drain/close.
import { describe, expect, test } from 'bun:test';
import { BatcherClosedError, ItemFailure, MicroBatcher, type BatchAnswer } from '../src/util/batch.ts';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A send function that records each batch and answers when the test says so. */
function recorder<I>() {
  const batches: I[][] = [];
  const gates: Array<(answer: BatchAnswer<string>) => void> = [];
  const send = (items: I[]) => {
    batches.push(items);
    return new Promise<BatchAnswer<string>>((resolve) => gates.push(resolve));
  };
  return { batches, gates, send };
}

describe('MicroBatcher', () => {
  test('the items of one turn go out as one batch, after the turn; each caller gets its own result, in order', async () => {
    const sent: number[][] = [];
    const b = new MicroBatcher<number, string>({
      send: async (items) => {
        sent.push(items);
        return items.map((n) => `r${n}`);
      },
    });
    const answers = [1, 2, 3].map((n) => b.add(n));
    expect(sent).toEqual([]); // nothing goes out before the turn's I/O
    expect(b.pending).toBe(3);
    expect(await Promise.all(answers)).toEqual(['r1', 'r2', 'r3']);
    expect(sent).toEqual([[1, 2, 3]]);
    // The next turn makes a batch of its own.
    expect(await b.add(4)).toBe('r4');
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });

  test('an ItemFailure fails its item alone; a throw or one ItemFailure for all fails every item', async () => {
    let mode: 'item' | 'throw' | 'all' = 'item';
    const b = new MicroBatcher<number, number>({
      send: async (items) => {
        if (mode === 'throw') throw new Error('store down');
        if (mode === 'all') return new ItemFailure(new Error('all of them'));
        return items.map((n) => (n % 2 ? new ItemFailure(new Error(`odd ${n}`)) : n * 10));
      },
    });
    const mixed = await Promise.allSettled([1, 2, 3, 4].map((n) => b.add(n)));
    expect(mixed.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['odd 1', 20, 'odd 3', 40]);
    mode = 'throw';
    const thrown = await Promise.allSettled([1, 2].map((n) => b.add(n)));
    expect(thrown.map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual(['store down', 'store down']);
    mode = 'all';
    const all = await Promise.allSettled([5, 6].map((n) => b.add(n)));
    expect(all.map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual(['all of them', 'all of them']);
    // A synchronous throw of the send function is a failed batch too, and the batcher goes on.
    const sync = new MicroBatcher<number, number>({
      send: (items) => {
        if (items[0] === 0) throw new Error('sync');
        return Promise.resolve(items);
      },
    });
    await expect(sync.add(0)).rejects.toThrow('sync');
    expect(await sync.add(7)).toBe(7);
  });

  test('an answer with fewer entries than items fails the ones left out, never leaves them hanging', async () => {
    const b = new MicroBatcher<number, number>({ send: async (items) => items.slice(0, 1) });
    const r = await Promise.allSettled([1, 2].map((n) => b.add(n)));
    expect(r.map((x) => x.status)).toEqual(['fulfilled', 'rejected']);
  });

  test('while maxInFlight batches are out, new items wait and go out together when one comes back', async () => {
    const r = recorder<number>();
    const b = new MicroBatcher<number, string>({ send: r.send, maxInFlight: 1 });
    const first = b.add(1);
    await turn();
    expect(r.batches).toEqual([[1]]);
    const later = [b.add(2), b.add(3)];
    await turn();
    await turn();
    b.add(4).catch(() => {});
    await turn();
    expect(r.batches.length).toBe(1); // held back while the first is out
    expect(b.out).toBe(1);
    r.gates[0]!(['a']);
    expect(await first).toBe('a');
    await turn();
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
    r.gates[1]!(['b', 'c', 'd']);
    expect(await Promise.all(later)).toEqual(['b', 'c']);
  });

  test('maxInFlight 2 lets two batches out; resendAtOnce sends the waiting ones as soon as one comes back', async () => {
    const r = recorder<number>();
    const b = new MicroBatcher<number, string>({ send: r.send, maxInFlight: 2, resendAtOnce: true });
    void b.add(1);
    await turn();
    void b.add(2);
    await turn();
    void b.add(3);
    await turn();
    expect(r.batches).toEqual([[1], [2]]);
    r.gates[0]!(['x']);
    await Promise.resolve();
    await Promise.resolve();
    // Sent within the same turn, before any setImmediate.
    expect(r.batches).toEqual([[1], [2], [3]]);
    r.gates[1]!(['y']);
    r.gates[2]!(['z']);
    await b.drain();
  });

  test('a batch that reaches maxItems goes out at once, even with a batch out', async () => {
    const r = recorder<number>();
    const b = new MicroBatcher<number, string>({ send: r.send, maxItems: 3 });
    for (const n of [1, 2, 3, 4, 5, 6, 7]) void b.add(n);
    expect(r.batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(b.out).toBe(2);
    for (const g of r.gates) g(['a', 'b', 'c']);
    await turn();
    await turn();
    expect(r.batches).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    r.gates[2]!(['d']);
    await b.drain();
  });

  test('flush() sends what is waiting at once; the send function is called synchronously when the batch is cut', async () => {
    const r = recorder<string>();
    let cutAt = '';
    let state = 'filling';
    const b = new MicroBatcher<string, string>({
      send: (items) => {
        cutAt = state;
        return r.send(items);
      },
    });
    void b.add('a');
    void b.add('b');
    b.flush(); // even with nothing out, it does not wait for the turn
    state = 'after';
    expect(cutAt).toBe('filling');
    expect(r.batches).toEqual([['a', 'b']]);
    void b.add('c');
    b.flush(); // and with a batch out, past maxInFlight
    expect(b.out).toBe(2);
    r.gates[0]!(['1', '2']);
    r.gates[1]!(['3']);
    await b.drain();
  });

  test('answer() settles the callers early; the next batch waits until the send function has finished', async () => {
    let finish!: () => void;
    const sent: number[][] = [];
    const b = new MicroBatcher<number, number>({
      send: async (items, answer) => {
        sent.push(items);
        answer(items.map((n) => -n));
        if (items[0] === 1) await new Promise<void>((resolve) => (finish = resolve));
        return undefined;
      },
    });
    expect(await b.add(1)).toBe(-1); // answered before the send function is done
    const second = b.add(2);
    await turn();
    await turn();
    expect(sent).toEqual([[1]]); // still out
    finish();
    expect(await second).toBe(-2);
    expect(sent).toEqual([[1], [2]]);
    // A throw after the answer fails nobody; a send that never answers fails its items.
    const late = new MicroBatcher<number, number>({
      send: async (items, answer) => {
        answer(items);
        throw new Error('after');
      },
    });
    expect(await late.add(3)).toBe(3);
    const mute = new MicroBatcher<number, number>({ send: async () => undefined });
    await expect(mute.add(1)).rejects.toThrow('batch not answered');
  });

  test('moreWork makes a batch with no items; schedule() asks for one', async () => {
    let work = 0;
    const sent: number[][] = [];
    const b = new MicroBatcher<number, number>({
      moreWork: () => work > 0,
      send: async (items) => {
        sent.push(items);
        work = Math.max(0, work - 1);
        return items;
      },
    });
    work = 2;
    b.schedule();
    await b.drain();
    expect(sent).toEqual([[], []]);
    expect(work).toBe(0);
  });

  test('drain waits for what is waiting and what is out; close sends the rest, then refuses new items', async () => {
    const r = recorder<number>();
    const b = new MicroBatcher<number, string>({ send: r.send });
    const a = b.add(1);
    await turn();
    const c = b.add(2); // waits behind the batch out
    let drained = false;
    const draining = b.drain().then(() => (drained = true));
    await turn();
    expect(drained).toBe(false);
    r.gates[0]!(['one']);
    await turn();
    await turn();
    expect(drained).toBe(false);
    expect(r.batches).toEqual([[1], [2]]);
    r.gates[1]!(['two']);
    await draining;
    expect([await a, await c]).toEqual(['one', 'two']);

    const d = b.add(3);
    const closing = b.close();
    expect(r.batches[2]).toEqual([3]); // close flushes at once, without waiting for the turn
    r.gates[2]!(['three']);
    await closing;
    expect(await d).toBe('three');
    await expect(b.add(4)).rejects.toBeInstanceOf(BatcherClosedError);
  });
});
