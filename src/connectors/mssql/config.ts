/** What the gateway needs of the mssql type at start: its config schema (the driver itself loads on first use). */
import { databaseConfigSchema } from '../shared/toolspec.ts';

export const DEFAULT_MSSQL_PORT = 1433;

export const mssqlConfigSchema: Record<string, unknown> = databaseConfigSchema({
  defaultPort: DEFAULT_MSSQL_PORT,
  identifierPattern: '^[^\\u0000\\]\\[]+$',
  identifierMaxLength: 128,
});
