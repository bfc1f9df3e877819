/** The registry of connector drivers: each driver registers itself once, by type. */
import type { ConnectorDriver } from './types.ts';
import { inSpan, markActiveSpan, tracingEnabled } from '../observability/tracing.ts';

// Each driver's config and target types are its own; the gateway hands them through untouched.
type AnyDriver = ConnectorDriver<any, any, any>;

const drivers = new Map<string, AnyDriver>();

export function registerConnector(driver: AnyDriver): void {
  if (drivers.has(driver.type)) throw new Error(`connector type "${driver.type}" is registered twice`);
  drivers.set(driver.type, traced(driver));
}

/**
 * The driver as the registry hands it out: the same members, its `execute` wrapped so that every call is a span
 * (`driver <type>`), marked failed when its tool result is an error. The registered object is left as it was
 * (drivers are plain objects whose members never use `this`).
 */
function traced(driver: AnyDriver): AnyDriver {
  const spanName = `driver ${driver.type}`;
  const attributes = { 'toolgate.connector.type': driver.type };
  const execute = driver.execute;
  // Tracing off: the driver's own function, called through one check.
  const tracedExecute: AnyDriver['execute'] = (spec, args, ctx) =>
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
  return { ...driver, execute: tracedExecute };
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
