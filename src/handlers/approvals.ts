/** The approvals inbox of the caller's org: list, approve (runs the held call), reject. */
import type { ApprovalStatus } from '../approvals/repository.ts';
import { json } from '../errors.ts';
import type { Handler } from './context.ts';
import { approvalDecisionView, approvalView } from './views.ts';

export const listApprovals: Handler = async ({ principal, deps, query }) => {
  const rows = await deps.approvals.list(principal!.orgId, query.status as ApprovalStatus | undefined, Number(query.limit ?? 200));
  return json({ approvals: rows.map(approvalView) });
};

export const approveApproval: Handler = async ({ principal, deps, params }) =>
  json(approvalDecisionView(await deps.approvals.approve(principal!.orgId, principal!, params.approvalId!)));

export const rejectApproval: Handler = async ({ principal, deps, params }) =>
  json(approvalDecisionView(await deps.approvals.reject(principal!.orgId, principal!, params.approvalId!)));
