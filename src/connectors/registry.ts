/** The registry of connector drivers: each driver registers itself once, by type. */
import type { ConnectorDriver } from './types.ts';
import { inSpan, markActiveSpan, tracingEnabled } from '../observability/tracing.ts';

// Each driver's config and target types are its own; the gateway hands them through untouched.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDriver = ConnectorDriver<any, any, any>;

const drivers = new Map<string, AnyDriver>();

export function registerConnector(driver: AnyDriver): void {
  if (drivers.has(driver.type)) throw new Error(`connector type "${driver.type}" is registered twice`);
  traced(driver);
  drivers.set(driver.type, driver);
}

/**
 * Every driver call is a span (`driver <type>`), marked failed when its tool result is an error. The driver object
 * keeps its identity (its `execute` is replaced in place), so the registry hands out the very object that registered.
 */
function traced(driver: AnyDriver): void {
  const spanName = `driver ${driver.type}`;
  const attributes = { 'toolgate.connector.type': driver.type };
  const execute = driver.execute.bind(driver);
  // Tracing off: the driver's own function, called through one check.
  driver.execute = (spec: Parameters<AnyDriver['execute']>[0], args: Record<string, unknown>, ctx: Parameters<AnyDriver['execute']>[2]) =>
    !tracingEnabled()
      ? execute(spec, args, ctx)
      : inSpan(
          spanName,
          async () => {
            const result = await execute(spec, args, ctx);
            if (result.isError) markActiveSpan({ 'toolgate.tool.is_error': true }, true);
            return result;
          },
          attributes,
        );
}

export function getDriver(type: string): AnyDriver | undefined {
  return drivers.get(type);
}

export function connectorTypes(): string[] {
  return [...drivers.keys()].sort();
}

export async function closeAllConnectors(): Promise<void> {
  await Promise.all([...drivers.values()].map((d) => d.closeAll()));
}
