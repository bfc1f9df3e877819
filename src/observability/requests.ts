/**
 * One request seen from outside: its id (the caller's traceparent trace id or X-Request-Id, else a new one), who
 * made it (noted by whatever authenticated it), and the one log line and the metrics written when it is answered.
 * The line never holds a secret, SQL text or an argument value: ids, kinds, a status and a duration.
 */
import { randomUUID } from 'node:crypto';
import type { Span } from '@opentelemetry/api';
import type { Principal } from '../principal.ts';
import type { Logger } from '../util/log.ts';
import { observeHttp } from './metrics.ts';
import { parseTraceparent } from './traceparent.ts';

/** A caller's request id is echoed into logs and headers: short, and of characters that cannot forge a log field. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The id of this request: the trace id of a valid incoming traceparent, else a valid X-Request-Id, else a new UUID. */
export function requestIdOf(request: Request): string {
  const traceparent = parseTraceparent(request.headers.get('traceparent'));
  if (traceparent !== null) return traceparent.traceId;
  const given = request.headers.get('x-request-id');
  if (given !== null && REQUEST_ID.test(given)) return given;
  return randomUUID();
}

interface Caller {
  principal?: Principal;
  orgId?: string;
  mcpMethod?: string;
}
const callers = new WeakMap<Request, Caller>();

function callerOf(request: Request): Caller {
  let caller = callers.get(request);
  if (!caller) callers.set(request, (caller = {}));
  return caller;
}

/** Records who made the request, once something authenticated it (the router for REST, the MCP transport). */
export function noteCaller(request: Request, principal: Principal): void {
  const caller = callerOf(request);
  caller.principal = principal;
  // The operator acts on no org (its principal's orgId is empty).
  caller.orgId = principal.orgId || undefined;
}

/** The JSON-RPC method of an MCP request (logged only when it is one of the known methods). */
export function noteMcpMethod(request: Request, method: string): void {
  callerOf(request).mcpMethod = method;
}

const MCP_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call']);

/** What identifies a credential without revealing it: its kind, and a public part (API key prefix, client id, subject). */
function credentialOf(request: Request, principal: Principal): { kind: string; prefix: string | null } {
  if (principal.kind === 'api_key') {
    // The first 12 characters are the key's public prefix (stored and listed as such); the rest is never logged.
    const key = request.headers.get('x-api-key');
    return { kind: 'api_key', prefix: key ? key.trim().slice(0, 12) : null };
  }
  if (principal.kind === 'operator') return { kind: 'operator', prefix: null };
  return { kind: principal.kind, prefix: principal.actorId.slice(0, 64) };
}

export interface Answered {
  route: string;
  method: string;
  status: number;
  startedAt: number;
  requestId: string;
  span: Span | null;
}

/** Metrics always; the log line at info (caller_*: the logger redacts keys that contain "credential"). */
export function requestAnswered(log: Logger, request: Request, a: Answered): void {
  const seconds = (performance.now() - a.startedAt) / 1000;
  observeHttp(a.route, a.method, a.status, seconds);
  if (a.span) {
    a.span.setAttribute('http.response.status_code', a.status);
    a.span.setAttribute('http.route', a.route);
  }
  if (!log.enabled('info')) return;
  const caller = callers.get(request);
  const credential = caller?.principal ? credentialOf(request, caller.principal) : null;
  const mcpMethod = caller?.mcpMethod;
  log.info('request', {
    request_id: a.requestId,
    ...(a.span ? { trace_id: a.span.spanContext().traceId } : {}),
    method: a.method,
    route: a.route,
    ...(mcpMethod !== undefined ? { mcp_method: MCP_METHODS.has(mcpMethod) ? mcpMethod : 'unknown' } : {}),
    status: a.status,
    outcome: a.status < 400 ? 'ok' : a.status < 500 ? 'refused' : 'error',
    duration_ms: Math.round(seconds * 10_000) / 10,
    org_id: caller?.orgId ?? null,
    caller_kind: credential?.kind ?? null,
    caller_prefix: credential?.prefix ?? null,
  });
}
