/**
 * SQL of the daily roll-up level's fold (decision 0412, migration 30's audit_rollup_fold) and of the pruning of the
 * hours it folded (decision 0414, migration 31's audit_rollup_prune).
 */
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

/**
 * Hours of the roll-ups with a daily level are kept this long (and until folded): a window that does not start at a
 * day must start within it (insights-statements.ts rollupRows); the insights' last 24 hours are the only such window.
 */
export const ROLLUP_HOURS_KEPT_MS = 72 * 3_600_000;
const PRUNE_ROWS_PER_CALL = 5_000;

/**
 * Deletes the folded hourly roll-up rows older than ROLLUP_HOURS_KEPT_MS, PRUNE_ROWS_PER_CALL rows per table per
 * transaction, until a call finds fewer.
 */
export async function pruneRollupHours(db: Queryable, keepMs = ROLLUP_HOURS_KEPT_MS): Promise<void> {
  for (;;) {
    const [row] = rowsOf<{ n: number }>(await db.execute(sql`SELECT audit_rollup_prune(${`${keepMs} milliseconds`}::interval, ${PRUNE_ROWS_PER_CALL}) AS n`));
    if (Number(row?.n ?? 0) < PRUNE_ROWS_PER_CALL) return;
  }
}
