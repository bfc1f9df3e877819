/** Registers the `oracle` connector type; its implementation (driver.ts, with its client package) loads on first use. */
import type { DatabaseConfig } from '../types.ts';
import { registerConnector } from '../registry.ts';
import { lazyDriver } from '../shared/lazy.ts';
import { oracleConfigSchema } from './config.ts';

registerConnector(
  lazyDriver<DatabaseConfig, unknown>(
    { type: 'oracle', kind: 'database', readOnly: true, configSchema: oracleConfigSchema },
    'oracledb',
    async () => (await import('./driver.ts')).oracleDriver,
  ),
);
