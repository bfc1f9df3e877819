/**
 * A minimal MCP client over Streamable HTTP (protocol 2025-06-18), every request through the outbound guard
 * (safeFetch: address policy, https unless allow-listed, no redirects, time and size caps). Legacy HTTP+SSE is not
 * spoken (docs/decisions/0075-upstream-mcp-transport.md). One session per connector, opened lazily and re-opened when the upstream forgets it (404).
 */
import { safeFetch, type OutboundPolicy } from '../../net/outbound.ts';
import { inSpan } from '../../observability/tracing.ts';
import type { McpConfig } from '../../../generated/client/types.gen.ts';

const PROTOCOL_VERSION = '2025-06-18';

/** Headers an operator may not set in config.headers: framing, routing, cookies, auth (that is the credential) and MCP's own. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'content-type',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'cookie',
  'authorization',
  'accept',
  'accept-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'x-api-key',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);

/** The first reserved header name in the config, if any. */
export function reservedHeader(config: McpConfig): string | undefined {
  return Object.keys(config.headers ?? {}).find((h) => RESERVED_HEADERS.has(h.toLowerCase()));
}

/** A JSON-RPC error the upstream answered (the request reached it). */
export class UpstreamRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamRpcError';
  }
}

/** The upstream answered something that is not MCP over Streamable HTTP (wrong status, not JSON-RPC). */
export class UpstreamProtocolError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'UpstreamProtocolError';
  }
}

export interface UpstreamLimits {
  timeoutMs: number;
  maxBytes: number;
}

/** One upstream session: what the gateway sends with every request to it. */
export class UpstreamSession {
  private sessionId: string | null = null;
  private opening: Promise<void> | null = null;
  private nextId = 1;
  /** The policy the session was opened under: closing it from the pool uses the same rules. */
  policy: OutboundPolicy | null = null;
  /** What the upstream's initialize answer declared it serves (tools, resources, prompts, completions). */
  capabilities: Record<string, unknown> = {};

  constructor(
    readonly config: McpConfig,
    private readonly credential: string | null,
  ) {}

  private headers(): Record<string, string> {
    // Built from the connector alone: nothing of the caller's request (Authorization, X-API-Key, cookies) is here.
    const h: Record<string, string> = {
      ...(this.config.headers ?? {}),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
    };
    if (this.credential !== null) h.authorization = `Bearer ${this.credential}`;
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    return h;
  }

  private async post(
    policy: OutboundPolicy,
    limits: UpstreamLimits,
    message: Record<string, unknown>,
  ): Promise<{ status: number; body: unknown; session: string | null }> {
    const res = await inSpan('upstream mcp', () =>
      safeFetch(this.config.url, { method: 'POST', headers: this.headers(), body: JSON.stringify(message) }, policy, {
        requireHttps: true,
        timeoutMs: limits.timeoutMs,
        maxBytes: limits.maxBytes,
      }),
    );
    const text = await res.text();
    const session = res.headers.get('mcp-session-id');
    if (res.status === 202 || text === '') return { status: res.status, body: null, session };
    const type = res.headers.get('content-type') ?? '';
    return { status: res.status, body: type.includes('text/event-stream') ? fromEventStream(text, message.id) : parseJson(text), session };
  }

  /** initialize + notifications/initialized, once per session (concurrent callers share it). */
  open(policy: OutboundPolicy, limits: UpstreamLimits): Promise<void> {
    this.policy = policy;
    if (!this.opening) {
      this.opening = this.initialize(policy, limits);
      this.opening.catch(() => (this.opening = null));
    }
    return this.opening;
  }

  private async initialize(policy: OutboundPolicy, limits: UpstreamLimits): Promise<void> {
    this.sessionId = null;
    const id = this.nextId++;
    const { status, body, session } = await this.post(policy, limits, {
      jsonrpc: '2.0',
      id,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'toolgate', version: '0.1.0' } },
    });
    const result = resultOf(status, body);
    const declared = result.capabilities;
    this.capabilities = declared && typeof declared === 'object' && !Array.isArray(declared) ? (declared as Record<string, unknown>) : {};
    this.sessionId = session;
    await this.post(policy, limits, { jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /**
   * Ends the session on the upstream (DELETE, best effort, short timeout), so stateful servers do not keep one per
   * validation or per replaced pool. Nothing to do for a stateless upstream (no session id).
   */
  async close(policy: OutboundPolicy): Promise<void> {
    const id = this.sessionId;
    this.sessionId = null;
    this.opening = null;
    if (!id) return;
    const headers = this.headers();
    headers['mcp-session-id'] = id;
    await safeFetch(this.config.url, { method: 'DELETE', headers }, policy, { requireHttps: true, timeoutMs: 2000, maxBytes: 64 * 1024 }).catch(
      () => undefined,
    );
  }

  /** One request in the session; a session the upstream no longer knows (404) is re-opened once. */
  async request(policy: OutboundPolicy, limits: UpstreamLimits, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    await this.open(policy, limits);
    let answer = await this.post(policy, limits, { jsonrpc: '2.0', id: this.nextId++, method, params });
    if (answer.status === 404 && this.sessionId) {
      this.opening = null;
      await this.open(policy, limits);
      answer = await this.post(policy, limits, { jsonrpc: '2.0', id: this.nextId++, method, params });
    }
    return resultOf(answer.status, answer.body);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamProtocolError('the upstream answered with a body that is not JSON');
  }
}

/** The JSON-RPC response to request `id` in an SSE body (the stream ends after the response, as the spec requires). */
function fromEventStream(text: string, id: unknown): unknown {
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (!data) continue;
    const msg = parseJson(data) as { id?: unknown };
    if (msg && typeof msg === 'object' && msg.id === id) return msg;
  }
  throw new UpstreamProtocolError('the upstream closed its event stream without answering');
}

function resultOf(status: number, body: unknown): Record<string, unknown> {
  const msg = body as { result?: unknown; error?: { code?: unknown; message?: unknown } } | null;
  if (msg && typeof msg === 'object' && msg.error && typeof msg.error === 'object') {
    throw new UpstreamRpcError(typeof msg.error.code === 'number' ? msg.error.code : -32603, String(msg.error.message ?? 'error').slice(0, 500));
  }
  if (status < 200 || status >= 300) throw new UpstreamProtocolError(`the upstream answered HTTP ${status}`, status);
  if (!msg || typeof msg !== 'object' || !msg.result || typeof msg.result !== 'object')
    throw new UpstreamProtocolError('the upstream answered without a JSON-RPC result');
  return msg.result as Record<string, unknown>;
}
