/**
 * `@toolgate/client`: the operations and types generated from the gateway's openapi.yaml (src/generated, by
 * scripts/gen.ts) plus a small hand-written layer: Toolgate (credentials, token renewal, retries, timeouts, paging)
 * and ToolgateError. No runtime dependencies; runs on Node 20+, Bun, Deno and browsers.
 */
export * from './generated/index.ts';
export { createClient, createConfig, type Client, type Config, type RequestResult } from './generated/client/index.ts';
/** The default client the operations use when no `client` is passed (base URL http://localhost:8080). */
export { client } from './generated/client.gen.ts';
export { Toolgate, DEFAULT_BASE_URL, type ToolgateOptions, type TokenProvider } from './toolgate.ts';
export type { RetryOptions } from './retry.ts';
export { paginate } from './paginate.ts';
export { ToolgateError } from './error.ts';
