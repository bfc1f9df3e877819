/** Error wording shared by SQL drivers: network failures in plain words, and messages scrubbed of secrets. */
import { ConnectorError } from '../types.ts';
import { OutboundRefusedError } from '../../net/policy.ts';

export type ConnectorErrorCode = ConnectorError['code'];

export interface Described {
  message: string;
  code: ConnectorErrorCode;
}

const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|HANDSHAKE/;

/** The connector's TLS mode, and whether the failure happened while the connection was being set up (validation). */
export interface TlsContext {
  mode: string;
  connecting: boolean;
}

const CLOSED_CODES = new Set(['ECONNRESET', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'PROTOCOL_CONNECTION_LOST', 'ERR_SOCKET_CLOSED']);

const NO_TLS_HINT = 'the server does not offer TLS; enable TLS on the server, or set tls to "disable" for a server on a trusted network';

/** Wording for a server that refuses an unencrypted connection (tls "disable" against a server that requires TLS). */
export const TLS_REQUIRED_TEXT = (where: string) => `${where} requires TLS: set tls to "require" (or "verify-full")`;

/**
 * What an org is told of a host the outbound policy refuses: the same words whatever the reason (a private address,
 * a name that does not resolve, the gateway itself), so refusals reveal nothing about what exists there.
 */
export function targetRefusedText(host: string): string {
  return (
    `host ${JSON.stringify(host.slice(0, 255))} is not an allowed destination: the gateway does not connect to private, loopback, ` +
    'link-local or reserved addresses, to names that do not resolve to an allowed address, or to itself ' +
    '(the operator can allow a private host or network with TOOLGATE_OUTBOUND_ALLOW_HOSTS)'
  );
}

/** The policy refusal inside a driver's error (drivers wrap socket errors in causes or error lists). */
export function refusalOf(err: unknown): OutboundRefusedError | null {
  const queue: unknown[] = [err];
  for (let seen = 0; seen < 12 && queue.length > 0; seen++) {
    const e = queue.shift();
    if (e instanceof OutboundRefusedError) return e;
    if (typeof e !== 'object' || e === null) continue;
    const o = e as { cause?: unknown; originalError?: unknown; errors?: unknown };
    queue.push(o.cause, o.originalError);
    if (Array.isArray(o.errors)) queue.push(...o.errors.slice(0, 4));
  }
  return null;
}

/** Node/Bun socket and DNS failures (and the drivers' own connect timeouts) → a message naming host:port only. */
export function describeNetworkError(err: unknown, host: string, port: number, connectTimeoutMs: number, tls?: TlsContext): Described | null {
  if (refusalOf(err)) return { message: targetRefusedText(host), code: 'connection_failed' };
  const code = String((err as { code?: unknown } | null)?.code ?? '');
  const where = `${host}:${port}`;
  const tlsOn = tls !== undefined && tls.mode !== 'disable';
  if (code === 'HANDSHAKE_NO_SSL_SUPPORT' || (tlsOn && tls.connecting && CLOSED_CODES.has(code))) {
    // PostgreSQL answers a TLS request it cannot serve by refusing it; the client then sees the connection close.
    return { message: `${where} does not accept TLS (tls is "${tls?.mode ?? 'require'}"): ${NO_TLS_HINT}`, code: 'connection_failed' };
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/.test(code)) {
    return {
      message: `TLS with ${where} failed: the server's certificate was not accepted (${code}); with tls "verify-full" it must be valid for the host name and signed by a trusted authority`,
      code: 'connection_failed',
    };
  }
  switch (code) {
    case 'ECONNREFUSED':
      return { message: `could not connect to ${where}: connection refused`, code: 'connection_failed' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return { message: `could not connect to ${where}: host name ${host} could not be resolved`, code: 'connection_failed' };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { message: `could not connect to ${where}: host unreachable`, code: 'connection_failed' };
    case 'ETIMEDOUT':
    case 'ETIMEOUT':
    case 'CONNECT_TIMEOUT':
      return { message: `could not connect to ${where}: no answer within ${Math.round(connectTimeoutMs / 1000)} s`, code: 'timeout' };
    case 'ECONNRESET':
    case 'EPIPE':
    case 'CONNECTION_CLOSED':
    case 'CONNECTION_DESTROYED':
    case 'CONNECTION_ENDED':
    case 'PROTOCOL_CONNECTION_LOST':
    case 'ERR_SOCKET_CLOSED':
      return { message: `the connection to ${where} was closed unexpectedly`, code: 'connection_failed' };
  }
  if (TLS_CODES.test(code)) return { message: `TLS with ${where} failed (${code})`, code: 'connection_failed' };
  return null;
}

/**
 * Last line of defence before a message leaves the driver: removes the credential and anything shaped like a
 * connection URL with user info. Short credentials are not replaced (it would mangle every message).
 */
export function scrub(message: string, credential: string | null): string {
  let out = message.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s@/]*@[^\s]*/gi, '<connection url>');
  if (credential && credential.length >= 3) out = out.split(credential).join('***');
  return out;
}

/**
 * What a caller sees of a failure that is neither the server's nor a known network condition: a JavaScript error
 * inside the gateway or the driver (RangeError: Invalid string length, a Buffer limit, a protocol parse error).
 * Its text describes the gateway's internals, never the caller's query, so it is not passed on.
 */
export const INTERNAL_FAILURE_TEXT =
  'The query failed inside the gateway (an internal error); nothing more can be said about it. Try a smaller result, e.g. fewer or narrower columns.';

/**
 * A validate/introspect failure as a ConnectorError with a safe message: a ConnectorError passes through, a failure
 * the driver could describe (network, authentication...) keeps its plain words, anything else becomes
 * "<connection check|introspection> failed: <the driver's message>", scrubbed of the credential in every case.
 */
export function connectorFailure(
  err: unknown,
  described: Described | null,
  credential: string | null,
  fallback: ConnectorErrorCode,
  driverMessage?: string,
): ConnectorError {
  if (err instanceof ConnectorError) return err;
  if (described) return new ConnectorError(scrub(described.message, credential), described.code);
  const what = fallback === 'introspection_failed' ? 'introspection' : 'connection check';
  const message = driverMessage ?? (err as { message?: string } | null)?.message ?? String(err);
  return new ConnectorError(scrub(`${what} failed: ${message}`, credential), fallback);
}
