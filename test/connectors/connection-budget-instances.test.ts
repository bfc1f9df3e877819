/**
 * Issue 42 item 4 (decision 0409, amending 0323): gateway instances sharing one PostgreSQL store share the connector
 * connections of the store's server. Each instance is its own process (the budget is per process); the store's
 * reserve is set so that the capacity is 12 (max_connections - reserve). The server's own count (pg_stat_activity,
 * sampled every 10 ms) of connections to the connectors' database never passes it, whatever both instances ask. How
 * much of its cap an instance used is its own count of tokens held (`heldPeak`): the server's count depends on how
 * fast connections open, which on a loaded machine (CI's two workers) left a 40-call burst at 4 at once.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import postgres from 'postgres';
import { join } from 'node:path';
import { openStore } from '../../src/store/db.ts';
import { PG_URL } from '../support/services.ts';

const CAPACITY = 12;
const BEAT_MS = 300;
const CONNECTOR_DB = `h10_share_${process.pid}`;
const admin = postgres(PG_URL, { max: 1, onnotice: () => undefined });
const STORE_DB = `tg_share_${process.pid}`;
const storeUrl = Object.assign(new URL(PG_URL), { pathname: `/${STORE_DB}` }).toString();
let reserve = 0;
const instances: Instance[] = [];

beforeAll(async () => {
  await admin.unsafe(`DROP DATABASE IF EXISTS ${CONNECTOR_DB} WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE ${CONNECTOR_DB}`);
  await admin.unsafe(`DROP DATABASE IF EXISTS ${STORE_DB} WITH (FORCE)`);
  await admin.unsafe(`CREATE DATABASE ${STORE_DB}`);
  const [row] = await admin<{ max_connections: string }[]>`SHOW max_connections`;
  reserve = Number(row!.max_connections) - CAPACITY;
});

afterAll(async () => {
  for (const instance of instances) instance.kill();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${STORE_DB} WITH (FORCE)`);
  await admin.unsafe(`DROP DATABASE IF EXISTS ${CONNECTOR_DB} WITH (FORCE)`);
  await admin.end();
});

/** A gateway process (test/support/budget-instance.ts) and its command line. */
class Instance {
  private readonly proc;
  private readonly lines: string[] = [];
  private wake: (() => void) | null = null;

  constructor() {
    this.proc = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'support', 'budget-instance.ts')], {
      env: { ...process.env, STORE_URL: storeUrl, CONNECTOR_DB, RESERVE: String(reserve), BEAT_MS: String(BEAT_MS) },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    });
    void this.read();
    instances.push(this);
  }

  private async read(): Promise<void> {
    let buffered = '';
    const reader = (this.proc.stdout as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buffered.indexOf('\n')) >= 0) {
        this.lines.push(buffered.slice(0, at));
        buffered = buffered.slice(at + 1);
        this.wake?.();
      }
    }
  }

  /** The next JSON line the process writes (within 40 s: loading the gateway takes seconds on a busy machine). */
  async next<T = any>(): Promise<T> {
    const deadline = Date.now() + 40_000;
    while (this.lines.length === 0) {
      if (Date.now() > deadline) throw new Error('the instance did not answer');
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    return JSON.parse(this.lines.shift()!) as T;
  }

  async ask<T = any>(command: string): Promise<T> {
    this.proc.stdin.write(`${command}\n`);
    this.proc.stdin.flush();
    return this.next<T>();
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.proc.kill(signal);
  }
}

/** Asks `state` until `done` holds (within 10 s), returning the last state. */
async function until(instance: Instance, done: (s: { live: number; cap: number; held: number }) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const state = await instance.ask<{ live: number; cap: number; held: number }>('state');
    if (done(state) || Date.now() > deadline) return state;
    await Bun.sleep(50);
  }
}

/** Runs `work` while counting, every 10 ms, the server's connections to the connectors' database; returns the peak. */
async function peakDuring<T>(work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${CONNECTOR_DB}`;
      peak = Math.max(peak, row!.n);
      await Bun.sleep(10);
    }
  })();
  const result = await work();
  sampling = false;
  await sampler;
  return { result, peak };
}

test('the beat grants each live instance its share, never past what the claims of the others leave', async () => {
  await (await openStore({ databaseUrl: storeUrl })).close();
  const store = postgres(storeUrl, { max: 1, onnotice: () => undefined });
  const beat = async (id: string, held: number, staleMs = 60_000) => {
    const [row] = await store<
      { r_live: number; r_cap: number }[]
    >`SELECT r_live, r_cap FROM gateway_instance_beat(${id}::uuid, ${CAPACITY}, ${held}, ${staleMs})`;
    return [row!.r_live, row!.r_cap];
  };
  const [a, b] = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
  expect(await beat(a, 0)).toEqual([1, 12]); // alone: the whole capacity
  expect(await beat(b, 0)).toEqual([2, 0]); // a still claims 12 until its next beat
  expect(await beat(a, 3)).toEqual([2, 6]); // a's share; its claim drops to 6
  expect(await beat(b, 0)).toEqual([2, 6]);
  expect(await beat(a, 9)).toEqual([2, 6]); // a holds 9 (pools still closing): it claims 9 ...
  expect(await beat(b, 0)).toEqual([2, 3]); // ... so b gets only what is left
  await Bun.sleep(20);
  expect(await beat(b, 3, 10)).toEqual([1, 12]); // a not seen for longer than the stale time: gone
  await store`DELETE FROM gateway_instances`;
  await store.end();
}, 30_000);

test('two instances on one store halve the cap, stay within it together, and one gets it all back when the other stops or dies', async () => {
  // The processes load at once (seconds on a busy machine); b's and c's gateways start later.
  const a = new Instance();
  const b = new Instance();
  const c = new Instance();
  expect(await a.next()).toEqual({ ready: true });
  expect(await a.ask('start')).toEqual({ started: true });
  const alone = await until(a, (s) => s.live === 1 && s.cap === CAPACITY);
  expect(alone).toMatchObject({ live: 1, cap: CAPACITY });

  // Alone, a takes the whole capacity: its pools then hold more than half of it (idle; they close only when made to).
  const first = await peakDuring(() => a.ask('burst 40 a1'));
  expect(first.result).toMatchObject({ rows: 40, errors: 0 });
  expect(first.result.heldPeak).toBe(CAPACITY);
  expect(first.peak).toBeGreaterThan(0);
  expect(first.peak).toBeLessThanOrEqual(CAPACITY);
  // Then as many calls as the capacity, at once, on new connectors: none waits, each pool keeps its connection (idle
  // pools close only when made to), so a holds the whole capacity when b joins.
  expect(await a.ask(`burst ${CAPACITY} a1-idle`)).toMatchObject({ rows: CAPACITY, errors: 0 });
  const heldBefore = (await a.ask('state')).held;
  expect(heldBefore).toBeGreaterThan(CAPACITY / 2);

  // b joins: both see two instances and half the capacity; a's idle pools beyond its half close at once.
  expect(await b.next()).toEqual({ ready: true });
  expect(await b.ask('start')).toEqual({ started: true });
  const joinedA = await until(a, (s) => s.live === 2 && s.cap === CAPACITY / 2 && s.held <= CAPACITY / 2);
  const joinedB = await until(b, (s) => s.live === 2 && s.cap === CAPACITY / 2);
  expect(joinedA).toMatchObject({ live: 2, cap: CAPACITY / 2 });
  expect(joinedA.held).toBeLessThanOrEqual(CAPACITY / 2);
  expect(joinedB).toMatchObject({ live: 2, cap: CAPACITY / 2 });

  // Both burst at once: the server never sees more than the capacity, and the store still takes a new connection.
  let storeAnswered = false;
  const both = await peakDuring(async () => {
    // 30 each, 5 turns of the cap: a turn takes ~100 ms here, and a beat answered late (the cap is 0 until the next
    // one) must not push the last caller past the budget's 5-s wait.
    const bursts = Promise.all([a.ask('burst 30 a2'), b.ask('burst 30 b2')]);
    await Bun.sleep(100);
    const fresh = postgres(storeUrl, { max: 1, onnotice: () => undefined });
    storeAnswered = (await fresh`SELECT 1 AS one`)[0]!.one === 1;
    await fresh.end();
    return bursts;
  });
  expect(both.result[0]).toMatchObject({ rows: 30, errors: 0 });
  expect(both.result[1]).toMatchObject({ rows: 30, errors: 0 });
  expect([both.result[0].heldPeak, both.result[1].heldPeak]).toEqual([CAPACITY / 2, CAPACITY / 2]);
  expect(both.peak).toBeGreaterThan(0);
  expect(both.peak).toBeLessThanOrEqual(CAPACITY);
  expect(storeAnswered).toBe(true);

  // b stops cleanly: a gets the whole capacity back at its next beat.
  expect(await b.ask('close')).toEqual({ closed: true });
  const back = await until(a, (s) => s.live === 1 && s.cap === CAPACITY);
  expect(back).toMatchObject({ live: 1, cap: CAPACITY });
  const last = await peakDuring(() => a.ask('burst 40 a3'));
  expect(last.result).toMatchObject({ rows: 40, errors: 0 });
  expect(last.result.heldPeak).toBe(CAPACITY);
  expect(last.peak).toBeLessThanOrEqual(CAPACITY);

  // c joins, then dies without a word (SIGKILL): a gets the whole capacity back once c's row is stale (3 beats).
  expect(await c.next()).toEqual({ ready: true });
  expect(await c.ask('start')).toEqual({ started: true });
  expect(await until(a, (s) => s.live === 2 && s.cap === CAPACITY / 2 && s.held <= CAPACITY / 2)).toMatchObject({ live: 2, cap: CAPACITY / 2 });
  expect(await until(c, (s) => s.live === 2 && s.cap === CAPACITY / 2)).toMatchObject({ live: 2, cap: CAPACITY / 2 });
  c.kill('SIGKILL');
  const killedAt = performance.now();
  const afterDeath = await until(a, (s) => s.live === 1 && s.cap === CAPACITY);
  const recoveredMs = Math.round(performance.now() - killedAt);
  expect(afterDeath).toMatchObject({ live: 1, cap: CAPACITY });
  // Not before c's row is stale: its last beat was at most one interval (plus that beat's own time) before the kill.
  expect(recoveredMs).toBeGreaterThanOrEqual(BEAT_MS);

  // The store does not answer a's beats (its table locked): after two intervals a takes no new connection there and
  // its idle pools close; answered again, a is back to the whole capacity.
  const locker = postgres(storeUrl, { max: 1, onnotice: () => undefined });
  let unanswered = { live: 0, cap: -1, held: -1 };
  await locker.begin(async (tx) => {
    await tx`LOCK TABLE gateway_instances IN EXCLUSIVE MODE`; // beats wait; reads (the state command) do not
    unanswered = await until(a, (s) => s.cap === 0 && s.held === 0);
  });
  await locker.end();
  expect(unanswered).toMatchObject({ cap: 0, held: 0 });
  const answered = await until(a, (s) => s.live === 1 && s.cap === CAPACITY);
  expect(answered).toMatchObject({ live: 1, cap: CAPACITY });

  expect(await a.ask('close')).toEqual({ closed: true });
  console.log(
    `capacity ${CAPACITY}: alone peak ${first.peak} (tokens ${first.result.heldPeak}, held ${heldBefore} after); two instances caps ${joinedA.cap}+${joinedB.cap}, ` +
      `a held ${joinedA.held} after b joined, joint burst 60 calls peak ${both.peak} (tokens ${both.result[0].heldPeak}+${both.result[1].heldPeak}); ` +
      `after b stopped cap ${back.cap}, peak ${last.peak} (tokens ${last.result.heldPeak}); ` +
      `c killed: a back to cap ${afterDeath.cap} after ${recoveredMs} ms (beat ${BEAT_MS} ms, stale after ${3 * BEAT_MS} ms); ` +
      `beats unanswered: cap ${unanswered.cap}, held ${unanswered.held}; answered again: cap ${answered.cap}`,
  );
}, 60_000);
