/** Registers the `mongodb` connector type; its implementation (driver.ts, with its client package) loads on first use. */
import type { DatabaseConfig } from '../types.ts';
import type { MongoExecutionContext } from './driver.ts';
import { registerConnector } from '../registry.ts';
import { lazyDriver } from '../shared/lazy.ts';
import { mongodbConfigSchema } from './config.ts';

registerConnector(
  lazyDriver<DatabaseConfig, unknown, MongoExecutionContext>(
    { type: 'mongodb', kind: 'database', readOnly: true, configSchema: mongodbConfigSchema },
    'mongodb',
    async () => (await import('./driver.ts')).mongodbDriver,
  ),
);
