/** Domain errors with snake_case codes, and the two mappers that turn them into wire form (REST and JSON-RPC). */

export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503;

export class AppError extends Error {
  constructor(
    readonly status: ErrorStatus,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (code: string, message: string) => new AppError(404, code, message);
export const conflict = (code: string, message: string) => new AppError(409, code, message);
export const unprocessable = (code: string, message: string) => new AppError(422, code, message);

/** RFC 6750: a 401 on a bearer-protected resource names the scheme (and the error when a token was sent). */
export function unauthenticated(message: string, tokenSent = false): AppError {
  const challenge = tokenSent ? `Bearer realm="toolgate", error="invalid_token"` : `Bearer realm="toolgate"`;
  return new AppError(401, 'unauthenticated', message, { 'WWW-Authenticate': challenge });
}

/** A suspended org's credentials are refused everywhere (docs/decisions/0210-operator-org-suspend-and-plan-change.md). */
export const orgSuspended = () =>
  new AppError(403, 'org_suspended', 'This org is suspended by the gateway operator: its credentials are refused until it is resumed.');

export function forbidden(code: string, message: string, scope?: string): AppError {
  const headers: Record<string, string> = scope ? { 'WWW-Authenticate': `Bearer realm="toolgate", error="insufficient_scope", scope="${scope}"` } : {};
  return new AppError(403, code, message, headers);
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

/** REST wire form: `{error, message}` with the status from the spec's table. Unknown errors become an opaque 500. */
export function restErrorResponse(err: unknown, log?: (msg: string, err: unknown) => void): Response {
  if (err instanceof AppError) {
    return json({ error: err.code, message: err.message }, err.status, err.headers);
  }
  log?.('unhandled error', err);
  return json({ error: 'internal_error', message: 'An internal error occurred.' }, 500);
}

/** JSON-RPC error codes used on the tool endpoint. */
export const RpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  QuotaExceeded: -32000,
  InsufficientScope: -32003,
  /** MCP resources/read: no resource of that URI is served to this credential. */
  ResourceNotFound: -32002,
  /** An upstream MCP server failed an item request (resources/read, prompts/get, completion/complete). */
  UpstreamFailed: -32004,
  /** The per-second burst limit refused the request (HTTP 429 with Retry-After); server-error range, "429" in it. */
  RateLimited: -32029,
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** JSON-RPC wire form of an error; anything not an RpcError is an opaque internal error. */
export function rpcErrorObject(err: unknown): { code: number; message: string; data?: unknown } {
  if (err instanceof RpcError) {
    return err.data === undefined ? { code: err.code, message: err.message } : { code: err.code, message: err.message, data: err.data };
  }
  return { code: RpcCode.InternalError, message: 'Internal error' };
}

/** RFC 6749 errors of the token endpoint keep their own body shape (written by the router's error mapping). */
export class OAuthError extends AppError {
  constructor(status: 400 | 401 | 429, code: string, description: string, headers: Record<string, string> = {}) {
    super(status, code, description, headers);
  }
}
