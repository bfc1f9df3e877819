/**
 * Audit retention: rows older than TOOLGATE_AUDIT_RETENTION_DAYS are removed org by org, in bounded batches that each
 * move the chain's base, then an `audit.pruned` checkpoint row (audit/repository.ts pruneAudit, decision 0350), so the
 * rest stays verifiable and no batch holds the chain head for more than its last statement. Runs on every instance; a
 * batch moves the base only from where it found it, so concurrent sweeps are harmless (the second one stops).
 */
import type { Db } from '../store/db.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { startPeriodic } from '../util/periodic.ts';
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
  return startPeriodic(run, 30_000, SWEEP_INTERVAL_MS);
}
