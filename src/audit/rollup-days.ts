/**
 * The daily level of the audit roll-ups (decision 0412): each hour is folded into its day ten minutes after it ended,
 * by audit_rollup_fold (migration 30) under its own lock, so instances folding at once are harmless (the second finds
 * nothing left). Runs shortly after start and then every FOLD_INTERVAL_MS; after a long stop it catches up a week of
 * hours per transaction (rollup-fold-statements.ts). Each run then deletes the folded hours older than three days
 * (decision 0414), in bounded transactions: the hourly rows stop growing with time.
 */
import type { Queryable } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { startPeriodic } from '../util/periodic.ts';
import { foldRollupHours, pruneRollupHours } from './rollup-fold-statements.ts';

const FOLD_INTERVAL_MS = 5 * 60 * 1000;

/** Folds and prunes shortly after start and then every 5 minutes; returns the stop function. */
export function startRollupFolder(deps: { db: Queryable; log: Logger }): () => void {
  const run = () =>
    foldRollupHours(deps.db)
      .then(() => pruneRollupHours(deps.db))
      .catch((err) => deps.log.error('audit roll-up fold failed', { error: describeError(err) }));
  return startPeriodic(run, 15_000, FOLD_INTERVAL_MS);
}
