/**
 * The daily level of the audit roll-ups (decision 0412): each hour is folded into its day once it has been over for
 * FOLD_MARGIN, by audit_rollup_fold (migration 30) under its own lock, so instances folding at once are harmless (the
 * second finds nothing left). Runs shortly after start and then every FOLD_INTERVAL_MS; after a long stop it catches
 * up FOLD_HOURS_PER_CALL hours per transaction.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';

const FOLD_INTERVAL_MS = 5 * 60 * 1000;
const FOLD_MARGIN = '10 minutes';
const FOLD_HOURS_PER_CALL = 168;

/** Folds every hour due (`margin`: how long an hour must have been over); returns the hours folded. */
export async function foldRollupHours(db: Queryable, margin = FOLD_MARGIN): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = rowsOf<{ n: number }>(await db.execute(sql`SELECT audit_rollup_fold(${margin}::interval, ${FOLD_HOURS_PER_CALL}) AS n`));
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < FOLD_HOURS_PER_CALL) return total;
  }
}

/** Folds shortly after start and then every 5 minutes; returns the stop function. */
export function startRollupFolder(deps: { db: Queryable; log: Logger }): () => void {
  const run = () => foldRollupHours(deps.db).catch((err) => deps.log.error('audit roll-up fold failed', { error: describeError(err) }));
  const first = setTimeout(run, 15_000);
  const timer = setInterval(run, FOLD_INTERVAL_MS);
  first.unref?.();
  timer.unref?.();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
