/**
 * The hand-written part of the SDK, for what the generator cannot do: a client bound to one gateway that signs in
 * with OAuth client credentials (or an API key), keeps the token fresh through the generated client's `auth`
 * callback, and turns every error body into a ToolgateError. Operations are the generated functions; pass
 * `client: toolgate.client` to any of them.
 */
import { createClient, type Client } from '../generated/client/client/index.ts';
import { issueToken } from '../generated/client/sdk.gen.ts';
import { ToolgateError } from './error.ts';

export const DEFAULT_BASE_URL = 'http://localhost:8080';
/** A token is renewed this long before it expires, so a request never leaves with one about to lapse. */
const REFRESH_MARGIN_MS = 30_000;

export interface ToolgateOptions {
  /** The gateway's public URL; `http://localhost:8080` (the gateway's default) when omitted. */
  baseUrl?: string;
  /** OAuth client credentials (`tgc_...` and its secret): the SDK fetches and renews the access token. */
  clientId?: string;
  clientSecret?: string;
  /** Scopes to ask for (space-separated); without it the token carries all of the client's scopes. */
  scope?: string;
  /** An already issued access token or API key, used as the bearer as is (never renewed). */
  token?: string;
  /** A fetch to send requests with (tests, proxies); the runtime's own by default. */
  fetch?: typeof fetch;
}

export class Toolgate {
  /** The generated client, configured for this gateway: pass it as `client` to any generated operation. */
  readonly client: Client;
  private readonly options: ToolgateOptions;
  private cached: { token: string; renewAt: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(options: ToolgateOptions = {}) {
    if (options.token === undefined && (options.clientId === undefined) !== (options.clientSecret === undefined)) {
      throw new TypeError('Toolgate: clientId and clientSecret go together');
    }
    this.options = options;
    this.client = createClient({
      baseUrl: (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, ''),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      auth: () => this.accessToken(),
    });
    // hey-api hands every error interceptor the original body and keeps the last one's value: an interceptor added
    // later must return a ToolgateError itself (or wrap `new ToolgateError(response.status, error)`).
    this.client.interceptors.error.use((error, response) => (response ? new ToolgateError(response.status, error) : error));
  }

  /** The bearer for the next request: the given token, or a client-credentials token renewed before it expires. */
  async accessToken(): Promise<string | undefined> {
    if (this.options.token !== undefined) return this.options.token;
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
