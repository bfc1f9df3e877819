/** Registers the `mysql` connector type (MySQL and MariaDB, mysql2 pools per connector); its driver loads with the gateway (hot path, no lazy step). */
import { registerConnector } from '../registry.ts';
import { mysqlDriver } from './driver.ts';

registerConnector(mysqlDriver);
