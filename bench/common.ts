/** What the bench scripts share: the local PostgreSQL, the 10,000-row `items` table, and clean-up on exit or signal. */
import postgres from 'postgres';

export const PG = { host: '127.0.0.1', port: 5432, user: 'postgres' };
export const ROWS = 10_000;
export const TABLE = 'items';
/** Issue 38's JOIN scenario: 50 categories, `items.qty` (0-49) is the category's id. */
export const CATEGORIES = 'categories';

/** Creates `${TABLE}` with ROWS rows and `${CATEGORIES}` (50 rows) in `database` (which must exist) and analyzes them. */
export async function seedItems(database: string): Promise<void> {
  const data = postgres({ ...PG, database, max: 1, onnotice: () => undefined });
  try {
    await data.unsafe(`CREATE TABLE ${TABLE} (
      id integer PRIMARY KEY, sku text NOT NULL, name text NOT NULL, price numeric(10, 2) NOT NULL, qty integer NOT NULL)`);
    await data.unsafe(`INSERT INTO ${TABLE}
      SELECT g, 'SKU-' || lpad(g::text, 6, '0'), 'Item number ' || g, round((g % 997) * 1.25, 2), g % 50
        FROM generate_series(1, ${ROWS}) AS g`);
    await data.unsafe(`ANALYZE ${TABLE}`);
    await data.unsafe(`CREATE TABLE ${CATEGORIES} (id integer PRIMARY KEY, label text NOT NULL)`);
    await data.unsafe(`INSERT INTO ${CATEGORIES} SELECT g, 'Category ' || g FROM generate_series(0, 49) AS g`);
    await data.unsafe(`ANALYZE ${CATEGORIES}`);
  } finally {
    await data.end({ timeout: 2 });
  }
}

/**
 * Clean-up run once, on the normal path or on SIGINT/SIGTERM: `before` first (stopping child processes), then the
 * registered steps in reverse order (dropping databases). A failing step is reported and the rest still run.
 */
export function cleanupOnExit(before?: () => Promise<void>) {
  const steps: Array<() => Promise<void>> = [];
  let running: Promise<void> | null = null;
  const run = (): Promise<void> =>
    (running ??= (async () => {
      await before?.();
      for (const step of steps.reverse()) await step().catch((err) => console.error(`bench: clean-up failed: ${String(err)}`));
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      console.error(`bench: ${signal}, cleaning up`);
      void run().then(() => process.exit(130));
    });
  }
  return { add: (step: () => Promise<void>) => void steps.push(step), run, started: () => running !== null };
}
