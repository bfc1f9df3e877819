/** The registry of connector drivers: each driver registers itself once, by type. */
import type { ConnectorDriver } from './types.ts';

const drivers = new Map<string, ConnectorDriver>();

export function registerConnector(driver: ConnectorDriver): void {
  if (drivers.has(driver.type)) throw new Error(`connector type "${driver.type}" is registered twice`);
  drivers.set(driver.type, driver);
}

export function getDriver(type: string): ConnectorDriver | undefined {
  return drivers.get(type);
}

export function connectorTypes(): string[] {
  return [...drivers.keys()].sort();
}

export async function closeAllConnectors(): Promise<void> {
  await Promise.all([...drivers.values()].map((d) => d.closeAll()));
}
