/**
 * The daily level of the audit roll-ups (decision 0412): each day is folded from its hours once it has been over for
 * FOLD_MARGIN, by audit_rollup_fold_days (migration 30) under its own lock, so instances folding at once are harmless
 * (the second finds nothing left). Runs shortly after start and then every FOLD_INTERVAL_MS; after a long stop it
 * catches up FOLD_DAYS_PER_CALL days per transaction.
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Queryable } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';

const FOLD_INTERVAL_MS = 10 * 60 * 1000;
const FOLD_MARGIN = '2 hours';
const FOLD_DAYS_PER_CALL = 7;

/** Folds every day due (`margin`: how long a day must have been over); returns the days folded. */
export async function foldRollupDays(db: Queryable, margin = FOLD_MARGIN): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = rowsOf<{ n: number }>(await db.execute(sql`SELECT audit_rollup_fold_days(${margin}::interval, ${FOLD_DAYS_PER_CALL}) AS n`));
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < FOLD_DAYS_PER_CALL) return total;
  }
}

/** Folds shortly after start and then every 10 minutes; returns the stop function. */
export function startRollupFolder(deps: { db: Queryable; log: Logger }): () => void {
  const run = () => foldRollupDays(deps.db).catch((err) => deps.log.error('audit roll-up fold failed', { error: describeError(err) }));
  const first = setTimeout(run, 15_000);
  const timer = setInterval(run, FOLD_INTERVAL_MS);
  first.unref?.();
  timer.unref?.();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
