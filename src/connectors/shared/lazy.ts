/**
 * A driver registered at start whose implementation (its database client package and, for SQL, its guard's parser)
 * loads on first use: a gateway without a connector of that type never pays for it (docs/performance.md, Memory).
 * Every database type registers this way (postgresql, mysql, mongodb, mssql, oracle). The mongodb, mssql and oracledb client
 * packages are optional dependencies (docs/install.md), so a lean install may lack one: the type then answers 422
 * connector_type_unavailable naming the package to install, at creation and at validation, and the gateway itself
 * starts as usual.
 */
import { unprocessable } from '../../errors.ts';
import type { CallContext, ConnectorDriver, ExecutionContext } from '../types.ts';

/** True when `err` is the runtime's "package not installed" for `pkg` (Bun, Node and Deno word it differently). */
function isMissingPackage(err: unknown, pkg: string): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || /cannot find|could not find|not found/i.test(err.message);
  return notFound && (err.message.includes(`'${pkg}'`) || err.message.includes(`"${pkg}"`) || err.message.includes(`npm:${pkg}`));
}

export function lazyDriver<C, T, X extends CallContext<C> = ExecutionContext<C>>(
  meta: Pick<ConnectorDriver<C, T, X>, 'type' | 'kind' | 'configSchema' | 'readOnly'>,
  /** The npm package the implementation imports, named in the error when it is not installed. */
  pkg: string,
  load: () => Promise<ConnectorDriver<C, T, X>>,
): ConnectorDriver<C, T, X> {
  let loaded: ConnectorDriver<C, T, X> | null = null;
  let loading: Promise<ConnectorDriver<C, T, X>> | null = null;
  const impl = (): Promise<ConnectorDriver<C, T, X>> => {
    loading ??= load().then(
      (d) => (loaded = d),
      (err) => {
        loading = null;
        if (isMissingPackage(err, pkg)) {
          throw unprocessable(
            'connector_type_unavailable',
            `Connector type ${meta.type} needs the npm package ${pkg}, which is not installed on this gateway: install it (npm install ${pkg}) and restart.`,
          );
        }
        throw err;
      },
    );
    return loading;
  };
  return {
    ...meta,
    ready: async () => {
      await impl();
    },
    validate: async (...a) => (await impl()).validate(...a),
    introspect: async (...a) => (await impl()).introspect(...a),
    checkSaved: async (...a) => {
      const d = await impl();
      if (!d.checkSaved) throw unprocessable('saved_tools_unsupported', `Saved-statement tools are not served on ${meta.type} connectors.`);
      return d.checkSaved(...a);
    },
    checkPolicy: async (...a) => {
      const d = await impl();
      return d.checkPolicy ? d.checkPolicy(...a) : `${meta.type} tools take no column or row policies`;
    },
    touchedTables: async (...a) => {
      const d = await impl();
      return d.touchedTables ? d.touchedTables(...a) : [a[0].target];
    },
    // Once loaded, a call goes to the implementation at once (no await in between: postgresql is on the hot path).
    execute: (...a) => (loaded ? loaded.execute(...a) : impl().then((d) => d.execute(...a))),
    close: async (id) => loaded?.close(id),
    closeAll: async () => loaded?.closeAll(),
  };
}
