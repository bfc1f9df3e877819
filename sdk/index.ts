/**
 * `toolgate/client`: the generated operations and types (generated/client, from openapi.yaml) plus the small
 * hand-written layer (Toolgate, ToolgateError). Runs unchanged on Node 20+ (built JS in dist/), Deno and Bun.
 */
export * from '../generated/client/index.ts';
export { createClient, createConfig, type Client, type Config, type RequestResult } from '../generated/client/client/index.ts';
/** The default client the operations use when no `client` is passed (base URL http://localhost:8080). */
export { client } from '../generated/client/client.gen.ts';
export { Toolgate, DEFAULT_BASE_URL, type ToolgateOptions } from './toolgate.ts';
export { ToolgateError } from './error.ts';
