/**
 * Registers the `mysql` connector type (MySQL and MariaDB, mysql2 pools per connector). Its implementation (driver.ts,
 * with mysql2, ~7 MB of RSS, and the guard's parser) loads with the first validate, introspect or call, as
 * postgresql's does (decision 0192); once loaded, calls go to it directly.
 */
import { registerConnector } from '../registry.ts';
import { lazyDriver } from '../shared/lazy.ts';
import { mysqlConfigSchema } from './config.ts';

registerConnector(
  lazyDriver({ type: 'mysql', kind: 'database', configSchema: mysqlConfigSchema }, 'mysql2', async () => (await import('./driver.ts')).mysqlDriver),
);
