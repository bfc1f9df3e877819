/**
 * `toolgate/client` and the gateway's own tests: a thin re-export of the `@toolgate/client` package
 * (packages/client), so that both always run the very code the package ships (decision 0200).
 */
export * from '../packages/client/src/index.ts';
