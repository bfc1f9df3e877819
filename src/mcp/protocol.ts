/** MCP over Streamable HTTP, stateless: transport checks, envelope classification, version negotiation. */
import * as rpc from '../../generated/validators/jsonrpc.ts';
import { RpcCode, RpcError } from '../errors.ts';
import { describeSchemaError } from '../util/schema-errors.ts';

export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0];
/** MCP transports: a request without the header is assumed to speak 2025-03-26. */
export const DEFAULT_PROTOCOL_VERSION = '2025-03-26';

export type RequestId = string | number;

type Validator = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string; params: Record<string, unknown>; keyword: string }> | null };
const validators = rpc as unknown as Record<string, Validator>;

export type Classified =
  | { kind: 'request'; id: RequestId; method: string; params: Record<string, unknown> }
  | { kind: 'notification'; method: string }
  | { kind: 'response' }
  | { kind: 'invalid'; id: RequestId | null; message: string };

/** Sorts a parsed body into request, notification, client response, or invalid (-32600). */
export function classify(message: unknown): Classified {
  if (Array.isArray(message)) return { kind: 'invalid', id: null, message: 'Batches are not supported: send one JSON-RPC message per request.' };
  if (!message || typeof message !== 'object') return { kind: 'invalid', id: null, message: 'The body must be a JSON-RPC 2.0 request object.' };
  const m = message as Record<string, unknown>;
  // A number id must come back exactly as sent: Infinity (from 1e400) would be echoed as null, and integers
  // beyond 2^53 as another number, so neither can be answered.
  const exactId = typeof m.id !== 'number' || Number.isSafeInteger(m.id);
  if (exactId && validators.JsonRpcRequest!(m)) {
    return { kind: 'request', id: m.id as RequestId, method: m.method as string, params: (m.params as Record<string, unknown>) ?? {} };
  }
  if (validators.JsonRpcNotification!(m)) return { kind: 'notification', method: m.method as string };
  if (m.jsonrpc === '2.0' && !('method' in m) && ('result' in m || 'error' in m)) return { kind: 'response' };
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isSafeInteger(m.id)) ? (m.id as RequestId) : null;
  return { kind: 'invalid', id, message: 'Invalid Request: expected {"jsonrpc": "2.0", "id": string|integer, "method": string, "params"?: object}.' };
}

/** Validates params (or, with `where`, another part of them) against a $defs entry of jsonrpc-schema.json; -32602 names the failing field. */
export function checkParams(def: string, params: unknown, where = 'params'): void {
  const validate = validators[def]!;
  if (validate(params)) return;
  throw new RpcError(RpcCode.InvalidParams, `Invalid params: ${describeSchemaError(where, validate.errors?.[0])}`);
}

/** The revision both sides speak: the client's when we support it, else our latest (the client may then disconnect). */
export function negotiateVersion(requested: unknown): string {
  return typeof requested === 'string' && (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

export function isSupportedVersionHeader(value: string | null): boolean {
  return value === null || (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(value.trim());
}

/** A result serialised ahead of time (e.g. a cached tools/list): success() splices the JSON text in as is. */
export class RawJson {
  constructor(readonly json: string) {}
}

export function success(id: RequestId, result: unknown): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result instanceof RawJson ? result.json : JSON.stringify(result)}}`;
}

export function failure(id: RequestId | null, error: { code: number; message: string; data?: unknown }): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}
