/**
 * Audit retention: rows older than TOOLGATE_AUDIT_RETENTION_DAYS are removed org by org, each removal leaving a
 * checkpoint (chain base + an `audit.pruned` row, audit/repository.ts pruneAudit) so the rest stays verifiable.
 * Runs on every instance; the chain-head lock makes concurrent sweeps harmless (the second finds nothing to do).
 */
import type { Db } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { orgsWithRowsBefore, pruneAudit } from './repository.ts';

const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/** One sweep over every org; returns the rows removed. */
async function sweepAuditRetention(db: Db, retentionDays: number, now: Date = new Date()): Promise<number> {
  if (retentionDays <= 0) return 0;
  const before = new Date(now.getTime() - retentionDays * 86_400_000);
  let removed = 0;
  for (const orgId of await orgsWithRowsBefore(db, before)) removed += await pruneAudit(db, orgId, before, now);
  return removed;
}

/** Sweeps shortly after start and then hourly; returns the stop function. */
export function startRetentionSweeper(deps: { db: Db; log: Logger; retentionDays: number }): () => void {
  if (deps.retentionDays <= 0) return () => {};
  const run = () =>
    sweepAuditRetention(deps.db, deps.retentionDays).catch((err) => deps.log.error('audit retention sweep failed', { error: describeError(err) }));
  const first = setTimeout(run, 30_000);
  const timer = setInterval(run, SWEEP_INTERVAL_MS);
  first.unref?.();
  timer.unref?.();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}
