/**
 * Registers the `postgresql` connector type (postgres.js pools per connector, one tool per table or view). Its
 * implementation (driver.ts, and with it the SQL guard's parser: libpg-query's WebAssembly, ~18 MB of RSS) loads with
 * the first validate, introspect or call, so a gateway that has served no PostgreSQL connector yet does not hold it
 * (decision 0192); once loaded, calls go to it directly, without a step in between.
 */
import { registerConnector } from '../registry.ts';
import { lazyDriver } from '../shared/lazy.ts';
import { postgresqlConfigSchema } from './config.ts';

registerConnector(
  lazyDriver(
    { type: 'postgresql', kind: 'database', configSchema: postgresqlConfigSchema },
    'postgres',
    async () => (await import('./driver.ts')).postgresqlDriver,
  ),
);
