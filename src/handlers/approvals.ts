/** The approvals inbox of the caller's org: list, approve (runs the held call), reject. */
import { json } from '../errors.ts';
import type { Handler } from '../http/context.ts';
import type { ApprovalStatus } from '../approvals/repository.ts';

export const listApprovals: Handler = async ({ principal, deps, query }) =>
  json({ approvals: await deps.approvals.list(principal!.orgId, query.status as ApprovalStatus | undefined, Number(query.limit ?? 200)) });

export const approveApproval: Handler = async ({ principal, deps, params }) =>
  json(await deps.approvals.approve(principal!.orgId, principal!, params.approvalId!));

export const rejectApproval: Handler = async ({ principal, deps, params }) =>
  json(await deps.approvals.reject(principal!.orgId, principal!, params.approvalId!));
