/** Host names as they arrive in Host and Origin headers, reduced to one spelling per name so allow-lists compare equal. */

/**
 * The names the loopback name `localhost` stands for: itself and the two addresses it resolves to (RFC 6761;
 * browsers pin it to 127.0.0.1 and ::1). Other 127/8 addresses are not among them: another process may listen
 * on 127.0.0.2 at the same port.
 */
export const LOOPBACK_HOSTNAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** What a Host header or an authority may hold: letters, digits, `.-_`, and `[]:` for IPv6 literals and ports. */
const AUTHORITY_CHARS = /^[A-Za-z0-9._\-[\]:]+$/;

/**
 * The canonical host name of an authority (`name`, `name:port`, `[v6]`, `[v6]:port`), without its port: lower
 * case, IPv4 in dotted decimal as the WHATWG URL parser (and so every browser) reads it (`127.1`, `0x7f.1` and
 * `2130706433` are 127.0.0.1), IPv6 compressed in brackets, one trailing dot dropped (`localhost.` is the same
 * DNS name as `localhost`). Null when the text is not a valid authority (user info, paths, bad ports, spaces).
 */
export function canonicalHostname(authority: string): string | null {
  if (!AUTHORITY_CHARS.test(authority)) return null;
  let url: URL;
  try {
    url = new URL(`http://${authority}`);
  } catch {
    return null;
  }
  const name = url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
  return name === '' || name.endsWith('.') ? null : name;
}

/** A browser origin split into its parts, host name canonical as above; the port is '' for the scheme's default. */
export interface OriginParts {
  scheme: string;
  hostname: string;
  port: string;
}

/** A serialised origin (`scheme://host[:port]`, nothing after it), as browsers send it in Origin. */
const ORIGIN_SHAPE = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@\\]+)$/i;

export function parseOrigin(origin: string): OriginParts | null {
  const shape = ORIGIN_SHAPE.exec(origin);
  if (!shape) return null;
  const hostname = canonicalHostname(shape[2]!);
  if (hostname === null) return null;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return null;
  }
  return { scheme: url.protocol.slice(0, -1).toLowerCase(), hostname, port: url.port };
}

/** One spelling per origin, for set lookups: `scheme://host[:port]` with the default port left out. */
export function originKey(parts: OriginParts): string {
  return `${parts.scheme}://${parts.hostname}${parts.port ? `:${parts.port}` : ''}`;
}
