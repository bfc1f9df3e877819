/** Registers the `postgresql` connector type (postgres.js pools per connector, one tool per table or view); its driver loads with the gateway (hot path, no lazy step). */
import { registerConnector } from '../registry.ts';
import { postgresqlDriver } from './driver.ts';

registerConnector(postgresqlDriver);
