/** Guard for every outbound request the gateway makes: operator allow-list, private-address refusal, no redirects, time and size caps. */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isForbiddenAddress, isForbiddenHostname } from './ip.ts';

export { isForbiddenAddress, isForbiddenHostname } from './ip.ts';

/** Resolves a host name to all of its addresses; injectable so tests need no DNS. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

export interface OutboundPolicy {
  /** Canonical `host` (any port) and `host:port` entries; IPv6 hosts are bracketed, as in URL.hostname. */
  readonly allowHosts: ReadonlySet<string>;
  readonly resolve: Resolver;
}

export type OutboundRefusal =
  | 'invalid_url'
  | 'scheme'
  | 'credentials'
  | 'insecure'
  | 'forbidden_address'
  | 'unresolvable'
  | 'redirect'
  | 'too_large';

/** A request the policy does not allow. The message names at most the host, never the path or query. */
export class OutboundRefusedError extends Error {
  constructor(
    readonly reason: OutboundRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundRefusedError';
  }
}

/** An allowed request that did not complete (timeout, connection failure). */
export class OutboundFetchError extends Error {
  constructor(
    readonly reason: 'timeout' | 'network',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'OutboundFetchError';
  }
}

const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

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

/** Builds the policy from the operator's TOOLGATE_OUTBOUND_ALLOW_HOSTS list. Throws on an unparseable entry. */
export function parseOutboundPolicy(input: { allowHosts: readonly string[]; resolve?: Resolver }): OutboundPolicy {
  const allowHosts = new Set(input.allowHosts.filter((h) => h.trim() !== '').map(canonicalAllowEntry));
  return { allowHosts, resolve: input.resolve ?? systemResolver };
}

function stripTrailingDots(hostname: string): string {
  return hostname.replace(/\.+$/, '');
}

function effectivePort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Exact, case-insensitive match: a bare host entry allows any port, a host:port entry only that port. */
function isAllowListed(policy: OutboundPolicy, url: URL): boolean {
  const host = stripTrailingDots(url.hostname);
  return policy.allowHosts.has(host) || policy.allowHosts.has(`${host}:${effectivePort(url)}`);
}

const forbidden = (host: string) =>
  new OutboundRefusedError(
    'forbidden_address',
    `refused: the address of host "${host}" is in a private, loopback or reserved range`,
  );

/**
 * Checks that `url` may be requested and returns it parsed. WHATWG URL parsing canonicalises the host first, so
 * decimal, hex, octal, short and percent-encoded IPv4 spellings all arrive here as dotted decimal, and IPv6 in
 * compressed form. Names are resolved and refused if ANY address is forbidden. Allow-listed hosts skip the address
 * and https rules: they are the operator's explicit exceptions (local IdPs, tests).
 */
export async function assertOutboundUrl(
  url: string,
  policy: OutboundPolicy,
  opts: { requireHttps: boolean },
): Promise<URL> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new OutboundRefusedError('invalid_url', 'refused: not a valid absolute URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new OutboundRefusedError('scheme', 'refused: only http and https URLs are allowed');
  }
  // Credentials in the URL would be sent to whoever answers and tend to end up in logs.
  if (parsed.username !== '' || parsed.password !== '') {
    throw new OutboundRefusedError('credentials', 'refused: URLs must not carry credentials');
  }
  const host = stripTrailingDots(parsed.hostname);
  if (host === '') throw new OutboundRefusedError('invalid_url', 'refused: the URL has no host');
  const allowed = isAllowListed(policy, parsed);
  if (opts.requireHttps && parsed.protocol !== 'https:' && !allowed) {
    throw new OutboundRefusedError('insecure', `refused: host "${host}" must be reached over https`);
  }
  if (allowed) return parsed;

  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(literal) !== 0) {
    if (isForbiddenAddress(literal)) throw forbidden(host);
    return parsed;
  }
  if (isForbiddenHostname(host)) throw forbidden(host);
  let addresses: readonly string[];
  try {
    addresses = await policy.resolve(host);
  } catch {
    throw new OutboundRefusedError('unresolvable', `refused: host "${host}" could not be resolved`);
  }
  if (addresses.length === 0) {
    throw new OutboundRefusedError('unresolvable', `refused: host "${host}" could not be resolved`);
  }
  // One bad address is enough: the connection may use any of them.
  if (addresses.some(isForbiddenAddress)) throw forbidden(host);
  return parsed;
}

/** Rejects as soon as `signal` aborts, so steps that take no signal (DNS, stream reads) honour the deadline. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Best-effort host for error messages before the URL has been checked. */
function hostOf(url: string | URL): string {
  try {
    return new URL(String(url)).hostname;
  } catch {
    return '(invalid)';
  }
}

const tooLarge = (host: string, maxBytes: number) =>
  new OutboundRefusedError('too_large', `refused: the response from host "${host}" exceeds ${maxBytes} bytes`);

async function readCapped(res: Response, host: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge(host, maxBytes);
  }
  if (!res.body) return new Uint8Array();
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await abortable(reader.read(), signal);
      if (done) break;
      total += value.byteLength;
      // Counted after decompression, so a small compressed bomb is caught too.
      if (total > maxBytes) throw tooLarge(host, maxBytes);
      chunks.push(value);
    }
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    throw err;
  }
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

export interface SafeFetchOptions {
  requireHttps: boolean;
  timeoutMs: number;
  maxBytes: number;
}

/**
 * Fetches `url` under the policy and returns a fully buffered Response (at most `maxBytes` of body).
 * Redirects are refused rather than followed, since the target could be a private address. The timeout covers
 * DNS, connection, headers and body.
 *
 * Residual risk: DNS rebinding. The name is resolved and checked here, then fetch resolves it again; a hostile
 * DNS server can answer differently the second time. fetch offers no portable way to pin the connection to the
 * checked IP, so this guard stops configuration mistakes and naive SSRF, not an attacker controlling DNS with a
 * zero TTL. Network-level egress rules are the complete fix.
 */
export async function safeFetch(
  url: string | URL,
  init: RequestInit,
  policy: OutboundPolicy,
  opts: SafeFetchOptions,
): Promise<Response> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const failure = (err: unknown, host: string): unknown => {
    if (err instanceof OutboundRefusedError) return err;
    if (timeout.aborted) {
      return new OutboundFetchError('timeout', `request to host "${host}" timed out after ${opts.timeoutMs} ms`, {
        cause: err,
      });
    }
    if (init.signal?.aborted) return init.signal.reason; // the caller's own cancellation stays theirs
    return new OutboundFetchError('network', `request to host "${host}" failed`, { cause: err });
  };

  let target: URL;
  try {
    target = await abortable(assertOutboundUrl(String(url), policy, opts), signal);
  } catch (err) {
    throw failure(err, hostOf(url));
  }
  const host = target.hostname;
  try {
    const res = await fetch(target, { ...init, redirect: 'manual', signal });
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      await res.body?.cancel().catch(() => undefined);
      throw new OutboundRefusedError(
        'redirect',
        `refused: host "${host}" answered with a redirect (${res.status}); redirects are not followed`,
      );
    }
    const body = await readCapped(res, host, opts.maxBytes, signal);
    const headers = new Headers(res.headers);
    // The body is already decoded and re-framed; stale framing headers would mislead the reader.
    headers.delete('content-encoding');
    headers.delete('content-length');
    const nullBody = res.status === 204 || res.status === 205;
    return new Response(nullBody ? null : body, { status: res.status, statusText: res.statusText, headers });
  } catch (err) {
    throw failure(err, host);
  }
}
