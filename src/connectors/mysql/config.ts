/** What the gateway needs of the mysql type at start: its config schema and default port. */
import { databaseConfigSchema } from '../shared/toolspec.ts';

export const DEFAULT_MYSQL_PORT = 3306;

export const mysqlConfigSchema: Record<string, unknown> = databaseConfigSchema({
  defaultPort: DEFAULT_MYSQL_PORT,
  // Unquoted MySQL identifiers may start with a digit; '$' is accepted too.
  identifierPattern: '^[A-Za-z0-9_$]+$',
  identifierMaxLength: 64,
});
