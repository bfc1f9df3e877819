/**
 * The hand-written part of the client, for what the generator cannot do: a client bound to one gateway that signs
 * in with OAuth client credentials (renewing the token before it expires) or sends a bearer it is given (a static
 * access token or API key, or a function that returns the current one, e.g. from an OAuth sign-in flow), retries
 * and times out requests (retry.ts), iterates cursor-paged lists, and turns every error body into a ToolgateError.
 * Operations are the generated functions; pass `client: toolgate.client` to any of them.
 */
import { createClient, type Client } from './generated/client/index.ts';
import { issueToken, listAuditEvents, listWebhookDeliveries } from './generated/sdk.gen.ts';
import type { AuditEvent, ListAuditEventsData, ListWebhookDeliveriesData, WebhookAttempt } from './generated/types.gen.ts';
import { ToolgateError } from './error.ts';
import { paginate } from './paginate.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';

export const DEFAULT_BASE_URL = 'http://localhost:8080';
/** The bearer standing for a failed sign-in until the request's fetch throws it (never sent: see `bearer`). */
const PARKED_SIGN_IN_FAILURE = 'toolgate-sign-in-failed-';
/** A token is renewed this long before it expires, so a request never leaves with one about to lapse. */
const REFRESH_MARGIN_MS = 30_000;

/** Returns the bearer for the next request (called before each one: cache in it if fetching is costly). */
export type TokenProvider = () => string | undefined | Promise<string | undefined>;

export interface ToolgateOptions {
  /** The gateway's public URL; `http://localhost:8080` (the gateway's default) when omitted. */
  baseUrl?: string;
  /** OAuth client credentials (`tgc_...` and its secret): the client fetches and renews the access token. */
  clientId?: string;
  clientSecret?: string;
  /** Scopes to ask for (space-separated); without it the token carries all of the client's scopes. */
  scope?: string;
  /**
   * A bearer instead of client credentials: an access token from an OAuth sign-in (or another gateway token), used as is, or a
   * function returning the current one (it is asked before every request, so it can renew through its own flow).
   * When given, it wins over client credentials.
   */
  token?: string | TokenProvider;
  /** An API key (`tgk_...`), sent as X-API-Key to the operations that take one (the MCP endpoint). */
  apiKey?: string;
  /** Retries of 429 (any method) and 5xx/network failures (GET, HEAD, PUT, DELETE); `false` sends once. */
  retry?: RetryOptions | false;
  /** Per attempt: no response headers within this many ms ends it with a ToolgateError `timeout` (none by default). */
  timeoutMs?: number;
  /** A fetch to send requests with (tests, proxies); the runtime's own by default. */
  fetch?: typeof fetch;
}

/** Per-call options of the list iterators. */
interface IterateOptions {
  /** Stops the iteration (and the request in flight) when aborted. */
  signal?: AbortSignal;
}

export class Toolgate {
  /** The generated client, configured for this gateway: pass it as `client` to any generated operation. */
  readonly client: Client;
  private readonly options: ToolgateOptions;
  private cached: { token: string; renewAt: number } | null = null;
  private pending: Promise<string> | null = null;
  private readonly parkedFailures = new Map<string, unknown>();
  private parkedCount = 0;

  constructor(options: ToolgateOptions = {}) {
    if (options.token === undefined && (options.clientId === undefined) !== (options.clientSecret === undefined)) {
      throw new TypeError('Toolgate: clientId and clientSecret go together');
    }
    this.options = options;
    const given = options.fetch;
    // Looked up per request, so a fetch replaced after construction (tests, polyfills) is the one used.
    const send = retryingFetch(() => given ?? globalThis.fetch, options.retry, options.timeoutMs);
    this.client = createClient({
      baseUrl: (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, ''),
      fetch: ((input: RequestInfo | URL, init?: RequestInit) => this.sendOrFail(send, new Request(input, init))) as typeof fetch,
      // The bearer goes where the contract asks for one; the API key only where it names the X-API-Key scheme.
      auth: (scheme) => (scheme.type === 'apiKey' ? this.options.apiKey : this.bearer()),
    });
    // hey-api hands every error interceptor the original body and keeps the last one's value: an interceptor added
    // later must return a ToolgateError itself (or wrap `new ToolgateError(response.status, error)`). An abort is the
    // caller's own: it rejects with the signal's reason whether or not throwOnError is set (a throwing interceptor
    // ends the call).
    this.client.interceptors.error.use((error, response, request) => {
      if (!response && request?.signal.aborted) throw error;
      return response ? new ToolgateError(response.status, error) : error;
    });
  }

  /** The bearer for the next request: the given token (or the provider's), or a client-credentials token renewed before it expires. */
  async accessToken(): Promise<string | undefined> {
    const { token } = this.options;
    if (typeof token === 'function') return token();
    if (token !== undefined) return token;
    if (this.options.clientId === undefined) return undefined;
    if (this.cached && Date.now() < this.cached.renewAt) return this.cached.token;
    // Concurrent requests share one token request instead of each signing in.
    this.pending ??= this.signIn().finally(() => (this.pending = null));
    return this.pending;
  }

  /** Forgets the cached token, so the next request signs in again (after a revocation, say). */
  forgetToken(): void {
    this.cached = null;
  }

  /** The org's audit log, newest first, every page: follows `next_cursor` until the last page. */
  auditEvents(
    query: Omit<NonNullable<ListAuditEventsData['query']>, 'cursor'> = {},
    options: IterateOptions = {},
  ): AsyncGenerator<AuditEvent, void, undefined> {
    return paginate(
      async (cursor) =>
        (await listAuditEvents({ client: this.client, throwOnError: true, signal: options.signal, query: { ...query, ...(cursor ? { cursor } : {}) } })).data,
      (page) => page.events,
      (page) => page.next_cursor,
    );
  }

  /** A webhook's delivery attempts, newest first, following `next_cursor` page by page. */
  webhookDeliveries(
    webhookId: string,
    query: Omit<NonNullable<ListWebhookDeliveriesData['query']>, 'cursor'> = {},
    options: IterateOptions = {},
  ): AsyncGenerator<WebhookAttempt, void, undefined> {
    return paginate(
      async (cursor) =>
        (
          await listWebhookDeliveries({
            client: this.client,
            throwOnError: true,
            signal: options.signal,
            path: { webhookId },
            query: { ...query, ...(cursor ? { cursor } : {}) },
          })
        ).data,
      (page) => page.deliveries,
      (page) => page.next_cursor,
    );
  }

  /**
   * The bearer for a request. A failed client-credentials sign-in (gateway down, secret refused) cannot fail the call
   * from here: hey-api runs the auth step outside its error handling, so the call would reject even without
   * throwOnError. The failure is parked under a one-off bearer that sendOrFail recognises and throws, inside the
   * fetch, where it becomes the call's `error` (decision 0311). A token provider's own exception is not caught.
   */
  private async bearer(): Promise<string | undefined> {
    if (this.options.token !== undefined || this.options.clientId === undefined) return this.accessToken();
    try {
      return await this.accessToken();
    } catch (error) {
      const parked = `${PARKED_SIGN_IN_FAILURE}${++this.parkedCount}`;
      this.parkedFailures.set(parked, error);
      return parked;
    }
  }

  /** Throws a parked sign-in failure in place of sending; sends everything else. */
  private sendOrFail(send: typeof fetch, request: Request): Promise<Response> {
    const bearer = request.headers.get('authorization')?.replace(/^Bearer /, '');
    if (bearer?.startsWith(PARKED_SIGN_IN_FAILURE)) {
      const failure = this.parkedFailures.get(bearer);
      this.parkedFailures.delete(bearer);
      return Promise.reject(failure);
    }
    return send(request);
  }

  private async signIn(): Promise<string> {
    const { clientId, clientSecret, scope } = this.options;
    const started = Date.now();
    const { data } = await issueToken({
      client: this.client,
      throwOnError: true,
      body: { grant_type: 'client_credentials', client_id: clientId!, client_secret: clientSecret!, ...(scope ? { scope } : {}) },
    });
    const lifetimeMs = data.expires_in * 1000;
    this.cached = { token: data.access_token, renewAt: started + Math.max(lifetimeMs - REFRESH_MARGIN_MS, lifetimeMs / 2) };
    return data.access_token;
  }
}
