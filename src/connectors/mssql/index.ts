/** Registers the `mssql` connector type; its implementation (driver.ts, with its client package) loads on first use. */
import type { DatabaseConfig } from '../types.ts';
import { registerConnector } from '../registry.ts';
import { lazyDriver } from '../shared/lazy.ts';
import { mssqlConfigSchema } from './config.ts';

registerConnector(
  lazyDriver<DatabaseConfig, unknown>(
    { type: 'mssql', kind: 'database', readOnly: true, configSchema: mssqlConfigSchema },
    'mssql',
    async () => (await import('./driver.ts')).mssqlDriver,
  ),
);
