/** The registry of connector drivers: each driver registers itself once, by type. */
import type { ConnectorDriver } from './types.ts';

// Each driver's config and target types are its own; the gateway hands them through untouched.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDriver = ConnectorDriver<any, any>;

const drivers = new Map<string, AnyDriver>();

export function registerConnector(driver: AnyDriver): void {
  if (drivers.has(driver.type)) throw new Error(`connector type "${driver.type}" is registered twice`);
  drivers.set(driver.type, driver);
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
