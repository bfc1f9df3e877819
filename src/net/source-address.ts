/**
 * The source address of a request, as the failure limits count it: the direct peer the entry point saw (Bun.serve,
 * Deno.serve), or, only when that peer is a configured trusted proxy (TOOLGATE_TRUSTED_PROXIES), the nearest
 * X-Forwarded-For entry that is not one. IPv6 addresses count by their /64 (one host usually holds a whole /64).
 */
import { parseIPv4, parseIPv6 } from './ip.ts';

/** The peer each served request came from, noted by the entry point; requests made in process have none. */
const peers = new WeakMap<Request, string>();
export function notePeerAddress(request: Request, address: string | null | undefined): void {
  if (address) peers.set(request, address);
}

/** A request served without a known peer (in process, or an entry point that notes none): one shared bucket. */
const UNKNOWN_SOURCE = 'unknown';

interface Cidr {
  groups: number[];
  bits: number;
}
export type TrustedProxies = readonly Cidr[];

/** An address as eight 16-bit groups; IPv4 (and IPv4-mapped IPv6) as ::ffff:a.b.c.d, so one comparison serves both. */
function toGroups(text: string): number[] | null {
  const bare = text.trim().replace(/^\[(.*)\]$/, '$1');
  const v4 = parseIPv4(bare);
  if (v4 !== null) return [0, 0, 0, 0, 0, 0xffff, v4 >>> 16, v4 & 0xffff];
  return bare.includes(':') ? parseIPv6(bare) : null;
}

const isMappedV4 = (g: number[]) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;

function inCidr(groups: number[], cidr: Cidr): boolean {
  for (let bit = 0; bit < cidr.bits; bit += 16) {
    const take = Math.min(16, cidr.bits - bit);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((groups[bit / 16]! & mask) !== (cidr.groups[bit / 16]! & mask)) return false;
  }
  return true;
}

/** Parses TOOLGATE_TRUSTED_PROXIES entries (addresses or CIDR ranges); throws naming the first bad entry. */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxies {
  return entries.map((entry) => {
    const [address, prefix] = entry.split('/');
    const groups = toGroups(address ?? '');
    if (!groups) throw new Error(`"${entry}" is not an IP address or CIDR range`);
    const v4 = isMappedV4(groups) && !address!.includes(':');
    const max = v4 ? 32 : 128;
    const bits = prefix === undefined ? max : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (!(bits >= 0 && bits <= max)) throw new Error(`"${entry}" has a prefix length outside 0-${max}`);
    return { groups, bits: v4 ? bits + 96 : bits };
  });
}

/** The counting key of an address: dotted IPv4, or the /64 of an IPv6 address. */
function addressKey(groups: number[]): string {
  if (isMappedV4(groups)) return `${groups[6]! >>> 8}.${groups[6]! & 0xff}.${groups[7]! >>> 8}.${groups[7]! & 0xff}`;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

export function sourceAddressOf(request: Request, trusted: TrustedProxies): string {
  const peer = peers.get(request);
  const peerGroups = peer ? toGroups(peer) : null;
  if (!peerGroups) return UNKNOWN_SOURCE;
  if (!trusted.some((c) => inCidr(peerGroups, c))) return addressKey(peerGroups);
  // From the right: each trusted proxy appended the address it received from; the first untrusted one is the client.
  // Entries left of it were written by the client and may say anything.
  const hops = (request.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  let client = peerGroups;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = toGroups(hops[i]!);
    // A hop the trusted proxy wrote that is no address: stop at the last one known good.
    if (!hop) break;
    client = hop;
    if (!trusted.some((c) => inCidr(hop, c))) break;
  }
  return addressKey(client);
}
