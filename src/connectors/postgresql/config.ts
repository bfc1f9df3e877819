/** What the gateway needs of the postgresql type at start: its config schema and default port. */
import { databaseConfigSchema } from '../shared/toolspec.ts';

export const DEFAULT_PG_PORT = 5432;

export const postgresqlConfigSchema: Record<string, unknown> = databaseConfigSchema({
  defaultPort: DEFAULT_PG_PORT,
  identifierPattern: '^[A-Za-z_][A-Za-z0-9_$]*$',
  identifierMaxLength: 63,
});
