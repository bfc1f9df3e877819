/**
 * The limits' view of the gateway's Redis connection (util/redis.ts): burst windows, REST windows and
 * failed-authentication counts, each a Lua script, every one capped in time; while Redis is down or slow each limiter
 * decides in process.
 */
import type { RedisConnection } from '../util/redis.ts';

export interface LimitsRedis {
  ready(): boolean;
  /** Runs a Lua script; rejects when Redis is down or slower than the command timeout. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

export interface LimitsRedisOptions {
  /** How long a Redis round trip may take before the local fallback decides instead. */
  commandTimeoutMs?: number;
}

export function limitsRedis(redis: RedisConnection, options: LimitsRedisOptions = {}): LimitsRedis {
  const timeoutMs = options.commandTimeoutMs ?? 50;
  return {
    ready: () => redis.ready(),
    eval: (script, keys, args) => redis.command((client) => client.eval(script, { keys, arguments: args }), timeoutMs),
  };
}
