/**
 * The SDK (`toolgate/client`, sdk/index.ts) bound to a test gateway: requests go to `gateway.handle`, which checks
 * every response against openapi.yaml (test/support/contract.ts), so suites that use the SDK stay contract tests.
 */
import type { Gateway } from '../../src/gateway.ts';
import { Toolgate, type ToolgateOptions } from '../../sdk/index.ts';
import { BASE } from './gateway.ts';

/** A Toolgate client on `gateway` with a bearer (token or API key) or client credentials. */
export function sdkFor(gateway: Gateway, auth: string | Pick<ToolgateOptions, 'clientId' | 'clientSecret' | 'scope'>): Toolgate {
  const credentials = typeof auth === 'string' ? { token: auth } : auth;
  return new Toolgate({ baseUrl: BASE, fetch: ((input: RequestInfo | URL, init?: RequestInit) => gateway.handle(new Request(input, init))) as typeof fetch, ...credentials });
}
