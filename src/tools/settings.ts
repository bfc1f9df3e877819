/** Per-tool settings of the REST interface: listing with effective names, and validated updates. */
import { recordAudit, type Actor } from '../audit/repository.ts';
import { conflict, notFound, unprocessable } from '../errors.ts';
import { getDriver } from '../connectors/registry.ts';
import type { ToolSpec, ColumnMask, ToolPolicy } from '../connectors/types.ts';
import type { Queryable, Store } from '../store/db.ts';
import { CHECK_APPROVAL_STATUS } from './runtime.ts';
import { bumpCatalogVersion } from '../connectors/repository.ts';
import { releaseWithdrawnOverride, toolSettingsRows, updateToolRow, type ToolChanges, type ToolSettingsRow } from './repository.ts';

/** What the tool settings use: the store alone. */
export interface ToolSettingsDeps {
  store: Pick<Store, 'db'>;
}

export type { ToolSettingsRow } from './repository.ts';

function rows(deps: ToolSettingsDeps, orgId: string, filter: { connectorId?: string; toolId?: string } = {}): Promise<ToolSettingsRow[]> {
  return toolSettingsRows(deps.store.db, orgId, filter);
}

export async function listToolSettings(deps: ToolSettingsDeps, orgId: string, connectorId?: string): Promise<ToolSettingsRow[]> {
  return rows(deps, orgId, { connectorId });
}

export interface ToolSettingsInput {
  enabled?: boolean;
  requires_approval?: boolean;
  approval_ttl_seconds?: number;
  approval_emails?: string[];
  tool_name_override?: string | null;
  tool_description_override?: string | null;
  read_only?: boolean;
  policy?: ToolPolicyInput | null;
}

/** A policy as the contract takes it (ToolPolicy): every field optional. */
interface ToolPolicyInput {
  hidden_columns?: string[];
  masked_columns?: ColumnMask[];
  row_filter?: string | null;
}

/**
 * The policy to store (null: none), checked by the tool's driver against the tool's table (columns, the row filter
 * through the dialect's guard): 422 policy_invalid when it does not fit. An empty policy is stored as none.
 */
async function checkedPolicy(row: ToolSettingsRow, input: ToolPolicyInput | null): Promise<ToolPolicy | null> {
  if (input === null) return null;
  // Policies belong to the table (decision 0292): a saved statement is governed by those of the tables it reads.
  if (row.tool.savedVersion !== null) {
    throw unprocessable(
      'policy_invalid',
      "A saved tool has no policy of its own: its statement is governed by the policies of the tables it reads. Set the policy on the table's tool.",
    );
  }
  const policy: ToolPolicy = { hidden_columns: input.hidden_columns ?? [], masked_columns: input.masked_columns ?? [], row_filter: input.row_filter ?? null };
  if (policy.hidden_columns.length === 0 && policy.masked_columns.length === 0 && policy.row_filter === null) return null;
  const driver = getDriver(row.connector.type);
  const problem = driver?.checkPolicy
    ? await driver.checkPolicy(row.tool.spec as unknown as ToolSpec, policy)
    : `${row.connector.type} tools take no column or row policies`;
  if (problem !== null) throw unprocessable('policy_invalid', `The tool policy cannot be applied: ${problem}.`);
  return policy;
}

/**
 * Gives `name` up on the org's withdrawn tools (decision 0405): a withdrawn tool's override is kept for its return
 * until an admin gives the name to another tool (an override, or a saved tool's name); each tool that loses it gets
 * a `tool.updated` audit row saying so. `kinds`: only tools of these kinds.
 */
export async function releaseWithdrawnName(tx: Queryable, orgId: string, name: string, actor: Actor, kinds?: ('tool' | 'schema')[]): Promise<void> {
  for (const id of await releaseWithdrawnOverride(tx, orgId, name, kinds)) {
    await recordAudit(tx, {
      orgId,
      action: 'tool.updated',
      actor,
      targetType: 'tool',
      targetId: id,
      details: { fields: ['tool_name_override'], withdrawn: true, override_given_to_another_tool: name },
    });
  }
}

export async function updateToolSettings(deps: ToolSettingsDeps, orgId: string, toolId: string, input: ToolSettingsInput, actor: Actor) {
  const [current] = await rows(deps, orgId, { toolId });
  if (!current) throw notFound('tool_not_found', 'No such tool.');
  const override = input.tool_name_override;
  if (override) {
    if (override === CHECK_APPROVAL_STATUS) throw conflict('tool_name_taken', `${CHECK_APPROVAL_STATUS} is a built-in tool name.`);
    // An override must not shadow any other tool's name as agents see it.
    const others = (await rows(deps, orgId)).filter((r) => r.tool.id !== toolId);
    if (others.some((r) => (r.tool.toolNameOverride ?? r.tool.baseName) === override || r.tool.baseName === override)) {
      throw conflict('tool_name_taken', `Another tool of this org is already named ${override}.`);
    }
  }
  const changes: ToolChanges = { updatedAt: new Date() };
  if (input.enabled !== undefined) changes.enabled = input.enabled;
  if (input.requires_approval !== undefined) changes.requiresApproval = input.requires_approval;
  if (input.approval_ttl_seconds !== undefined) changes.approvalTtlSeconds = input.approval_ttl_seconds;
  if (input.approval_emails !== undefined) changes.approvalEmails = input.approval_emails.map((e) => e.toLowerCase());
  if (input.tool_name_override !== undefined) changes.toolNameOverride = input.tool_name_override;
  if (input.tool_description_override !== undefined) changes.toolDescriptionOverride = input.tool_description_override;
  if (input.read_only !== undefined) changes.readOnly = input.read_only;
  if (input.policy !== undefined) changes.policy = (await checkedPolicy(current, input.policy)) as unknown as Record<string, unknown> | null;
  try {
    await deps.store.db.transaction(async (tx) => {
      if (override) await releaseWithdrawnName(tx, orgId, override, actor);
      if (!(await updateToolRow(tx, orgId, toolId, changes))) throw notFound('tool_not_found', 'No such tool.');
      await bumpCatalogVersion(tx, orgId);
      // A policy change keeps the old and the new policy in the audit row (no secret in either).
      const policyChange = input.policy === undefined ? {} : { policy: { old: current.tool.policy, new: changes.policy ?? null } };
      await recordAudit(tx, {
        orgId,
        action: 'tool.updated',
        actor,
        targetType: 'tool',
        targetId: toolId,
        details: { fields: Object.keys(input), ...policyChange },
      });
    });
  } catch (err) {
    // Two concurrent renames to the same name: the unique index decides, the loser gets 409.
    if (String((err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code) === '23505') {
      throw conflict('tool_name_taken', `Another tool of this org is already named ${override}.`);
    }
    throw err;
  }
  const [updated] = await rows(deps, orgId, { toolId });
  if (!updated) throw notFound('tool_not_found', 'No such tool.');
  return updated;
}
