/** All SQL of approvals. Every query names the org, except the sweeper's, which only moves rows by their own state and time. */
import { and, desc, eq, gt, inArray, isNull, lte } from 'drizzle-orm';
import { isClientActive } from '../auth/repository.ts';
import type { Queryable } from '../store/db.ts';
import { apiKeys, approvals, connectors, orgs, tools } from '../store/schema.ts';

export type ApprovalRow = typeof approvals.$inferSelect;
export type NewApproval = typeof approvals.$inferInsert;

const APPROVAL_STATUSES = ['pending', 'executing', 'executed', 'rejected', 'failed', 'expired'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** An approval id as stored; anything else cannot name an approval (and must not reach a uuid column). */
export const isApprovalId = (value: string): boolean => UUID.test(value);

export async function insertApproval(db: Queryable, row: NewApproval): Promise<void> {
  await db.insert(approvals).values(row);
}

export async function findApproval(db: Queryable, orgId: string, id: string): Promise<ApprovalRow | undefined> {
  const [row] = await db
    .select()
    .from(approvals)
    .where(and(eq(approvals.orgId, orgId), eq(approvals.id, id)));
  return row;
}

export async function listApprovals(db: Queryable, orgId: string, status: ApprovalStatus | undefined, limit: number): Promise<ApprovalRow[]> {
  const where = [eq(approvals.orgId, orgId)];
  if (status) where.push(eq(approvals.status, status));
  return db
    .select()
    .from(approvals)
    .where(and(...where))
    .orderBy(desc(approvals.createdAt), desc(approvals.id))
    .limit(limit);
}

/** Pending approvals of the org (or of one approval) whose time is up become expired. Returns how many moved. */
export async function expireDue(db: Queryable, now: Date, scope: { orgId: string; id?: string } | 'all'): Promise<number> {
  const where = [eq(approvals.status, 'pending'), lte(approvals.expiresAt, now)];
  if (scope !== 'all') {
    where.push(eq(approvals.orgId, scope.orgId));
    if (scope.id) where.push(eq(approvals.id, scope.id));
  }
  const moved = await db
    .update(approvals)
    .set({ status: 'expired', statusReason: 'No approver decided before the approval expired.', completedAt: now })
    .where(and(...where))
    .returning({ id: approvals.id });
  return moved.length;
}

/**
 * The decision, as one conditional update: only a pending, unexpired approval moves. Under concurrent decisions
 * (on any number of instances) PostgreSQL's row lock lets exactly one update match; the others match nothing.
 */
export async function claimDecision(
  db: Queryable,
  orgId: string,
  id: string,
  next: 'executing' | 'rejected',
  decidedBy: string,
  now: Date,
): Promise<ApprovalRow | undefined> {
  const [row] = await db
    .update(approvals)
    .set({
      status: next,
      decidedBy,
      decidedAt: now,
      ...(next === 'executing' ? { executingAt: now } : { completedAt: now }),
    })
    .where(and(eq(approvals.orgId, orgId), eq(approvals.id, id), eq(approvals.status, 'pending'), gt(approvals.expiresAt, now)))
    .returning();
  return row;
}

/** The outcome of an execution; only an approval still `executing` moves (the sweeper may have failed it meanwhile). */
export async function completeExecution(
  db: Queryable,
  orgId: string,
  id: string,
  outcome: { status: 'executed' | 'failed'; reason: string | null; result: Record<string, unknown> | null },
  now: Date,
): Promise<ApprovalRow | undefined> {
  const [row] = await db
    .update(approvals)
    .set({ status: outcome.status, statusReason: outcome.reason, result: outcome.result, completedAt: now })
    .where(and(eq(approvals.orgId, orgId), eq(approvals.id, id), eq(approvals.status, 'executing')))
    .returning();
  return row;
}

/** Recovery: approvals left `executing` since before `startedBefore` (their instance died) become failed, never re-run. */
export async function failStaleExecutions(db: Queryable, startedBefore: Date, reason: string, now: Date): Promise<ApprovalRow[]> {
  return db
    .update(approvals)
    .set({ status: 'failed', statusReason: reason, completedAt: now })
    .where(and(eq(approvals.status, 'executing'), lte(approvals.executingAt, startedBefore)))
    .returning();
}

/** Whether the credential that requested a call is still live. IdP users have no revocation record here (see docs/decisions/0061-approval-policy-recheck.md). */
export async function requesterActive(db: Queryable, orgId: string, kind: string, requesterId: string): Promise<boolean> {
  if (kind === 'api_key') {
    const [row] = await db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, requesterId), isNull(apiKeys.revokedAt)));
    return Boolean(row);
  }
  if (kind === 'oauth_client') {
    return isClientActive(db, orgId, requesterId);
  }
  return kind === 'idp_user';
}

/** The org's plan and current catalog version, read fresh when an approved call executes. */
export async function orgForExecution(db: Queryable, orgId: string): Promise<{ id: string; plan: string; catalogVersion: number } | undefined> {
  const [row] = await db.select({ id: orgs.id, plan: orgs.plan, catalogVersion: orgs.catalogVersion }).from(orgs).where(eq(orgs.id, orgId));
  return row;
}

/** Why a connector no longer serves tools: archived, or not active (failed validation). */
export async function connectorState(db: Queryable, orgId: string, connectorId: string): Promise<{ archived: boolean; status: string } | undefined> {
  const [row] = await db
    .select({ archivedAt: connectors.archivedAt, status: connectors.status })
    .from(connectors)
    .where(and(eq(connectors.orgId, orgId), eq(connectors.id, connectorId)));
  return row ? { archived: row.archivedAt !== null, status: row.status } : undefined;
}

/**
 * The approvers of the tool rows a held call needed, as they are now (an approver removed since has lost the right);
 * undefined when none is served any more (deleted, or withdrawn: decision 0405).
 */
export async function currentApprovers(db: Queryable, orgId: string, toolIds: string[]): Promise<string[] | undefined> {
  const rows = await db
    .select({ emails: tools.approvalEmails })
    .from(tools)
    .where(and(eq(tools.orgId, orgId), inArray(tools.id, toolIds), isNull(tools.withdrawnAt)));
  return rows.length ? [...new Set(rows.flatMap((r) => r.emails))] : undefined;
}
