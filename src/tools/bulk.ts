/** Enabling or disabling many tools at once (docs/decisions/0304): all or nothing, one catalog bump, one audit row. */
import { recordAudit, type Actor } from '../audit/repository.ts';
import { AppError, notFound } from '../errors.ts';
import { bumpCatalogVersion, findConnector } from '../connectors/repository.ts';
import { setToolsEnabled, toolSettingsRows, type ToolSettingsRow } from './repository.ts';
import type { ToolSettingsDeps } from './settings.ts';

export interface BulkToolInput {
  enabled: boolean;
  ids?: string[];
  connector_id?: string;
  name_prefix?: string;
}

/** Tool ids an audit row lists at most; the count is always there. */
const MAX_AUDITED_IDS = 1000;

const bad = (message: string) => new AppError(400, 'validation_error', message);

/** The tools the request names, every one of them this org's; 404 (nothing changed) when one is not. */
async function selected(deps: ToolSettingsDeps, orgId: string, input: BulkToolInput): Promise<ToolSettingsRow[]> {
  if ((input.ids === undefined) === (input.connector_id === undefined)) throw bad('Send exactly one of ids and connector_id.');
  if (input.name_prefix !== undefined && input.connector_id === undefined) throw bad('name_prefix applies with connector_id only.');
  if (input.connector_id !== undefined) {
    if (!(await findConnector(deps.store.db, orgId, input.connector_id))) throw notFound('connector_not_found', 'No such connector.');
    const all = await toolSettingsRows(deps.store.db, orgId, { connectorId: input.connector_id });
    const prefix = input.name_prefix;
    return prefix === undefined ? all : all.filter((r) => (r.tool.toolNameOverride ?? r.tool.baseName).startsWith(prefix));
  }
  const wanted = new Set(input.ids);
  const rows = (await toolSettingsRows(deps.store.db, orgId)).filter((r) => wanted.has(r.tool.id));
  if (rows.length !== wanted.size) {
    const found = new Set(rows.map((r) => r.tool.id));
    const missing = [...wanted].filter((id) => !found.has(id));
    throw notFound('tool_not_found', `No change was made: ${missing.length} of the ids name no tool of this org (${missing.slice(0, 5).join(', ')}).`);
  }
  return rows;
}

/**
 * Sets `enabled` on the selected tools in one transaction with one catalog bump and one `tools.bulk_updated` audit
 * row (the ids of the tools whose state changed, at most MAX_AUDITED_IDS, and their count). Returns how many
 * changed and the selected tools as they are afterwards.
 */
export async function updateToolsBulk(deps: ToolSettingsDeps, orgId: string, input: BulkToolInput, actor: Actor) {
  const rows = await selected(deps, orgId, input);
  const changing = rows.filter((r) => r.tool.enabled !== input.enabled).map((r) => r.tool.id);
  await deps.store.db.transaction(async (tx) => {
    if (changing.length) {
      await setToolsEnabled(tx, orgId, changing, input.enabled);
      await bumpCatalogVersion(tx, orgId);
    }
    await recordAudit(tx, {
      orgId,
      action: 'tools.bulk_updated',
      actor,
      targetType: input.connector_id ? 'connector' : 'tool',
      ...(input.connector_id ? { targetId: input.connector_id } : {}),
      details: {
        enabled: input.enabled,
        selected: rows.length,
        changed: changing.length,
        tool_ids: changing.slice(0, MAX_AUDITED_IDS),
        ...(changing.length > MAX_AUDITED_IDS ? { more_ids: changing.length - MAX_AUDITED_IDS } : {}),
        ...(input.name_prefix !== undefined ? { name_prefix: input.name_prefix } : {}),
      },
    });
  });
  const ids = new Set(rows.map((r) => r.tool.id));
  const after = (await toolSettingsRows(deps.store.db, orgId, input.connector_id ? { connectorId: input.connector_id } : {})).filter((r) => ids.has(r.tool.id));
  return { updated: changing.length, tools: after };
}
