/**
 * The hot path's micro-batcher (src/util/batch.ts) against the inline batching it replaced (the shape of the former
 * mcp/lookup.ts KeyLookupBatcher and limits/quota-batch.ts QuotaBatcher), with the store left out: a send that answers
 * at once, so what is measured is the batching itself. Each round: `callers` items added per turn, `turns` turns,
 * time and CPU per item; rounds interleave old and new (A/B), so a busy machine slows both alike.
 *
 *   bun bench/batch.ts [--callers=64] [--turns=2000] [--rounds=7]
 */
import { type ItemFailure, MicroBatcher } from '../src/util/batch.ts';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const CALLERS = Number(arg('callers') ?? 64);
const TURNS = Number(arg('turns') ?? 2000);
const ROUNDS = Number(arg('rounds') ?? 7);

interface Adder {
  add(key: string): Promise<boolean>;
}

/** The former inline pattern: waiters in an array, one setImmediate per turn, MAX_IN_FLIGHT out. */
class InlineBatcher implements Adder {
  private pending: Array<{ key: string; resolve: (v: boolean) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;
  private inFlight = 0;

  add(key: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, resolve, reject });
      if (!this.scheduled && this.inFlight < 1) this.schedule();
    });
  }

  private schedule(): void {
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.inFlight++;
    Promise.resolve(batch.map((w) => w.key.length > 0))
      .then((answers) => {
        for (const [i, w] of batch.entries()) w.resolve(answers[i]!);
      })
      .catch((err: unknown) => {
        for (const w of batch) w.reject(err);
      })
      .finally(() => {
        this.inFlight--;
        if (this.pending.length > 0 && !this.scheduled) this.schedule();
      });
  }
}

/** The former keyed pattern (quota): one entry per key with its waiters, counted at add time. */
class InlineKeyed implements Adder {
  private pending = new Map<string, { calls: number; waiters: Array<(v: boolean) => void> }>();
  private scheduled = false;

  add(key: string): Promise<boolean> {
    return new Promise((resolve) => {
      let entry = this.pending.get(key);
      if (!entry) {
        entry = { calls: 0, waiters: [] };
        this.pending.set(key, entry);
      }
      entry.calls += 1;
      entry.waiters.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    void Promise.resolve(batch.map((e) => e.calls)).then((granted) => {
      for (const [i, entry] of batch.entries()) for (const [n, w] of entry.waiters.entries()) w(n < granted[i]!);
    });
  }
}

const plain = (): Adder => {
  const b = new MicroBatcher<string, boolean>({ send: async (items) => items.map((k) => k.length > 0) });
  return { add: (key) => b.add(key) };
};

/** As limits/quota-batch.ts does: its own counter per key for the batch being filled, each item its counter. */
const keyed = (): Adder => {
  let open = new Map<string, { calls: number; left: number }>();
  const b = new MicroBatcher<{ calls: number; left: number }, boolean>({
    send: async (items) => {
      const counters = open;
      open = new Map();
      const granted = await Promise.resolve(counters);
      for (const counter of granted.values()) counter.left = counter.calls;
      const answers: Array<boolean | ItemFailure> = new Array(items.length);
      for (let i = 0; i < items.length; i++) {
        const counter = items[i]!;
        answers[i] = counter.left > 0;
        counter.left -= 1;
      }
      return answers;
    },
  });
  return {
    add(key) {
      let counter = open.get(key);
      if (!counter) open.set(key, (counter = { calls: 0, left: 0 }));
      counter.calls += 1;
      const answer = b.add(counter);
      if (open.size >= 500) b.flush();
      return answer;
    },
  };
};

const KEYS = Array.from({ length: 8 }, (_, i) => `org-${i}`);

async function round(make: () => Adder): Promise<{ ns: number; cpuNs: number }> {
  const adder = make();
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let t = 0; t < TURNS; t++) {
    const answers: Promise<boolean>[] = new Array(CALLERS);
    for (let c = 0; c < CALLERS; c++) answers[c] = adder.add(KEYS[c % KEYS.length]!);
    await Promise.all(answers);
  }
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const items = TURNS * CALLERS;
  return { ns: (ms * 1e6) / items, cpuNs: ((used.user + used.system) * 1e3) / items };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const pairs: Array<[string, () => Adder, () => Adder]> = [
  ['one item, one answer (lookup, recorder)', () => new InlineBatcher(), plain],
  ['keyed, first N of a key (quota)', () => new InlineKeyed(), keyed],
];
for (const [name, before, after] of pairs) {
  await round(before);
  await round(after); // warm-up
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    a.push((await round(before)).cpuNs);
    b.push((await round(after)).cpuNs);
  }
  console.log(
    `${name}: ${CALLERS} per turn, CPU ns per item, median of ${ROUNDS}: inline ${median(a).toFixed(0)}, MicroBatcher ${median(b).toFixed(0)} (rounds: inline ${a.map((x) => x.toFixed(0)).join(' ')}; new ${b.map((x) => x.toFixed(0)).join(' ')})`,
  );
}
