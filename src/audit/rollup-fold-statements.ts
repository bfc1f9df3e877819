/** SQL of the daily roll-up level's fold (decision 0412, migration 30's audit_rollup_fold). */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';

const FOLD_MARGIN = '10 minutes';
const FOLD_HOURS_PER_CALL = 168;

/**
 * Folds every hour due into its day (`margin`: how long an hour must have been over), FOLD_HOURS_PER_CALL hours per
 * transaction; returns the hours folded.
 */
export async function foldRollupHours(db: Queryable, margin = FOLD_MARGIN): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = rowsOf<{ n: number }>(await db.execute(sql`SELECT audit_rollup_fold(${margin}::interval, ${FOLD_HOURS_PER_CALL}) AS n`));
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < FOLD_HOURS_PER_CALL) return total;
  }
}
