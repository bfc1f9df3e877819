/** What the gateway needs of the oracle type at start: its config schema (the driver itself loads on first use). */
import { databaseConfigSchema } from '../shared/toolspec.ts';

export const DEFAULT_ORACLE_PORT = 1521;

export const oracleConfigSchema: Record<string, unknown> = databaseConfigSchema({
  defaultPort: DEFAULT_ORACLE_PORT,
  identifierPattern: '^[^\\u0000"]+$',
  identifierMaxLength: 128,
});
