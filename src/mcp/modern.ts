/**
 * MCP 2026-07-28, the stateless revision, on POST /mcp/{orgSlug}: which revision a message speaks and the checks
 * that revision puts on it before it is answered. There is no initialize: every request carries its protocol version,
 * client info and capabilities in `params._meta` (the envelope), and the HTTP headers `MCP-Protocol-Version`,
 * `Mcp-Method` and (tools/call) `Mcp-Name` repeat what the body says so that an intermediary can route without parsing
 * it; a header that disagrees with the body, or a required one that is missing, is refused with -32020 (HTTP 400).
 *
 * The era is decided by the body, as the v2 SDKs do: a request whose `_meta` names a protocol version is a 2026-07-28
 * request (its envelope is checked, never ignored); one without is 2025-era traffic (initialize and the rest,
 * as before) unless its MCP-Protocol-Version header names a 2026 revision, which is refused for the missing envelope.
 * A 2025-era request costs one property read here (`params._meta`) and one string comparison of the header.
 */
import { RpcCode } from '../errors.ts';
import { validators } from '../util/jsonrpc-schema.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import { failure, MODERN_PROTOCOL_VERSIONS, type RequestId, SUPPORTED_PROTOCOL_VERSIONS } from './protocol.ts';

/** The error codes the 2026-07-28 revision added (-32021, a missing client capability, is never sent: no method needs one). */
const ModernCode = { HeaderMismatch: -32020, UnsupportedProtocolVersion: -32022 } as const;

const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The first stateless revision; revisions are ISO dates, so every later one sorts after it. */
const FIRST_MODERN_REVISION = '2026-07-28';
const REVISION = /^\d{4}-\d{2}-\d{2}$/;

/** A refusal of the revision's checks: HTTP 400 with this JSON-RPC error body. */
export class Refused {
  constructor(readonly body: string) {}
}

export type Era = 'legacy' | 'modern' | Refused;

/** Whether a revision id belongs to the stateless era (2026-07-28 or later). */
export function isModernRevision(version: string): boolean {
  return version >= FIRST_MODERN_REVISION && REVISION.test(version);
}

const clip = (value: string): string => (value.length > 100 ? `${value.slice(0, 100)}…` : value);

function refused(id: RequestId | null, code: number, message: string, data?: unknown): Refused {
  return new Refused(failure(id, data === undefined ? { code, message } : { code, message, data }));
}

/** -32020: a header disagrees with the body (`header` is what it said, '(missing)' for a required one that is absent). */
function mismatch(id: RequestId | null, header: string, body: string): Refused {
  return refused(id, ModernCode.HeaderMismatch, `Bad Request: the request headers and body disagree: ${body}`, { mismatch: { header: clip(header), body } });
}

/** -32022: the request named a revision this endpoint does not speak; `supported` lists those it does. */
export function unsupportedVersion(id: RequestId | null, requested: string): Refused {
  return refused(
    id,
    ModernCode.UnsupportedProtocolVersion,
    `Unsupported protocol version: ${clip(requested)}. Supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`,
    { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: clip(requested) },
  );
}

/** Whether params carry a protocol-version claim in `_meta` (the mark of a 2026-era request). */
export function claimsRevision(params: unknown): boolean {
  const meta = params && typeof params === 'object' ? (params as { _meta?: unknown })._meta : undefined;
  return meta !== null && typeof meta === 'object' && PROTOCOL_VERSION_KEY in meta;
}

/**
 * The revision of one request and, for a 2026-07-28 request, its checks in the order the SDKs' servers apply them:
 * the envelope, the header/body cross-checks, the revision, then the presence of the required headers.
 * `version` is the trimmed MCP-Protocol-Version header (null without one).
 */
export function requestEra(headers: Headers, version: string | null, id: RequestId, method: string, params: Record<string, unknown>): Era {
  const meta = params._meta;
  if (meta === undefined || meta === null || typeof meta !== 'object' || !(PROTOCOL_VERSION_KEY in meta)) {
    if (version === null || !isModernRevision(version)) return 'legacy';
    if (method === 'initialize') return mismatch(id, version, 'initialize (the 2025-era handshake) was sent with a 2026-era MCP-Protocol-Version header');
    return refused(
      id,
      RpcCode.InvalidParams,
      `Invalid params: the MCP-Protocol-Version header names ${version}, but params._meta lacks ${PROTOCOL_VERSION_KEY} and io.modelcontextprotocol/clientCapabilities.`,
    );
  }
  const validate = validators.RequestMetaEnvelope!;
  if (!validate(meta)) {
    return refused(id, RpcCode.InvalidParams, `Invalid params: ${describeSchemaError('params._meta', validate.errors?.[0])}`);
  }
  const claim = (meta as Record<string, string>)[PROTOCOL_VERSION_KEY]!;
  if (version !== null && version !== claim) {
    return mismatch(id, version, `params._meta names protocol version ${clip(claim)} but the MCP-Protocol-Version header names ${clip(version)}`);
  }
  const methodHeader = headers.get('mcp-method')?.trim() ?? null;
  if (methodHeader !== null && methodHeader !== method) {
    return mismatch(id, methodHeader, `the body names method ${method} but the Mcp-Method header names ${clip(methodHeader)}`);
  }
  if (!isModernRevision(claim)) return 'legacy';
  if (!(MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(claim)) return unsupportedVersion(id, claim);
  if (version === null) return mismatch(id, '(missing)', `params._meta names protocol version ${claim} but the MCP-Protocol-Version header is absent`);
  if (methodHeader === null) return mismatch(id, '(missing)', `the body names method ${method} but the Mcp-Method header is absent`);
  return method === 'tools/call' ? checkName(headers, id, params.name) : 'modern';
}

/** tools/call: the Mcp-Name header must carry params.name (Base64-wrapped as `=?base64?…?=` when it is not plain ASCII). */
function checkName(headers: Headers, id: RequestId, name: unknown): Era {
  if (typeof name !== 'string') return 'modern'; // the params check refuses it (-32602)
  const header = headers.get('mcp-name')?.trim() ?? null;
  if (header === null) return mismatch(id, '(missing)', `the body calls tool ${clip(name)} but the Mcp-Name header is absent`);
  const decoded = decodeHeaderValue(header);
  if (decoded === undefined) return mismatch(id, header, 'the Mcp-Name header carries an invalid Base64 value');
  if (decoded !== name) return mismatch(id, header, `the body calls tool ${clip(name)} but the Mcp-Name header names ${clip(decoded)}`);
  return 'modern';
}

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A header value as sent: plain, or `=?base64?<canonical Base64 of UTF-8>?=` (undefined: an invalid wrapping). */
function decodeHeaderValue(value: string): string | undefined {
  if (!value.startsWith(BASE64_PREFIX) || !value.endsWith(BASE64_SUFFIX) || value.length < BASE64_PREFIX.length + BASE64_SUFFIX.length) return value;
  const b64 = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  if (!CANONICAL_BASE64.test(b64)) return undefined;
  try {
    return utf8.decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

/** A notification under a 2026 header: its Mcp-Method header, when sent, must name its method (then 202 as ever). */
export function notificationMismatch(headers: Headers, version: string | null, method: string): Refused | undefined {
  if (version === null || !isModernRevision(version)) return undefined;
  const header = headers.get('mcp-method')?.trim() ?? null;
  if (header === null || header === method) return undefined;
  return mismatch(null, header, `the notification names method ${method} but the Mcp-Method header names ${clip(header)}`);
}
