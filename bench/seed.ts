/** The benchmarks' data: the local PostgreSQL and a 10,000-row `items` table, the same for every bench script. */
import postgres from 'postgres';

export const PG = { host: '127.0.0.1', port: 5432, user: 'postgres' };
export const ROWS = 10_000;
export const TABLE = 'items';

/** Creates `${TABLE}` with ROWS rows in `database` (which must exist) and analyzes it. */
export async function seedItems(database: string): Promise<void> {
  const data = postgres({ ...PG, database, max: 1, onnotice: () => undefined });
  try {
    await data.unsafe(`CREATE TABLE ${TABLE} (
      id integer PRIMARY KEY, sku text NOT NULL, name text NOT NULL, price numeric(10, 2) NOT NULL, qty integer NOT NULL)`);
    await data.unsafe(`INSERT INTO ${TABLE}
      SELECT g, 'SKU-' || lpad(g::text, 6, '0'), 'Item number ' || g, round((g % 997) * 1.25, 2), g % 50
        FROM generate_series(1, ${ROWS}) AS g`);
    await data.unsafe(`ANALYZE ${TABLE}`);
  } finally {
    await data.end({ timeout: 2 });
  }
}
