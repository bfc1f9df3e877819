/**
 * The console's REST access: the hey-api client generated from openapi.yaml, calling /api/* directly with the session
 * cookie as its credential (the bearer stays on the server) and the session's CSRF token. No hand-written
 * request per operation: pages call the generated functions with `client`.
 */
import { createClient } from '../../generated/client/client/index.ts';
import * as rest from '../../generated/client/sdk.gen.ts';

export { rest };
export type * from '../../generated/client/types.gen.ts';

export interface SessionInfo {
  org_id: string;
  org_name: string;
  org_slug: string;
  kind: 'idp_user' | 'oauth_client' | 'member';
  actor: string;
  /** The OAuth client's name, or the user's e-mail. */
  actor_name: string;
  roles: Array<'contributor' | 'admin' | 'finance'>;
  org_level: boolean;
  csrf_token: string;
  expires_at: string;
}

export const client = createClient({ baseUrl: location.origin });

let csrfToken = '';
client.interceptors.request.use((request) => {
  request.headers.set('x-toolgate-csrf', csrfToken);
  return request;
});

/** A REST error as the page shows it: the body's message, else the status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Listeners told when a call finds the session gone (401), so the shell can show the sign-in form. */
const signedOutListeners = new Set<() => void>();
export const onSignedOut = (listener: () => void) => signedOutListeners.add(listener);

/** Awaits a generated operation and returns its data, or throws an ApiError from the `{error, message}` body. */
export async function call<T>(pending: Promise<{ data?: T; error?: unknown; response?: Response }>): Promise<T> {
  const { data, error, response } = await pending;
  if (response?.ok) return data as T;
  const status = response?.status ?? 0;
  const body = (error ?? {}) as { error?: string; message?: string };
  if (status === 401) for (const listener of signedOutListeners) listener();
  throw new ApiError(
    status,
    body.error ?? 'request_failed',
    body.message ?? (status ? `The request failed (HTTP ${status}).` : 'The gateway could not be reached.'),
  );
}

async function consoleJson<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(path, { ...init, credentials: 'same-origin', headers: { ...(init.headers ?? {}), 'x-toolgate-csrf': csrfToken } });
  const body = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
  if (!response.ok) throw new ApiError(response.status, body.error ?? 'request_failed', body.message ?? `HTTP ${response.status}`);
  return body as T;
}

/** The console's own session operations (tag `console`, which the generated client leaves out: decision 0353). */
export async function loadSession(): Promise<SessionInfo | null> {
  try {
    const session = await consoleJson<SessionInfo>('/console/session');
    csrfToken = session.csrf_token;
    return session;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export const signInWithClient = (clientId: string, clientSecret: string) =>
  consoleJson<{ signed_in: true }>('/console/auth/client', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: clientId, client_secret: clientSecret }),
  });

/** A member's sign-in: org, e-mail and password. */
export const signInWithPassword = (org: string, email: string, password: string) =>
  consoleJson<{ signed_in: true }>('/console/auth/password', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ org, email, password }),
  });

export const signOut = () => consoleJson<{ signed_out: true }>('/console/auth/logout', { method: 'POST' });

/**
 * Runs a tool as the signed-in person or client: a tools/call on the org's MCP endpoint with the session as its
 * credential (audited as them). A JSON-RPC answer is the result or the error; a refusal at the endpoint's door is thrown.
 */
export async function playgroundCall(orgSlug: string, name: string, args: Record<string, unknown>) {
  const message = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name, arguments: args } };
  const sent = await rest.mcpEndpoint({ client, path: { orgSlug }, body: message, headers: { accept: 'application/json, text/event-stream' } });
  const body = (sent.data ?? sent.error) as { jsonrpc?: string; result?: unknown; error?: { code: number; message: string } } | undefined;
  if (body?.jsonrpc === '2.0') return 'result' in body ? { result: body.result } : { error: body.error };
  return call<never>(Promise.resolve({ error: sent.error, response: sent.response }));
}

/**
 * Pending approvals for the badge, polled with an ETag: an unchanged list answers 304 with no body, so polling every
 * few seconds costs a header exchange. Returns the count, or null when unchanged.
 */
let pendingTag = '';
export async function pollPendingApprovals(): Promise<number | null> {
  const response = await fetch('/api/org/approvals?status=pending&limit=500', {
    credentials: 'same-origin',
    headers: { 'x-toolgate-csrf': csrfToken, ...(pendingTag ? { 'if-none-match': pendingTag } : {}) },
  });
  if (response.status === 304) return null;
  if (!response.ok) throw new ApiError(response.status, 'request_failed', `HTTP ${response.status}`);
  pendingTag = response.headers.get('etag') ?? '';
  return ((await response.json()) as { approvals: unknown[] }).approvals.length;
}
