/**
 * TCP connections under the outbound policy (policy.ts) for the database drivers: the host is canonicalised,
 * resolved and every address checked at connect time, and the socket goes to a checked address, so a DNS answer
 * that changes after the check (or after the connector was saved) cannot redirect it.
 */
import net from 'node:net';
import { canonicalTargetHost, checkTarget, isHostListed, OutboundRefusedError, type OutboundPolicy } from './policy.ts';

export interface DatabaseTarget {
  /** The host as the org wrote it. */
  host: string;
  port: number;
  database: string;
}

/** The canonical host, or a refusal for text that is no host (a path, a list, a port, user info). */
function targetHostOf(raw: string): string {
  const host = canonicalTargetHost(raw);
  if (host === null) throw new OutboundRefusedError('invalid_host', `refused: "${raw.slice(0, 64)}" is not a host name or IP address`);
  return host;
}

/**
 * Save-time check of a database target: the same rules as at connect time; an allow-listed name is not looked up
 * yet (its addresses are checked when it is connected to).
 */
export async function assertDatabaseTarget(policy: OutboundPolicy, target: DatabaseTarget): Promise<void> {
  const host = targetHostOf(target.host);
  if (net.isIP(host.replace(/^\[(.*)\]$/, '$1')) === 0 && isHostListed(policy, host, target.port)) return;
  await checkTarget(policy, { host, port: target.port, database: target.database });
}

/** Resolves and checks `target` now; the addresses a connection may use, in resolver order. */
export async function checkedAddresses(policy: OutboundPolicy, target: DatabaseTarget): Promise<string[]> {
  return checkTarget(policy, { host: targetHostOf(target.host), port: target.port, database: target.database });
}

function connectOnce(address: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error(`connect ETIMEDOUT ${port}`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}

/**
 * A connected socket to a checked address of `target` (each address tried in turn). `host` is set on the socket to
 * the name the org gave, which is what postgres.js uses as the TLS server name.
 */
export async function dialChecked(policy: OutboundPolicy, target: DatabaseTarget, timeoutMs: number): Promise<net.Socket> {
  const addresses = await checkedAddresses(policy, target);
  let last: unknown;
  for (const address of addresses) {
    try {
      const socket = await connectOnce(address, target.port, timeoutMs);
      return Object.assign(socket, { host: targetHostOf(target.host).replace(/^\[(.*)\]$/, '$1') });
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/**
 * A socket that connects to a checked address of `target` once the check is done; returned at once, for drivers
 * whose socket hook is synchronous (mysql2's `stream`). Writes before the connection are buffered by net.Socket; a
 * refusal or failure destroys it with that error, which the driver reports as a connection error.
 */
export function pendingCheckedSocket(policy: OutboundPolicy, target: DatabaseTarget, timeoutMs: number): net.Socket {
  const socket = new net.Socket();
  checkedAddresses(policy, target).then(
    (addresses) => {
      const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`connect ETIMEDOUT ${target.port}`), { code: 'ETIMEDOUT' })), timeoutMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
      socket.connect({ host: addresses[0]!, port: target.port });
    },
    (err: unknown) => socket.destroy(err as Error),
  );
  return socket;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void;

/**
 * A `lookup` for net.connect (drivers that take socket options, like mongodb's): the name is resolved and checked by
 * the policy, and the connection uses the checked address. IP literals never reach a lookup; they are checked before.
 */
export function checkedLookup(policy: OutboundPolicy, port: number, database: string) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    checkedAddresses(policy, { host: hostname, port, database }).then(
      (addresses) => {
        const entries = addresses.map((address) => ({ address, family: net.isIP(address) }));
        if (options?.all) callback(null, entries);
        else callback(null, entries[0]!.address, entries[0]!.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, ''),
    );
  };
}
