/** Loads every connector driver (each registers itself) and re-exports the registry: the one list of driver folders. */
import './postgresql/index.ts';
import './mysql/index.ts';
import './mcp/index.ts';
import './mongodb/index.ts';
import './mssql/index.ts';
import './oracle/index.ts';

export { getDriver, connectorTypes } from './registry.ts';
