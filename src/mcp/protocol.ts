/**
 * The MCP JSON-RPC protocol, independent of HTTP: the envelope (classifying a parsed message, writing a success or
 * an error), version negotiation, and a method table that checks each method's params against its $defs entry of
 * jsonrpc-schema.json and maps what a method throws to a JSON-RPC error. A new method is one entry of the table
 * (mcp/server.ts); the doorway (mcp/doorway.ts) never changes for it. Batches (2025-03-26) are mcp/batch.ts.
 */
import type { RequestId } from '../../generated/jsonrpc-types.ts';
import { RpcCode, RpcError, rpcErrorObject } from '../errors.ts';
import { checkParams, type DefName, type Defs, RawJson, validators } from '../util/jsonrpc-schema.ts';
import { observeMcp } from '../observability/metrics.ts';
import { inSpan, markActiveSpan } from '../observability/tracing.ts';

export type { RequestId };

/** The stateless revisions (no initialize; server/discover and a per-request `_meta` envelope: mcp/modern.ts). */
export const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;
/** The revisions negotiated by initialize; it never answers a modern one. */
const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
export const SUPPORTED_PROTOCOL_VERSIONS = [...MODERN_PROTOCOL_VERSIONS, ...LEGACY_PROTOCOL_VERSIONS] as const;
const LATEST_PROTOCOL_VERSION = LEGACY_PROTOCOL_VERSIONS[0];

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
    const request = m as unknown as Defs['JsonRpcRequest'];
    return { kind: 'request', id: request.id, method: request.method, params: request.params ?? {} };
  }
  if (validators.JsonRpcNotification!(m)) return { kind: 'notification', method: (m as unknown as Defs['JsonRpcNotification']).method };
  if (m.jsonrpc === '2.0' && !('method' in m) && ('result' in m || 'error' in m)) return { kind: 'response' };
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isSafeInteger(m.id)) ? (m.id as RequestId) : null;
  return { kind: 'invalid', id, message: 'Invalid Request: expected {"jsonrpc": "2.0", "id": string|integer, "method": string, "params"?: object}.' };
}

/**
 * initialize's revision: the client's when it is a 2025-era one we support, else our latest 2025-era one (a 2026-07-28
 * client does not send initialize; one that names 2026-07-28 in initialize gets 2025-11-25, as a 2025 server answers).
 */
export function negotiateVersion(requested: unknown): string {
  return typeof requested === 'string' && (LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

export function isSupportedVersion(value: string): boolean {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(value);
}

function success(id: RequestId, result: unknown, stamped: boolean): string {
  const json = result instanceof RawJson ? result.json : JSON.stringify(result);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${stamped ? stampComplete(json) : json}}`;
}

/** A 2026-07-28 result: `resultType` first in the result object (every result is complete: no multi-round trips here). */
function stampComplete(json: string): string {
  return json === '{}' ? '{"resultType":"complete"}' : `{"resultType":"complete",${json.slice(1)}`;
}

export function failure(id: RequestId | null, error: { code: number; message: string; data?: unknown }): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** A method's answer: the JSON text of the response, and the scope a step-up challenge names (null: none). */
export interface MethodAnswer {
  json: string;
  stepUpScope: string | null;
}

/**
 * A refusal that a wider grant would pass (decision 0248: a signed-in person can consent to one more connector): its
 * JSON-RPC error is the body, and `scope` comes back beside it in the MethodAnswer for the transport's challenge.
 */
export class StepUpRefusal extends RpcError {
  constructor(
    code: number,
    message: string,
    readonly scope: string,
  ) {
    super(code, message);
  }
}

/**
 * One method: the $defs entry its params must match (none: any object), what answers it for a session, and
 * optionally `reply`, which turns what `handle` resolved to (a domain outcome) into the result or throws its RpcError.
 * `reply` runs synchronously right after the one await of the answer, so mapping an outcome costs no extra await.
 */
export interface MethodDef<S, D extends DefName = DefName> {
  params?: D;
  /** The span of a request of this method (built once). */
  spanName: string;
  handle(session: S, params: Defs[D]): unknown;
  /** `started`: when the request began (performance.now()), for what the method records about it. */
  reply?(session: S, value: never, started: number): unknown;
}

/** Declares a method with its params typed from the schema entry it names (and `reply` typed from what it answers). */
export function method<S, D extends DefName, V>(
  params: D,
  handle: (session: S, params: Defs[D]) => Promise<V>,
  reply: (session: S, value: V, started: number) => unknown,
): MethodDef<S, D>;
export function method<S, D extends DefName>(params: D, handle: (session: S, params: Defs[D]) => unknown): MethodDef<S, D>;
export function method<S>(params: undefined, handle: (session: S, params: Record<string, unknown>) => unknown): MethodDef<S>;
export function method<S>(
  params: DefName | undefined,
  handle: (session: S, params: never) => unknown,
  reply?: (session: S, value: never, started: number) => unknown,
): MethodDef<S> {
  return { params, handle, reply, spanName: '' } as MethodDef<S>;
}

/**
 * The method table: answers one request with the JSON text of its response. What a method throws becomes a JSON-RPC
 * error: an RpcError as it is, anything else an opaque internal error (reported through `onInternalError`). A table of
 * the 2026-07-28 revision (`stamped`) stamps `resultType: "complete"` into every result its methods return.
 */
export class MethodTable<S> {
  private readonly methods: Map<string, MethodDef<S>>;
  private readonly unknownHint: string;

  constructor(
    methods: Record<string, MethodDef<S, any>>,
    private readonly onInternalError: (method: string, err: unknown) => void,
    private readonly stamped = false,
  ) {
    this.methods = new Map(Object.entries(methods).map(([name, def]) => [name, { ...def, spanName: `mcp ${name}` }]));
    this.unknownHint = `Supported: ${[...this.methods.keys()].join(', ')}.`;
  }

  /** The JSON text of the response (a batch's member, where no challenge is sent). */
  async answer(session: S, id: RequestId, method: string, params: Record<string, unknown>): Promise<string> {
    return (await this.reply(session, id, method, params)).json;
  }

  /** The response and, for a refusal a wider grant would pass, the scope to name in a challenge. */
  reply(session: S, id: RequestId, method: string, params: Record<string, unknown>): Promise<MethodAnswer> {
    const def = this.methods.get(method);
    return def ? inSpan(def.spanName, () => this.run(def, session, id, method, params)) : this.run(def, session, id, method, params);
  }

  private async run(def: MethodDef<S> | undefined, session: S, id: RequestId, method: string, params: Record<string, unknown>): Promise<MethodAnswer> {
    const started = performance.now();
    try {
      if (!def) throw new RpcError(RpcCode.MethodNotFound, `Method not found: ${method.slice(0, 100)}. ${this.unknownHint}`);
      if (def.params) checkParams(def.params, params);
      const value = await def.handle(session, params as never);
      const json = success(id, def.reply ? def.reply(session, value as never, started) : value, this.stamped);
      observeMcp(method, 'ok', (performance.now() - started) / 1000);
      return { json, stepUpScope: null };
    } catch (err) {
      const rpc = err instanceof RpcError;
      if (!rpc) this.onInternalError(method, err);
      observeMcp(method, rpc ? 'rpc_error' : 'internal_error', (performance.now() - started) / 1000);
      markActiveSpan({ 'rpc.jsonrpc.error_code': rpc ? err.code : RpcCode.InternalError }, true);
      return { json: failure(id, rpcErrorObject(err)), stepUpScope: err instanceof StepUpRefusal ? err.scope : null };
    }
  }
}
