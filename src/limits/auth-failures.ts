/**
 * Failed-authentication limits of the sign-in doors (/oauth/token, console sign-in, the operator token): attempts
 * counted per (client, source address), per source address and per client, in Redis across instances, in process
 * while Redis is down. docs/rate-limits.md explains the rules; the choice is argued in docs/decisions/.
 */
import { createHash } from 'node:crypto';
import type { LimitsRedis } from './redis.ts';

export interface FailureRule {
  /** Attempts in one window before the bucket locks (successes are refunded). */
  limit: number;
  windowSeconds: number;
  /** First lock; each further lock within ESCALATION_MEMORY_SECONDS doubles it, up to maxLockSeconds. */
  lockSeconds: number;
  maxLockSeconds: number;
}

export type Bucket = 'pair' | 'address' | 'client';
const BUCKETS: readonly Bucket[] = ['pair', 'address', 'client'];

/**
 * pair: one client id from one address: what a guesser at one address can try, and the only bucket that locks a
 * client at its own address. address: everything one address tries, whatever client ids it names. client: all
 * addresses together, against guessing spread over many; it never escalates (it only slows) and never applies to
 * an address the client has signed in from recently (KNOWN_ADDRESS_SECONDS), so nobody else can lock a client out.
 */
export const AUTH_FAILURE_RULES: Record<Bucket, FailureRule> = {
  pair: { limit: 5, windowSeconds: 300, lockSeconds: 30, maxLockSeconds: 900 },
  address: { limit: 30, windowSeconds: 300, lockSeconds: 60, maxLockSeconds: 900 },
  client: { limit: 100, windowSeconds: 60, lockSeconds: 60, maxLockSeconds: 60 },
};
/** A bucket's lock count is forgotten after this long without a new lock: the next lock starts short again. */
const ESCALATION_MEMORY_SECONDS = 3600;
/** An address a client authenticated from stays exempt from that client's global cap this long. */
const KNOWN_ADDRESS_SECONDS = 86_400;

export interface AttemptSubject {
  /** Who the attempt claims to be, namespaced by door: `oauth:<client_id>`, `idp:<org id>`, `operator`. */
  client: string;
  /** The source address (net/source-address.ts). */
  address: string;
}

/**
 * A refused attempt: a bucket is locked, or (`full`) its window is full without a lock, which only attempts still in
 * flight can do (a judged failure that fills a bucket locks it; a success or an unjudged end refunds its reservation).
 */
export type AttemptRefusal = { allowed: false; bucket: Bucket; retryAfterSeconds: number; full?: true };
type AttemptDecision = { allowed: true } | AttemptRefusal;

/** What a refused attempt is told (the same words on every door). */
export function refusalMessage(refusal: AttemptRefusal): string {
  const who = { pair: 'for this client from this address', address: 'from this address', client: 'for this client' }[refusal.bucket];
  return `Too many failed sign-in attempts ${who}; retry after ${refusal.retryAfterSeconds} seconds.`;
}

export interface AuthFailureLimiter {
  /** Reserves one attempt (counted as a failure until `succeeded`), or refuses it while a bucket is locked or full. */
  begin(subject: AttemptSubject): Promise<AttemptDecision>;
  /** The reserved attempt failed: buckets at their limit lock. */
  failed(subject: AttemptSubject): Promise<void>;
  /** The reserved attempt succeeded: its reservation is refunded, the pair cleared, the address remembered. */
  succeeded(subject: AttemptSubject): Promise<void>;
  /** The attempt ended before its credential was judged (an internal error): only its reservation is refunded. */
  released(subject: AttemptSubject): Promise<void>;
  mode(): 'shared' | 'fallback' | 'local';
}

/**
 * How long an attempt that finds a bucket full of attempts in flight waits for them to be judged, asking again every
 * FULL_RETRY_MS: they end in a lock (a guesser: refused then, with the lock's Retry-After) or in refunds (concurrent
 * right credentials, e.g. an operator's script or a fleet starting at once from one address: it goes on). Without
 * the wait, the 6th concurrent request with the right operator token was a 429.
 */
const FULL_WAIT_MS = 3_000;
const FULL_RETRY_MS = 15;

/**
 * Runs one sign-in attempt under the limits: refused attempts never reach `attempt`; one that finds a bucket full of
 * attempts in flight waits for their verdicts first (FULL_WAIT_MS), so at most a bucket's limit are ever being checked.
 */
export async function limitedAttempt<T>(
  limiter: AuthFailureLimiter,
  subject: AttemptSubject,
  attempt: () => Promise<T>,
  /** What an error of `attempt` says of the credential: wrong, right (an error after the check), or not judged. */
  judge: (err: unknown) => 'failed' | 'succeeded' | 'unjudged',
  refuse: (decision: AttemptRefusal) => Promise<never>,
): Promise<T> {
  let decision = await limiter.begin(subject);
  const deadline = Date.now() + FULL_WAIT_MS;
  while (!decision.allowed && decision.full && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, FULL_RETRY_MS + Math.random() * FULL_RETRY_MS));
    decision = await limiter.begin(subject);
  }
  if (!decision.allowed) return refuse(decision);
  try {
    const result = await attempt();
    await limiter.succeeded(subject);
    return result;
  } catch (err) {
    const verdict = judge(err);
    // Only a checked credential may clear the pair or make an address known.
    await (verdict === 'failed' ? limiter.failed(subject) : verdict === 'succeeded' ? limiter.succeeded(subject) : limiter.released(subject));
    throw err;
  }
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
/** Keys stay short whatever a caller sends as its client id. */
const clientKey = (client: string) => createHash('sha256').update(client).digest('base64url').slice(0, 22);

function keysOf(prefix: string, s: AttemptSubject): Record<Bucket, string> & { known: string } {
  const client = clientKey(s.client);
  return {
    pair: `${prefix}:af:p:${client}:${s.address}`,
    address: `${prefix}:af:a:${s.address}`,
    client: `${prefix}:af:c:${client}`,
    known: `${prefix}:af:k:${client}:${s.address}`,
  };
}

/** In process: the same rules for one instance (no Redis, or Redis down). Bounded: the oldest entries go first. */
class LocalFailureCounts {
  private entries = new Map<string, { value: number; expiresAt: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 100_000,
  ) {}

  private get(key: string): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    if (e.expiresAt <= this.now()) {
      this.entries.delete(key);
      return 0;
    }
    return e.value;
  }

  private ttlMs(key: string): number {
    return this.get(key) > 0 ? this.entries.get(key)!.expiresAt - this.now() : 0;
  }

  private set(key: string, value: number, ttlSeconds: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.sweep();
    this.entries.set(key, { value, expiresAt: this.now() + ttlSeconds * 1000 });
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(key);
    for (const key of this.entries.keys()) {
      if (this.entries.size < this.maxEntries) break;
      this.entries.delete(key);
    }
  }

  private incr(key: string, ttlSeconds: number): number {
    const value = this.get(key);
    if (value === 0) this.set(key, 1, ttlSeconds);
    else this.entries.get(key)!.value = value + 1;
    return value + 1;
  }

  private decr(key: string): void {
    const value = this.get(key);
    if (value > 0) this.entries.get(key)!.value = value - 1;
  }

  begin(prefix: string, s: AttemptSubject): AttemptDecision {
    const keys = keysOf(prefix, s);
    const known = this.get(keys.known) > 0;
    const applies = (b: Bucket) => b !== 'client' || !known;
    for (const b of BUCKETS) {
      const ttl = applies(b) ? this.ttlMs(`${keys[b]}:l`) : 0;
      if (ttl > 0) return { allowed: false, bucket: b, retryAfterSeconds: seconds(ttl) };
    }
    let over: Bucket | null = null;
    for (const b of BUCKETS) {
      const n = this.incr(`${keys[b]}:n`, AUTH_FAILURE_RULES[b].windowSeconds);
      if (n > AUTH_FAILURE_RULES[b].limit && applies(b) && over === null) over = b;
    }
    if (over === null) return { allowed: true };
    for (const b of BUCKETS) this.decr(`${keys[b]}:n`);
    return { allowed: false, bucket: over, retryAfterSeconds: 1, full: true };
  }

  failed(prefix: string, s: AttemptSubject): void {
    const keys = keysOf(prefix, s);
    for (const b of BUCKETS) {
      const rule = AUTH_FAILURE_RULES[b];
      if (this.get(`${keys[b]}:n`) < rule.limit) continue;
      const level = this.incr(`${keys[b]}:v`, ESCALATION_MEMORY_SECONDS);
      this.set(`${keys[b]}:v`, level, ESCALATION_MEMORY_SECONDS);
      this.set(`${keys[b]}:l`, 1, Math.min(rule.lockSeconds * 2 ** (level - 1), rule.maxLockSeconds));
      this.entries.delete(`${keys[b]}:n`);
    }
  }

  released(prefix: string, s: AttemptSubject): void {
    const keys = keysOf(prefix, s);
    for (const b of BUCKETS) this.decr(`${keys[b]}:n`);
  }

  succeeded(prefix: string, s: AttemptSubject): void {
    const keys = keysOf(prefix, s);
    for (const suffix of [':n', ':l', ':v']) this.entries.delete(`${keys.pair}${suffix}`);
    this.decr(`${keys.address}:n`);
    this.decr(`${keys.client}:n`);
    this.set(keys.known, 1, KNOWN_ADDRESS_SECONDS);
  }
}

export function createLocalFailureLimiter(prefix = 'toolgate', now?: () => number): AuthFailureLimiter {
  const counts = new LocalFailureCounts(now);
  return {
    begin: async (s) => counts.begin(prefix, s),
    failed: async (s) => counts.failed(prefix, s),
    succeeded: async (s) => counts.succeeded(prefix, s),
    released: async (s) => counts.released(prefix, s),
    mode: () => 'local',
  };
}

// The Redis scripts do exactly what LocalFailureCounts does, atomically across instances. Keys per bucket come in
// triples: attempts (:n), lock (:l), lock count (:v).
const BEGIN_SCRIPT = `local known = redis.call('EXISTS', KEYS[10]) == 1
for i = 0, 2 do
  if i < 2 or not known then
    local ttl = redis.call('PTTL', KEYS[i*3+2])
    if ttl > 0 then return {i, ttl} end
  end
end
local over = -1
for i = 0, 2 do
  local n = redis.call('INCR', KEYS[i*3+1])
  if n == 1 then redis.call('EXPIRE', KEYS[i*3+1], ARGV[i*2+2]) end
  if over < 0 and n > tonumber(ARGV[i*2+1]) and (i < 2 or not known) then over = i end
end
if over >= 0 then
  for i = 0, 2 do redis.call('DECR', KEYS[i*3+1]) end
  return {over, 1000, 1}
end
return {-1, 0, 0}`;

const FAILED_SCRIPT = `for i = 0, 2 do
  local n = tonumber(redis.call('GET', KEYS[i*3+1]) or '0')
  if n >= tonumber(ARGV[i*3+1]) then
    local level = redis.call('INCR', KEYS[i*3+3])
    redis.call('EXPIRE', KEYS[i*3+3], ARGV[10])
    local lock = math.min(tonumber(ARGV[i*3+2]) * 2 ^ (level - 1), tonumber(ARGV[i*3+3]))
    redis.call('SET', KEYS[i*3+2], '1', 'EX', math.floor(lock))
    redis.call('DEL', KEYS[i*3+1])
  end
end
return 0`;

const SUCCEEDED_SCRIPT = `redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
for i = 4, 5 do
  if tonumber(redis.call('GET', KEYS[i]) or '0') > 0 then redis.call('DECR', KEYS[i]) end
end
redis.call('SET', KEYS[6], '1', 'EX', ARGV[1])
return 0`;

const RELEASED_SCRIPT = `for i = 1, 3 do
  if tonumber(redis.call('GET', KEYS[i]) or '0') > 0 then redis.call('DECR', KEYS[i]) end
end
return 0`;

const triples = (keys: Record<Bucket, string>) => BUCKETS.flatMap((b) => [`${keys[b]}:n`, `${keys[b]}:l`, `${keys[b]}:v`]);

export function createRedisFailureLimiter(redis: LimitsRedis, prefix = 'toolgate', now?: () => number): AuthFailureLimiter {
  const fallback = new LocalFailureCounts(now);
  return {
    mode: () => (redis.ready() ? 'shared' : 'fallback'),
    async begin(s) {
      const keys = keysOf(prefix, s);
      const args = BUCKETS.flatMap((b) => [String(AUTH_FAILURE_RULES[b].limit), String(AUTH_FAILURE_RULES[b].windowSeconds)]);
      try {
        const [index, ttl, full] = (await redis.eval(BEGIN_SCRIPT, [...triples(keys), keys.known], args)) as [number, number, number?];
        if (index < 0) return { allowed: true };
        const refusal: AttemptRefusal = { allowed: false, bucket: BUCKETS[index]!, retryAfterSeconds: seconds(ttl) };
        return full === 1 ? { ...refusal, full: true } : refusal;
      } catch {
        return fallback.begin(prefix, s);
      }
    },
    async failed(s) {
      const keys = keysOf(prefix, s);
      const args = [
        ...BUCKETS.flatMap((b) => [AUTH_FAILURE_RULES[b].limit, AUTH_FAILURE_RULES[b].lockSeconds, AUTH_FAILURE_RULES[b].maxLockSeconds].map(String)),
        String(ESCALATION_MEMORY_SECONDS),
      ];
      try {
        await redis.eval(FAILED_SCRIPT, triples(keys), args);
      } catch {
        fallback.failed(prefix, s);
      }
    },
    async succeeded(s) {
      const keys = keysOf(prefix, s);
      try {
        await redis.eval(
          SUCCEEDED_SCRIPT,
          [`${keys.pair}:n`, `${keys.pair}:l`, `${keys.pair}:v`, `${keys.address}:n`, `${keys.client}:n`, keys.known],
          [String(KNOWN_ADDRESS_SECONDS)],
        );
      } catch {
        fallback.succeeded(prefix, s);
      }
    },
    async released(s) {
      const keys = keysOf(prefix, s);
      try {
        await redis.eval(
          RELEASED_SCRIPT,
          BUCKETS.map((b) => `${keys[b]}:n`),
          [],
        );
      } catch {
        fallback.released(prefix, s);
      }
    },
  };
}
