/**
 * The approval state machine: held calls (pending), decisions (pending -> executing -> executed | failed, or
 * pending -> rejected), expiry (lazily on read and by the sweeper) and crash recovery (executing -> failed, never
 * re-run). Exactly-once execution rests on one conditional UPDATE per decision (repository.claimDecision).
 */
import { randomUUID } from 'node:crypto';
import { recordAudit } from '../audit/repository.ts';
import { actorOf, type Principal } from '../principal.ts';
import type { ToolResult } from '../connectors/types.ts';
import { conflict, forbidden, notFound } from '../errors.ts';
import { DomainEvents } from '../events/index.ts';
import type { Db } from '../store/db.ts';
import type { CatalogTool } from '../tools/catalog.ts';
import type { ApprovalDesk } from '../tools/runtime.ts';
import type { HeldApproval } from '../tools/tables.ts';
import { describeError, type Logger } from '../util/log.ts';
import { heldCallDigest } from './digest.ts';
import { executeApproved, type ApprovedExecutionDeps, type ExecutionOutcome } from './execution.ts';
import * as repo from './repository.ts';
import { approvalStatusResult, notFoundStatus, pendingApprovalResult } from './wire.ts';

export interface ApprovalServiceDeps extends ApprovedExecutionDeps {
  db: Db;
  events: DomainEvents;
  log: Logger;
  now?: () => Date;
  /** An `executing` approval older than this is taken as orphaned by a dead instance and failed (never re-run). */
  executionStaleMs: number;
}

export const STALE_EXECUTION_REASON =
  'The gateway stopped while this approved call was executing, so whether it completed is unknown. It is not run again; request it again if it is still needed.';

/** The identity a credential is recorded under (requested_by, decided_by). */
function identityOf(principal: Principal): string {
  // E-mail addresses are compared case-insensitively (approval_emails are stored lower-case), so recorded so too.
  if (principal.kind === 'idp_user') return `user:${principal.email?.toLowerCase() ?? principal.actorId}`;
  return `${principal.kind}:${principal.actorId}`;
}

export interface DecisionResult {
  ok: boolean;
  status: 'executed' | 'failed' | 'rejected';
  result?: ToolResult;
  reason?: string;
}

export class ApprovalService implements ApprovalDesk {
  private readonly now: () => Date;
  private sweeper: ReturnType<typeof setInterval> | null = null;
  private sweeping: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: ApprovalServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** tools/call of a flagged tool: stores the held call (validated arguments, defaults filled in) and answers pending_approval. */
  async hold(orgId: string, principal: Principal, tool: CatalogTool, input: Record<string, unknown>, approval?: HeldApproval): Promise<ToolResult> {
    const now = this.now();
    const id = randomUUID();
    const argumentsJson = JSON.stringify(input);
    const held = {
      id,
      orgId,
      toolId: tool.id,
      connectorId: tool.connector.id,
      toolName: tool.name,
      argumentsJson,
      requesterKind: principal.kind,
      requesterId: principal.actorId,
      requesterAttributes: { ...(principal.attributes ?? {}) },
    };
    const row: repo.ApprovalRow = {
      ...held,
      argumentsDigest: heldCallDigest(this.deps.digestKey, held),
      requestedBy: identityOf(principal),
      requesterConnectorIds: principal.connectorIds,
      // A statement touching several tables waits for every touched row's approvers (decision 0292).
      approverEmails: approval?.approvalEmails ?? tool.approvalEmails,
      approverToolIds: approval ? approval.toolIds : null,
      status: 'pending',
      statusReason: null,
      result: null,
      decidedBy: null,
      decidedAt: null,
      executingAt: null,
      completedAt: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + (approval?.approvalTtlSeconds ?? tool.approvalTtlSeconds) * 1000),
    };
    await this.deps.db.transaction(async (tx) => {
      await repo.insertApproval(tx, row);
      // No arguments in the event: webhooks carry it out of the gateway; the inbox shows them to those allowed.
      const event = DomainEvents.create(
        'approval.requested',
        orgId,
        { approval_id: id, tool_name: tool.name, requested_by: row.requestedBy, expires_at: row.expiresAt.toISOString() },
        now,
      );
      await this.deps.events.emit(tx, [event]);
    });
    return pendingApprovalResult(row);
  }

  /**
   * check_approval_status. An id of another org, or of a call to a connector this credential may not call, is
   * not_found: exactly the answer an unknown id gets.
   */
  async status(orgId: string, principal: Principal, approvalId: string): Promise<ToolResult> {
    if (!repo.isApprovalId(approvalId)) return notFoundStatus(approvalId);
    const row = await this.current(orgId, approvalId);
    if (!row || (principal.connectorIds !== null && !principal.connectorIds.includes(row.connectorId))) return notFoundStatus(approvalId);
    return approvalStatusResult(row);
  }

  /** The org's approvals, newest first, with due expiries applied first (rows; handlers/views.ts shapes them). */
  async list(orgId: string, status: repo.ApprovalStatus | undefined, limit: number): Promise<repo.ApprovalRow[]> {
    await repo.expireDue(this.deps.db, this.now(), { orgId });
    return repo.listApprovals(this.deps.db, orgId, status, limit);
  }

  /** Approve: pending -> executing (decision, audit row and event in one transaction), run, -> executed | failed. */
  async approve(orgId: string, principal: Principal, approvalId: string): Promise<DecisionResult> {
    const claimed = await this.decide(orgId, principal, approvalId, 'executing');
    let outcome: ExecutionOutcome;
    try {
      outcome = await executeApproved(this.deps, claimed);
    } catch (err) {
      this.deps.log.error('approved call failed unexpectedly', { approvalId, error: describeError(err) });
      // Not counted: drivers never throw, so what threw is the store before or while reserving the unit.
      outcome = {
        status: 'failed',
        reason: 'An internal error stopped the execution; whether it reached the connector is unknown. It is not run again.',
        result: null,
        counted: false,
      };
    }
    const stored = await this.deps.db.transaction(async (tx) => {
      const done = await repo.completeExecution(tx, orgId, approvalId, { ...outcome, result: outcome.result as Record<string, unknown> | null }, this.now());
      if (done) {
        await recordAudit(tx, {
          orgId,
          action: done.status === 'executed' ? 'approval.executed' : 'approval.failed',
          actor: { type: 'system', id: null },
          targetType: 'approval',
          targetId: approvalId,
          outcome: done.status === 'executed' ? 'success' : 'error',
          // connector_id and counted: billing's usage by connector counts the approved calls the quota counted.
          details: { tool_name: done.toolName, connector_id: claimed.connectorId, counted: outcome.counted },
        });
      }
      return done;
    });
    // Not `executing` any more: the recovery sweep failed it while the call ran (its outcome is the stored one).
    const final = stored ?? (await repo.findApproval(this.deps.db, orgId, approvalId))!;
    // completeExecution and the recovery sweep both leave executing for executed or failed only.
    const response: DecisionResult = { ok: final.status === 'executed', status: final.status as 'executed' | 'failed' };
    if (final.result) response.result = final.result as unknown as ToolResult;
    if (final.status !== 'executed' && final.statusReason) response.reason = final.statusReason;
    return response;
  }

  async reject(orgId: string, principal: Principal, approvalId: string): Promise<DecisionResult> {
    await this.decide(orgId, principal, approvalId, 'rejected');
    return { ok: true, status: 'rejected' };
  }

  /** Expires due approvals and fails orphaned executions, on every org. Safe on any number of instances at once. */
  async sweep(): Promise<{ expired: number; failed: number }> {
    const now = this.now();
    const expired = await repo.expireDue(this.deps.db, now, 'all');
    const failed = await this.deps.db.transaction(async (tx) => {
      const rows = await repo.failStaleExecutions(tx, new Date(now.getTime() - this.deps.executionStaleMs), STALE_EXECUTION_REASON, now);
      for (const row of rows) {
        await recordAudit(tx, {
          orgId: row.orgId,
          action: 'approval.failed',
          actor: { type: 'system', id: null },
          targetType: 'approval',
          targetId: row.id,
          outcome: 'error',
          details: { tool_name: row.toolName, recovered: true },
        });
      }
      return rows.length;
    });
    return { expired, failed };
  }

  startSweeper(intervalMs: number): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      this.sweeping = this.sweep().catch((err) => this.deps.log.error('approval sweep failed', { error: describeError(err) }));
    }, intervalMs);
    this.sweeper.unref?.();
  }

  async stopSweeper(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await this.sweeping;
  }

  /** The row with a due expiry applied (lazy expiry on every read). */
  private async current(orgId: string, approvalId: string): Promise<repo.ApprovalRow | undefined> {
    const row = await repo.findApproval(this.deps.db, orgId, approvalId);
    if (row?.status === 'pending' && row.expiresAt.getTime() <= this.now().getTime()) {
      await repo.expireDue(this.deps.db, this.now(), { orgId, id: approvalId });
      return repo.findApproval(this.deps.db, orgId, approvalId);
    }
    return row;
  }

  /** 404, 403, 409 in that order; then the decision with its audit row and event, in one transaction. */
  private async decide(orgId: string, principal: Principal, approvalId: string, next: 'executing' | 'rejected'): Promise<repo.ApprovalRow> {
    const row = repo.isApprovalId(approvalId) ? await this.current(orgId, approvalId) : undefined;
    if (!row) throw notFound('approval_not_found', 'No such approval.');
    assertMayDecide(
      principal,
      row,
      principal.kind === 'idp_user' ? await repo.currentApprovers(this.deps.db, orgId, row.approverToolIds ?? [row.toolId]) : undefined,
    );
    if (row.status !== 'pending') throw notPending(row);
    const now = this.now();
    const decidedBy = identityOf(principal);
    const claimed = await this.deps.db.transaction(async (tx) => {
      const moved = await repo.claimDecision(tx, orgId, approvalId, next, decidedBy, now);
      if (!moved) return undefined;
      const decision = next === 'executing' ? 'approved' : 'rejected';
      await recordAudit(tx, {
        orgId,
        action: `approval.${decision}`,
        actor: actorOf(principal),
        targetType: 'approval',
        targetId: approvalId,
        details: { tool_name: moved.toolName, requested_by: moved.requestedBy },
      });
      await this.deps.events.emit(tx, [
        DomainEvents.create('approval.decided', orgId, { approval_id: approvalId, tool_name: moved.toolName, decision, decided_by: decidedBy }, now),
      ]);
      return moved;
    });
    if (claimed) return claimed;
    // Another decision won the race, or the approval expired in between: 409 with what it is now.
    throw notPending((await this.current(orgId, approvalId))!);
  }
}

function notPending(row: repo.ApprovalRow) {
  return conflict('approval_not_pending', `The approval is ${row.status}, not pending; only a pending approval can be approved or rejected.`);
}

/**
 * Who may decide. Never the credential that requested the call (an agent cannot approve itself, whatever its
 * scopes). Client-credentials tokens with the management scope act at org level and skip the approver list (spec);
 * a user must be a listed approver by the verified e-mail of their token, both on the approval (the list when the
 * call was held) and on the tool now (an approver removed since has lost the right). API keys and MCP-only tokens
 * never reach here (the REST interface refuses them), and are refused again should that ever change.
 */
function assertMayDecide(principal: Principal, row: repo.ApprovalRow, approversNow: string[] | undefined): void {
  if (principal.kind === row.requesterKind && principal.actorId === row.requesterId) {
    throw forbidden('self_approval_forbidden', 'The credential that requested a call cannot approve or reject it.');
  }
  if (principal.kind === 'oauth_client' && principal.orgLevel) return;
  if (principal.kind === 'idp_user') {
    const email = principal.email?.toLowerCase();
    if (email && row.approverEmails.includes(email) && approversNow?.includes(email)) return;
    throw forbidden('not_an_approver', 'Only a listed approver of this tool can approve or reject its calls.');
  }
  throw forbidden('not_an_approver', 'This credential cannot approve or reject calls.');
}
