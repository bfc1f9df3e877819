/** Classifies IP addresses and host names as forbidden outbound destinations (loopback, private, link-local, metadata, ...). */

/** Names that reach the machine itself or a cloud metadata service without needing DNS to say so. */
const FORBIDDEN_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** IPv4 ranges that must never be reached from the gateway, as [network, prefix length]. */
const FORBIDDEN_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, includes the 169.254.169.254 metadata service
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking, often used for internal networks
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast 255.255.255.255
];

/** Parses strict dotted-decimal IPv4 (what DNS and WHATWG URL canonicalisation produce) into a 32-bit number. */
export function parseIPv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    // Leading zeros are refused: some parsers read them as octal, so the meaning is ambiguous.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

const V4_RANGES = FORBIDDEN_V4.map(([net, bits]) => {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return { net: (parseIPv4(net) ?? 0) & mask, mask };
});

function isForbiddenV4(value: number): boolean {
  return V4_RANGES.some(({ net, mask }) => (value & mask) >>> 0 === net >>> 0);
}

/** Parses IPv6 text (with optional zone and embedded IPv4 tail) into eight 16-bit groups. */
export function parseIPv6(input: string): number[] | null {
  let text = input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // An embedded dotted IPv4 tail (::ffff:1.2.3.4) becomes two hex groups so one grammar handles the rest.
  const lastColon = text.lastIndexOf(':');
  if (lastColon < 0) return null;
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const toGroups = (s: string | undefined): number[] | null => {
    if (!s) return [];
    const groups: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      groups.push(parseInt(g, 16));
    }
    return groups;
  };
  const head = toGroups(halves[0]);
  const rest = toGroups(halves[1]);
  if (!head || !rest) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - rest.length;
  if (missing < 1) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...rest];
}

const v4From = (hi: number, lo: number): number => ((hi << 16) >>> 0) + lo;

function isForbiddenV6(g: readonly number[]): boolean {
  const at = (i: number): number => g[i] ?? 0;
  const zeroUpTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  // IPv4-mapped ::ffff:a.b.c.d, SIIT ::ffff:0:a.b.c.d and deprecated IPv4-compatible ::a.b.c.d (which covers :: and ::1)
  // all reach an IPv4 address: judge that address.
  if (zeroUpTo(5) && at(5) === 0xffff) return isForbiddenV4(v4From(at(6), at(7)));
  if (zeroUpTo(4) && at(4) === 0xffff && at(5) === 0) return isForbiddenV4(v4From(at(6), at(7)));
  if (zeroUpTo(6)) return true; // ::/96: unspecified, loopback and IPv4-compatible; none is a legitimate destination
  // NAT64 well-known prefix 64:ff9b::/96 translates to the embedded IPv4 address.
  if (at(0) === 0x64 && at(1) === 0xff9b && at(2) === 0 && at(3) === 0 && at(4) === 0 && at(5) === 0) {
    return isForbiddenV4(v4From(at(6), at(7)));
  }
  // Only global unicast 2000::/3 is reachable; this refuses ULA fc00::/7, link-local fe80::/10, site-local,
  // multicast ff00::/8, local-use NAT64 64:ff9b:1::/48, discard 100::/64 and the rest of the reserved space.
  if ((at(0) & 0xe000) !== 0x2000) return true;
  if (at(0) === 0x2002) return isForbiddenV4(v4From(at(1), at(2))); // 6to4 embeds the IPv4 address in bits 16-47
  if (at(0) === 0x2001 && at(1) === 0) {
    // Teredo: the client's IPv4 address is stored inverted in the last 32 bits.
    return isForbiddenV4(v4From(at(6) ^ 0xffff, at(7) ^ 0xffff)) || isForbiddenV4(v4From(at(2), at(3)));
  }
  if (at(0) === 0x2001 && at(1) === 0x0db8) return true; // documentation
  return false;
}

/** True for names that are loopback or metadata services whatever DNS says (localhost, *.localhost, metadata.google.internal, ...). */
export function isForbiddenHostname(name: string): boolean {
  const host = name.toLowerCase().replace(/\.+$/, '');
  return FORBIDDEN_NAMES.has(host) || host.endsWith('.localhost');
}

/**
 * True when `ip` must not be contacted: loopback, unspecified, private, link-local (metadata), CGNAT, multicast,
 * reserved, and IPv6 forms embedding such an IPv4 address. Metadata names are refused too. Anything that is not a
 * canonical IP address is refused as well (fail closed): callers pass DNS results or URL-canonicalised hosts.
 */
export function isForbiddenAddress(ip: string): boolean {
  const text = ip.trim().replace(/^\[(.*)\]$/, '$1');
  const v4 = parseIPv4(text);
  if (v4 !== null) return isForbiddenV4(v4);
  const v6 = text.includes(':') ? parseIPv6(text) : null;
  if (v6 !== null) return isForbiddenV6(v6);
  return true;
}

/** One address as a 128-bit number; IPv4 is held IPv4-mapped (::ffff:a.b.c.d) so both families share one space. */
export function addressBits(ip: string): bigint | null {
  const text = ip.trim().replace(/^\[(.*)\]$/, '$1');
  const v4 = parseIPv4(text);
  if (v4 !== null) return (0xffffn << 32n) | BigInt(v4);
  const v6 = text.includes(':') ? parseIPv6(text) : null;
  if (v6 === null) return null;
  return v6.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
}

/** The IPv4 addresses an IPv6 address carries (mapped, SIIT, compatible, NAT64, 6to4, Teredo), or the address itself. */
function carriedV4(ip: string): number[] {
  const text = ip.trim().replace(/^\[(.*)\]$/, '$1');
  const v4 = parseIPv4(text);
  if (v4 !== null) return [v4];
  const g = text.includes(':') ? parseIPv6(text) : null;
  if (!g) return [];
  const at = (i: number): number => g[i] ?? 0;
  const zeroUpTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(5) && at(5) === 0xffff) return [v4From(at(6), at(7))];
  if (zeroUpTo(4) && at(4) === 0xffff && at(5) === 0) return [v4From(at(6), at(7))];
  // :: and ::1 are themselves (unspecified, loopback), not IPv4-compatible forms of 0.0.0.0 and 0.0.0.1.
  if (zeroUpTo(6)) return at(6) === 0 && at(7) <= 1 ? [] : [v4From(at(6), at(7))];
  if (at(0) === 0x64 && at(1) === 0xff9b && at(2) === 0 && at(3) === 0 && at(4) === 0 && at(5) === 0) return [v4From(at(6), at(7))];
  if (at(0) === 0x2002) return [v4From(at(1), at(2))];
  if (at(0) === 0x2001 && at(1) === 0) return [v4From(at(6) ^ 0xffff, at(7) ^ 0xffff), v4From(at(2), at(3))];
  return [];
}

/**
 * Metadata services outside link-local: Alibaba (100.100.100.200), Azure's wire server (168.63.129.16), AWS over
 * IPv6 (fd00:ec2::254) and its ECS task metadata (fd00:ec2::23).
 */
const METADATA_ADDRESSES = ['100.100.100.200', '168.63.129.16', 'fd00:ec2::254', 'fd00:ec2::23'].map((a) => addressBits(a)!);

/** IPv4 ranges no allow-list entry can open: "this network" (unspecified), link-local (metadata), multicast, reserved. */
const NEVER_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['169.254.0.0', 16],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const NEVER_V4_RANGES = NEVER_V4.map(([net, bits]) => {
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return { net: (parseIPv4(net) ?? 0) & mask, mask };
});

/**
 * True for addresses the gateway never connects to, whatever the operator allow-lists: unspecified (0.0.0.0, ::),
 * link-local (the 169.254.169.254 metadata service among them), multicast, reserved, and the other metadata
 * services, in every IPv6 form that carries such an IPv4 address. Unparseable text counts as such (fail closed).
 */
export function isNeverAddress(ip: string): boolean {
  const bits = addressBits(ip);
  if (bits === null) return true;
  if (METADATA_ADDRESSES.includes(bits)) return true;
  for (const v4 of carriedV4(ip)) {
    if (NEVER_V4_RANGES.some(({ net, mask }) => (v4 & mask) >>> 0 === net >>> 0)) return true;
  }
  if (bits === 0n) return true; // ::
  const top = Number(bits >> 112n);
  if ((top & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((top & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  return false;
}

/** True for loopback addresses (127/8, ::1) in every form that carries one. */
export function isLoopbackAddress(ip: string): boolean {
  const bits = addressBits(ip);
  if (bits === 1n) return true;
  return carriedV4(ip).some((v4) => v4 >>> 24 === 127);
}
