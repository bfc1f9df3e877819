/**
 * The execution step of an approved call: verify the held call is intact, re-check policy as it stands now, then run
 * it through the same step tools/call uses. Every refusal is a `failed` outcome with a plain reason; nothing runs.
 */
import type { SqlTarget, ToolResult } from '../connectors/types.ts';
import type { Db } from '../store/db.ts';
import type { CatalogCache, CatalogTool } from '../tools/catalog.ts';
import { countedCall, QuotaExceededError } from '../tools/runtime.ts';
import { touchedIndexes, touchedNames } from '../tools/tables.ts';
import { heldCallDigestMatches } from './digest.ts';
import { connectorState, orgForExecution, requesterActive, type ApprovalRow } from './repository.ts';

export interface ApprovedExecutionDeps {
  db: Db;
  digestKey: Uint8Array;
  catalog: Pick<CatalogCache, 'get'>;
  /** The tool runtime's execution step (executeTool in src/tools/runtime.ts): quota, then the connector's executor. */
  runTool: (
    org: { id: string; plan: string },
    tool: CatalogTool,
    input: Record<string, unknown>,
    caller: Readonly<Record<string, string>>,
    /** Told which of the connector's tables the statement touches, once the guard passed it. */
    touched?: (tables: readonly SqlTarget[]) => void,
  ) => Promise<ToolResult>;
}

/**
 * `counted`: the call reached its connector and counts against the monthly quota (runtime.ts executeTool). `tables`:
 * every table the statement touched, by name, as `tool.called` lists them (decision 0292); unset when unknown.
 */
export type ExecutionOutcome = { status: 'executed' | 'failed'; reason: string | null; result: ToolResult | null; counted: boolean; tables?: string[] };

const failed = (reason: string, result: ToolResult | null = null, counted = false): ExecutionOutcome => ({ status: 'failed', reason, result, counted });

/** Why the held tool cannot run now, or the tool as the catalog serves it. */
async function currentTool(deps: ApprovedExecutionDeps, row: ApprovalRow): Promise<{ org: { id: string; plan: string }; tool: CatalogTool } | string> {
  const org = await orgForExecution(deps.db, row.orgId);
  if (!org) return 'The org no longer exists; nothing ran.';
  const catalog = await deps.catalog.get(org.id, org.catalogVersion);
  const tool = catalog.tools.find((t) => t.id === row.toolId);
  if (!tool) {
    const connector = await connectorState(deps.db, row.orgId, row.connectorId);
    if (!connector || connector.archived) return `The connector of ${row.toolName} was archived since the call was requested; nothing ran.`;
    if (connector.status === 'failed') return `The connector of ${row.toolName} failed validation since the call was requested; nothing ran.`;
    return `The tool ${row.toolName} no longer exists; nothing ran.`;
  }
  if (tool.connector.id !== row.connectorId) return `The tool ${row.toolName} now belongs to another connector; nothing ran.`;
  if (!tool.enabled) return `The tool ${row.toolName} was disabled since the call was requested; nothing ran.`;
  return { org, tool };
}

export async function executeApproved(deps: ApprovedExecutionDeps, row: ApprovalRow): Promise<ExecutionOutcome> {
  const held = {
    id: row.id,
    orgId: row.orgId,
    toolId: row.toolId,
    connectorId: row.connectorId,
    toolName: row.toolName,
    argumentsJson: row.argumentsJson,
    requesterKind: row.requesterKind,
    requesterId: row.requesterId,
    requesterAttributes: row.requesterAttributes,
  };
  if (!heldCallDigestMatches(deps.digestKey, held, row.argumentsDigest)) {
    return failed('The held call does not match its digest (it was altered after it was requested); nothing ran.');
  }
  const found = await currentTool(deps, row);
  if (typeof found === 'string') return failed(found);
  const { org, tool } = found;
  if (!(await requesterActive(deps.db, row.orgId, row.requesterKind, row.requesterId))) {
    return failed('The credential that requested the call was revoked since; nothing ran.');
  }
  if (row.requesterConnectorIds !== null && !row.requesterConnectorIds.includes(tool.connector.id)) {
    return failed(`The credential that requested the call may not call ${row.toolName}; nothing ran.`);
  }
  // The held text is what runs. Validation against today's schema must accept it unchanged: a schema that now
  // rejects it, or fills in a new default, would run something other than what the approver saw.
  const input = JSON.parse(row.argumentsJson) as Record<string, unknown>;
  if (!tool.validate(input) || JSON.stringify(input) !== row.argumentsJson) {
    return failed(`The input schema of ${row.toolName} changed since the call was requested; nothing ran.`);
  }
  let result: ToolResult;
  let tables: string[] | undefined;
  const own = tool.tables;
  const touched = own ? (t: readonly SqlTarget[]) => void (tables = touchedNames(own, touchedIndexes(own, t))) : undefined;
  try {
    // As the requester: its attributes are what the tool's row filter binds (stored with the held call, in its digest).
    result = await deps.runTool(org, tool, input, row.requesterAttributes, touched);
  } catch (err) {
    if (err instanceof QuotaExceededError) return failed(`${err.message} Nothing ran.`);
    throw err;
  }
  const counted = countedCall(result);
  const read = tables ? { tables } : {};
  if (result.isError)
    return {
      ...failed(
        result.content
          .map((c) => c.text)
          .join('\n')
          .slice(0, 2000) || 'The tool reported an error.',
        result,
        counted,
      ),
      ...read,
    };
  return { status: 'executed', reason: null, result, counted, ...read };
}
