/**
 * A driver registered at start whose implementation (its database client package and, for SQL, its guard's parser)
 * loads on first use: a gateway without a connector of that type never pays for it (docs/performance.md, Memory).
 * The postgresql, mongodb, mssql and oracle drivers register this way.
 */
import type { CallContext, ConnectorDriver, ExecutionContext } from '../types.ts';

export function lazyDriver<C, T, X extends CallContext<C> = ExecutionContext<C>>(
  meta: Pick<ConnectorDriver<C, T, X>, 'type' | 'kind' | 'configSchema' | 'readOnly'>,
  load: () => Promise<ConnectorDriver<C, T, X>>,
): ConnectorDriver<C, T, X> {
  let loaded: ConnectorDriver<C, T, X> | null = null;
  let loading: Promise<ConnectorDriver<C, T, X>> | null = null;
  const impl = (): Promise<ConnectorDriver<C, T, X>> => {
    loading ??= load().then(
      (d) => (loaded = d),
      (err) => {
        loading = null;
        throw err;
      },
    );
    return loading;
  };
  return {
    ...meta,
    validate: async (...a) => (await impl()).validate(...a),
    introspect: async (...a) => (await impl()).introspect(...a),
    // Once loaded, a call goes to the implementation at once (no await in between: postgresql is on the hot path).
    execute: (...a) => (loaded ? loaded.execute(...a) : impl().then((d) => d.execute(...a))),
    close: async (id) => loaded?.close(id),
    closeAll: async () => loaded?.closeAll(),
  };
}
