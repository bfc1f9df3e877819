/**
 * The outbound policy: which (host, port) the gateway may connect to on an org's behalf. One decision for every
 * outbound path (database connectors, MCP upstreams, webhooks, JWKS and OIDC discovery); see docs/outbound-policy.md.
 */
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { addressBits, isForbiddenAddress, isForbiddenHostname, isLoopbackAddress, isNeverAddress, parseIPv4, parseIPv6 } from './ip.ts';

/** Resolves a host name to all of its addresses; injectable so tests need no DNS. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

/** The gateway's own store database: never a connector target, whatever the allow-list says. */
export interface StoreTarget {
  host: string;
  port: number;
  database: string;
}

/** An allow-listed network: every address whose first `prefix` bits equal `network`'s (IPv4 held IPv4-mapped). */
interface Cidr {
  network: bigint;
  prefix: number;
}

export interface OutboundPolicy {
  /** Canonical `host` (any port) and `host:port` entries; IPv6 hosts are bracketed, as in URL.hostname. */
  readonly allowHosts: ReadonlySet<string>;
  /** CIDR entries (IPv4 or IPv6), any port. */
  readonly allowCidrs: readonly Cidr[];
  readonly resolve: Resolver;
  /** Ports the gateway itself listens on (on every local address); the entry point adds the port PORT=0 settled on. */
  readonly ownPorts: number[];
  readonly store: StoreTarget | null;
  /** PEM certificates trusted for https besides the system's roots (TOOLGATE_OUTBOUND_CA_FILE: a private CA, tests). */
  readonly extraCa: string | null;
}

export type OutboundRefusal =
  | 'invalid_url'
  | 'invalid_host'
  | 'scheme'
  | 'credentials'
  | 'insecure'
  | 'forbidden_address'
  | 'unresolvable'
  | 'redirect'
  | 'too_large';

/** A connection the policy does not allow. The message names at most the host, never a path, query or address. */
export class OutboundRefusedError extends Error {
  constructor(
    readonly reason: OutboundRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundRefusedError';
  }
}

const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export function stripTrailingDots(hostname: string): string {
  return hostname.replace(/\.+$/, '');
}

/** Parses `address/prefix` (IPv4 or IPv6); null when it is not a CIDR. */
function parseCidr(entry: string): Cidr | null {
  const m = /^\[?([0-9a-f.:]+)\]?\/(\d{1,3})$/i.exec(entry);
  if (!m) return null;
  const v4 = parseIPv4(m[1]!) !== null;
  const bits = v4 || parseIPv6(m[1]!) ? addressBits(m[1]!) : null;
  const prefix = Number(m[2]);
  if (bits === null || prefix > (v4 ? 32 : 128)) return null;
  const fullPrefix = v4 ? prefix + 96 : prefix;
  // "Allow everything" would switch the policy off; an operator who means it can list the networks.
  if (prefix === 0) return null;
  const mask = ((1n << BigInt(fullPrefix)) - 1n) << BigInt(128 - fullPrefix);
  return { network: bits & mask, prefix: fullPrefix };
}

function inCidr(cidr: Cidr, address: bigint): boolean {
  const mask = ((1n << BigInt(cidr.prefix)) - 1n) << BigInt(128 - cidr.prefix);
  return (address & mask) === cidr.network;
}

/** Canonicalises one allow-list entry (`host` or `host:port`, IPv6 optionally bracketed) the way URL would. */
function canonicalAllowEntry(raw: string): string {
  const entry = raw.trim().toLowerCase();
  let host = entry;
  let port = '';
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) {
    host = `[${bracketed[1] ?? ''}]`;
    port = bracketed[2] ?? '';
  } else if (entry.split(':').length === 2) {
    [host = '', port = ''] = entry.split(':');
  } else if (entry.includes(':')) {
    host = `[${entry}]`; // bare IPv6 without a port
  }
  if (port !== '' && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    throw new Error(`invalid outbound allow-list entry "${raw}": bad port`);
  }
  // Only a host may be given; URL would otherwise quietly drop a path or userinfo and allow-list something else.
  if (/[/@?#\\\s]/.test(host)) throw new Error(`invalid outbound allow-list entry "${raw}": host expected`);
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    throw new Error(`invalid outbound allow-list entry "${raw}"`);
  }
  hostname = stripTrailingDots(hostname);
  return port === '' ? hostname : `${hostname}:${Number(port)}`;
}

/**
 * Builds the policy from the operator's TOOLGATE_OUTBOUND_ALLOW_HOSTS list (`host`, `host:port`, or a CIDR) and
 * what the gateway knows of itself (its listening ports, its store). Throws on an unparseable entry.
 */
export function parseOutboundPolicy(input: {
  allowHosts: readonly string[];
  resolve?: Resolver;
  ownPorts?: readonly number[];
  store?: StoreTarget | null;
  extraCa?: string | null;
}): OutboundPolicy {
  const allowHosts = new Set<string>();
  const allowCidrs: Cidr[] = [];
  for (const raw of input.allowHosts) {
    const entry = raw.trim();
    if (entry === '') continue;
    if (entry.includes('/')) {
      const cidr = parseCidr(entry);
      if (!cidr) throw new Error(`invalid outbound allow-list entry "${raw}": a CIDR is address/prefix with a prefix of 1 to 32 (IPv4) or 128 (IPv6)`);
      allowCidrs.push(cidr);
    } else {
      allowHosts.add(canonicalAllowEntry(entry));
    }
  }
  return {
    allowHosts,
    allowCidrs,
    resolve: input.resolve ?? systemResolver,
    ownPorts: (input.ownPorts ?? []).filter((p) => p > 0),
    store: input.store ?? null,
    extraCa: input.extraCa ?? null,
  };
}

/** The store database of a DATABASE_URL, or null (embedded store, or not a URL). */
export function storeTargetOf(databaseUrl: string | null): StoreTarget | null {
  if (!databaseUrl) return null;
  try {
    const url = new URL(databaseUrl);
    return { host: url.hostname, port: Number(url.port || 5432), database: decodeURIComponent(url.pathname.slice(1)) || 'postgres' };
  } catch {
    return null;
  }
}

/**
 * The canonical form of a host as an org typed it in a connector: lower case, IPv4 in dotted decimal however it was
 * spelt (`2130706433`, `0x7f.1`, `0177.0.0.1` are 127.0.0.1, as the resolver's inet_aton would read them), IPv6
 * compressed and bracketed, trailing dots dropped. Null for anything that is not a host name or an IP literal: a
 * port, a path (a Unix socket to postgres.js), a list (`a,b`: several hosts to postgres.js), user info, spaces.
 */
export function canonicalTargetHost(raw: string): string | null {
  let host = raw.trim();
  if (!/^[A-Za-z0-9._\-[\]:]+$/.test(host)) return null;
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
  if (new URL(`http://${host}/`).port !== '') return null;
  hostname = stripTrailingDots(hostname);
  return hostname === '' ? null : hostname;
}

/** The literal without brackets when `host` (canonical) is an IP address, else null. */
function ipLiteral(host: string): string | null {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return addressBits(bare) !== null ? bare : null;
}

/** `host` as it appears in allow-list keys: IPv6 bracketed (URL.hostname form). */
function hostKey(ip: string): string {
  return ip.includes(':') ? `[${new URL(`http://[${ip}]/`).hostname.slice(1, -1)}]` : ip;
}

function listed(policy: OutboundPolicy, key: string, port: number): boolean {
  return policy.allowHosts.has(key) || policy.allowHosts.has(`${key}:${port}`);
}

/** Addresses of this machine: loopback, and every interface's (a listener on 0.0.0.0 answers on all of them). */
function isLocalAddress(ip: string): boolean {
  if (isLoopbackAddress(ip)) return true;
  const bits = addressBits(ip);
  for (const list of Object.values(networkInterfaces())) {
    for (const nic of list ?? []) if (addressBits(nic.address) === bits) return true;
  }
  return false;
}

async function addressesOf(policy: OutboundPolicy, host: string): Promise<string[]> {
  const literal = ipLiteral(host);
  if (literal) return [literal];
  // localhost is loopback by definition (RFC 6761), whatever a resolver answers.
  if (isForbiddenHostname(host)) return ['127.0.0.1', '::1'];
  return [...(await policy.resolve(host))];
}

/** Whether `ip`:`port` is the store's server, and `database` its database (unknown for HTTP: never the store). */
async function isStore(policy: OutboundPolicy, ip: string, port: number, database: string | undefined): Promise<boolean> {
  const store = policy.store;
  if (!store || database === undefined || port !== store.port || database !== store.database) return false;
  const storeHost = canonicalTargetHost(store.host) ?? store.host;
  let storeAddresses: string[];
  try {
    storeAddresses = await addressesOf(policy, storeHost);
  } catch {
    return false;
  }
  const bits = addressBits(ip);
  if (storeAddresses.some((a) => addressBits(a) === bits)) return true;
  // A store on this machine answers on every local address.
  return storeAddresses.some(isLocalAddress) && isLocalAddress(ip);
}

const METADATA_NAMES = (host: string) => isForbiddenHostname(host) && host !== 'localhost' && !host.endsWith('.localhost');

export interface TargetQuery {
  /** Canonical host (canonicalTargetHost or URL.hostname without trailing dots). */
  host: string;
  port: number;
  /** The database a connector names (the store check); undefined for HTTP. */
  database?: string;
}

/**
 * Said with every refusal the operator could lift (plain http, a private or loopback address): the switch is named
 * so an admin who meets it knows whom to ask and for what (issue 40 item 6, decision 0365). Said alike for the
 * classes no entry lifts, so the answer tells nothing about which class a host is in.
 */
export const ALLOW_HOSTS_HINT =
  '(the gateway operator can allow a private host, or plain http to it, with TOOLGATE_OUTBOUND_ALLOW_HOSTS; link-local and metadata addresses are never allowed)';

const refusedAddress = (host: string) =>
  new OutboundRefusedError('forbidden_address', `refused: the address of host "${host}" is in a private, loopback or reserved range ${ALLOW_HOSTS_HINT}`);

/**
 * The addresses `host`:`port` may be reached at, every one checked; throws OutboundRefusedError otherwise.
 * Refused whatever the allow-list says: unspecified, link-local, multicast and reserved addresses, metadata
 * services, the gateway's own listening ports on any local address, and its store database. Refused unless
 * allow-listed (by name, name:port, address, address:port or CIDR): loopback, private and other non-global
 * addresses. A name is refused if any of its addresses is: a connection may use any of them.
 */
export async function checkTarget(policy: OutboundPolicy, target: TargetQuery): Promise<string[]> {
  const { host, port } = target;
  if (METADATA_NAMES(host)) throw refusedAddress(host);
  const nameListed = ipLiteral(host) === null && listed(policy, host, port);
  let addresses: string[];
  try {
    addresses = await addressesOf(policy, host);
  } catch {
    throw new OutboundRefusedError('unresolvable', `refused: host "${host}" could not be resolved`);
  }
  if (addresses.length === 0) throw new OutboundRefusedError('unresolvable', `refused: host "${host}" could not be resolved`);
  for (const ip of addresses) {
    if (isNeverAddress(ip)) throw refusedAddress(host);
    if (policy.ownPorts.includes(port) && isLocalAddress(ip)) throw refusedAddress(host);
    if (await isStore(policy, ip, port, target.database)) throw refusedAddress(host);
    if (!isForbiddenAddress(ip) || nameListed) continue;
    const bits = addressBits(ip)!;
    if (listed(policy, hostKey(ip), port) || policy.allowCidrs.some((c) => inCidr(c, bits))) continue;
    throw refusedAddress(host);
  }
  return addresses;
}

/** Whether the allow-list names `host` (or `host:port`) itself: the operator's explicit exception (https rule). */
export function isHostListed(policy: OutboundPolicy, host: string, port: number): boolean {
  return listed(policy, host, port);
}
