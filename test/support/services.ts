/** Reachability of the real services the integration suites use; in CI a missing service fails the run. */
import net from 'node:net';

export const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const MYSQL_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function reachable(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const cache = new Map<string, Promise<boolean>>();

/**
 * Whether a service answers. In CI (CI=true) an unreachable service throws, so the run fails;
 * locally the caller skips its suite and this prints why.
 */
export async function serviceAvailable(name: 'postgres' | 'mysql' | 'redis'): Promise<boolean> {
  const url = new URL(name === 'postgres' ? PG_URL : name === 'mysql' ? MYSQL_URL : REDIS_URL);
  const key = `${url.hostname}:${url.port}`;
  if (!cache.has(key)) cache.set(key, reachable(url.hostname, Number(url.port)));
  const ok = await cache.get(key)!;
  if (!ok) {
    if (process.env.CI) throw new Error(`${name} at ${key} is required in CI but is not reachable`);
    console.warn(`[skip] ${name} at ${key} is not reachable: its suites are skipped`);
  }
  return ok;
}

/**
 * The test database servers as outbound allow-list entries (`host:port`): the gateway refuses loopback targets
 * unless the operator lists them, and every suite's connectors point at these two servers.
 */
export function databaseAllowHosts(): string[] {
  return [PG_URL, MYSQL_URL].map((u) => {
    const url = new URL(u);
    return `${url.hostname}:${url.port || (url.protocol.startsWith('mysql') ? 3306 : 5432)}`;
  });
}
