/**
 * The SDK (`toolgate/client`, sdk/index.ts) bound to a test gateway: requests go to `gateway.handle`, which checks
 * every response against openapi.yaml (test/support/contract.ts), so suites that use the SDK stay contract tests.
 */
import type { Gateway } from '../../src/gateway.ts';
import { Toolgate, ToolgateError, type ToolgateOptions } from '../../sdk/index.ts';
import { ContractViolation } from './contract.ts';
import { BASE } from './gateway.ts';

type Credentials = string | Pick<ToolgateOptions, 'clientId' | 'clientSecret' | 'scope'>;

/** A Toolgate client on `gateway` with a bearer (token or API key) or client credentials. */
export function sdkFor(gateway: Gateway, auth: Credentials): Toolgate {
  return sdkAt(BASE, ((input: RequestInfo | URL, init?: RequestInit) => gateway.handle(new Request(input, init))) as typeof fetch, auth);
}

/** A Toolgate client on a running server at `baseUrl`, sending with a contract-checking fetch (contractFetch). */
export function sdkAt(baseUrl: string, fetch: typeof globalThis.fetch, auth: Credentials): Toolgate {
  const credentials = typeof auth === 'string' ? { token: auth } : auth;
  // No retries: a suite sees each answer the gateway gives (a 429, a 503) exactly once, as the contract check does.
  const toolgate = new Toolgate({ baseUrl, fetch, retry: false, ...credentials });
  // The generated client turns a throwing fetch into a returned `error`; a contract violation must fail the test
  // however the call was made, so it is thrown on (an error interceptor that throws ends the request). Each error
  // interceptor gets the original error and the last one's value wins, so this one also does Toolgate's wrapping.
  toolgate.client.interceptors.error.use((error, response) => {
    if (error instanceof ContractViolation) throw error;
    return response ? new ToolgateError(response.status, error) : error;
  });
  return toolgate;
}
