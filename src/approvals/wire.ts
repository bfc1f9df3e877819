/**
 * The MCP tool results of approvals: a held call's pending_approval answer and check_approval_status. (The REST
 * Approval object and decision body are shaped in handlers/views.ts, with every other REST wire object.)
 */
import type { ToolResult } from '../connectors/types.ts';
import type { ApprovalRow } from './repository.ts';

/** The spec's "Flagged tool result": not executed, not an error, and the id to poll. */
export function pendingApprovalResult(row: ApprovalRow): ToolResult {
  return {
    isError: false,
    content: [
      {
        type: 'text',
        text:
          `${row.toolName} requires human approval, so the call was held and not executed. ` +
          `Poll the check_approval_status tool with {"approvalId": "${row.id}"} for the outcome; ` +
          `the approval expires at ${row.expiresAt.toISOString()}.`,
      },
    ],
    structuredContent: { status: 'pending_approval', approvalId: row.id },
  };
}

export function notFoundStatus(approvalId: string): ToolResult {
  return {
    content: [{ type: 'text', text: `No approval with id ${approvalId.slice(0, 100)} exists for this org.` }],
    structuredContent: { status: 'not_found', approvalId: approvalId.slice(0, 100) },
  };
}

const SENTENCES: Record<string, (row: ApprovalRow) => string> = {
  pending: (row) => `The call to ${row.toolName} is waiting for an approver (until ${row.expiresAt.toISOString()}). Poll again later.`,
  // executing is reported as pending: the outcome is not known yet, and the spec's list has no executing.
  executing: (row) => `The call to ${row.toolName} was approved and is running. Poll again shortly.`,
  executed: (row) => `The call to ${row.toolName} was approved and executed; its result follows.`,
  rejected: (row) => `The call to ${row.toolName} was rejected by an approver; it was not executed.`,
  expired: (row) => `The approval for ${row.toolName} expired before anyone decided; the call was not executed.`,
  failed: (row) => `The approved call to ${row.toolName} failed: ${row.statusReason ?? 'no reason recorded'}`,
};

/**
 * check_approval_status: structuredContent `{status, approvalId}`, plus `result` (the tool's own result) when
 * executed or failed with one, and `reason` when failed or expired. With executed, the tool's content follows the
 * status sentence in `content`, so an agent reads the rows exactly as from a direct call.
 */
export function approvalStatusResult(row: ApprovalRow): ToolResult {
  const status = row.status === 'executing' ? 'pending' : row.status;
  const result = row.result as ToolResult | null;
  const structured: Record<string, unknown> = { status, approvalId: row.id };
  if (result && (row.status === 'executed' || row.status === 'failed')) structured.result = result;
  if (row.statusReason && (row.status === 'failed' || row.status === 'expired')) structured.reason = row.statusReason;
  const content: ToolResult['content'] = [{ type: 'text', text: SENTENCES[row.status]!(row) }];
  if (row.status === 'executed' && result) content.push(...result.content);
  return { content, structuredContent: structured };
}
