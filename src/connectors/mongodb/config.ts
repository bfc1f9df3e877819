/** What the gateway needs of the mongodb type at start: its config schema (the driver itself loads on first use). */
import { databaseConfigSchema } from '../shared/toolspec.ts';

export const DEFAULT_MONGODB_PORT = 27017;
/** Characters MongoDB refuses in a database name. */
const MONGO_DB_NAME = '^[^/\\\\. "$*<>:|?]+$';

export const mongodbConfigSchema: Record<string, unknown> = {
  allOf: [
    databaseConfigSchema({ defaultPort: DEFAULT_MONGODB_PORT, identifierPattern: MONGO_DB_NAME, identifierMaxLength: 63, authSource: true }),
    // A MongoDB connector exposes the collections of `database`; it has no schemas.
    { properties: { database: { pattern: MONGO_DB_NAME } }, not: { required: ['schemas'] } },
  ],
};
