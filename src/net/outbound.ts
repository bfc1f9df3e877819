/** HTTP through the outbound policy (policy.ts): URL rules, the address check, a connection pinned to the checked address, no redirects, time and size caps. */
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { ALLOW_HOSTS_HINT, checkTarget, isHostListed, OutboundRefusedError, stripTrailingDots, type OutboundPolicy } from './policy.ts';

export { isForbiddenAddress } from './ip.ts';
export { OutboundRefusedError, parseOutboundPolicy, type OutboundPolicy, type Resolver } from './policy.ts';

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

function effectivePort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** A checked URL and the addresses its host may be reached at (empty: an allow-listed name not looked up yet). */
interface CheckedUrl {
  url: URL;
  addresses: string[];
}

async function checkUrl(url: string, policy: OutboundPolicy, opts: { requireHttps: boolean }, lookUp: boolean): Promise<CheckedUrl> {
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
  const port = effectivePort(parsed);
  const listed = isHostListed(policy, host, port);
  if (opts.requireHttps && parsed.protocol !== 'https:' && !listed) {
    throw new OutboundRefusedError('insecure', `refused: host "${host}" must be reached over https ${ALLOW_HOSTS_HINT}`);
  }
  // An allow-listed name needs no look-up to be saved; it is looked up and checked when it is connected to.
  if (listed && !lookUp && isIP(host.replace(/^\[(.*)\]$/, '$1')) === 0) return { url: parsed, addresses: [] };
  return { url: parsed, addresses: await checkTarget(policy, { host, port }) };
}

/**
 * Checks that `url` may be requested and returns it parsed. WHATWG URL parsing canonicalises the host first, so
 * decimal, hex, octal, short and percent-encoded IPv4 spellings all arrive here as dotted decimal, and IPv6 in
 * compressed form. Names are resolved and refused if ANY address is refused (policy.ts). Allow-listed hosts skip
 * the https rule: they are the operator's explicit exceptions (local IdPs, tests).
 */
export async function assertOutboundUrl(url: string, policy: OutboundPolicy, opts: { requireHttps: boolean }): Promise<URL> {
  return (await checkUrl(url, policy, opts, false)).url;
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

/** `url` with its host replaced by `address` (the checked one), port and path kept. */
function pinnedUrl(url: URL, address: string): URL {
  const pinned = new URL(url);
  pinned.hostname = address.includes(':') ? `[${address}]` : address;
  return pinned;
}

/**
 * The request init for a pinned URL: the original authority in Host, and for https the name TLS verifies (and the
 * operator's extra CA, added to the system roots).
 */
function pinnedInit(init: RequestInit, url: URL, extraCa: string | null): RequestInit {
  const headers = new Headers(init.headers);
  headers.set('host', url.host);
  if (url.protocol !== 'https:') return { ...init, headers };
  const isName = isIP(url.hostname.replace(/^\[(.*)\]$/, '$1')) === 0;
  // Bun's fetch: `tls.serverName` sets SNI and the name the certificate is checked against.
  const tls = {
    ...(isName ? { serverName: stripTrailingDots(url.hostname) } : {}),
    ...(extraCa ? { ca: [...rootCertificates, extraCa] } : {}),
  };
  return { ...init, headers, tls } as RequestInit;
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
 * DNS rebinding: the request goes to the address that was checked, not to the name (fetch would resolve it again,
 * and a hostile DNS server can answer differently the second time). The name travels in the Host header and, for
 * https, as the TLS server name, so the certificate is still verified against it.
 */
export async function safeFetch(url: string | URL, init: RequestInit, policy: OutboundPolicy, opts: SafeFetchOptions): Promise<Response> {
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

  let checked: CheckedUrl;
  try {
    checked = await abortable(checkUrl(String(url), policy, opts, true), signal);
  } catch (err) {
    throw failure(err, hostOf(url));
  }
  const target = checked.url;
  const host = target.hostname;
  try {
    const res = await fetch(pinnedUrl(target, checked.addresses[0]!), { ...pinnedInit(init, target, policy.extraCa), redirect: 'manual', signal });
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      await res.body?.cancel().catch(() => undefined);
      throw new OutboundRefusedError('redirect', `refused: host "${host}" answered with a redirect (${res.status}); redirects are not followed`);
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
