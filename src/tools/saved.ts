/**
 * Saved-statement tools of the REST interface (issue 30, docs/tool-policies.md): define, replace (a new version),
 * delete and list. A saved tool is a row of `tools` like every other (so per-tool settings, scopes, quotas,
 * approvals, audit and webhooks apply unchanged, and the catalog reads it with the rest: no read per call), with
 * `saved_version` set and its definition in spec.target.saved. Every version is kept in saved_tool_versions.
 */
import Ajv from 'ajv';
import { recordAudit, type Actor } from '../audit/repository.ts';
import { bumpCatalogVersion, findConnector } from '../connectors/repository.ts';
import { getDriver } from '../connectors/registry.ts';
import { patternProblem } from '../connectors/mcp/patterns.ts';
import { parameterSchema, savedInputSchema } from '../connectors/shared/saved.ts';
import { OUTPUT_SCHEMA } from '../connectors/shared/toolspec.ts';
import type { SqlTarget, SqlToolSpec, SavedParam, SavedStatement, ToolPolicy } from '../connectors/types.ts';
import { conflict, notFound, unprocessable } from '../errors.ts';
import type { Queryable, Store } from '../store/db.ts';
import * as repo from './repository.ts';
import { CHECK_APPROVAL_STATUS } from './runtime.ts';
import { releaseWithdrawnName } from './settings.ts';
import type { SavedTool, SavedToolParameter, SavedToolRequest, SavedToolVersion } from '../../generated/client/types.gen.ts';

export interface SavedToolDeps {
  store: Pick<Store, 'db'>;
}

type ToolRow = Awaited<ReturnType<typeof repo.savedToolRows>>[number];

const invalid = (message: string) => unprocessable('saved_tool_invalid', message);

/** The REST view of a saved tool. */
function savedToolView(row: ToolRow): SavedTool {
  const spec = row.spec as unknown as SqlToolSpec;
  const saved = spec.target.saved!;
  const mongo = spec.target as unknown as { database: string; collection: string };
  return {
    id: row.id,
    connector_id: row.connectorId,
    name: row.baseName,
    description: spec.description,
    statement: saved.statement,
    parameters: saved.parameters as SavedToolParameter[],
    version: saved.version,
    // A MongoDB saved tool's target names its database and collection.
    table: { schema: spec.target.schema ?? mongo.database, name: spec.target.table ?? mongo.collection },
    writes: spec.annotations?.readOnlyHint === false,
    input_schema: spec.inputSchema,
    enabled: row.enabled,
    requires_approval: row.requiresApproval,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Checks of a parameter the contract's schema cannot say: enum values, bounds in order, the pattern, the default. */
function checkParameter(p: SavedParam): void {
  const scalar = p.type === 'array' ? p.items : p;
  if (p.type === 'array' && !p.items) throw invalid(`Parameter ${p.name}: an array parameter needs "items" (the elements' type).`);
  if (scalar?.type === 'enum' && !scalar.values?.length) throw invalid(`Parameter ${p.name}: an enum needs "values".`);
  if (scalar && scalar.minimum !== undefined && scalar.maximum !== undefined && scalar.minimum > scalar.maximum) {
    throw invalid(`Parameter ${p.name}: minimum is greater than maximum.`);
  }
  if (scalar && scalar.minLength !== undefined && scalar.maxLength !== undefined && scalar.minLength > scalar.maxLength) {
    throw invalid(`Parameter ${p.name}: minLength is greater than maxLength.`);
  }
  // The same check as an upstream MCP tool's patterns: Ajv runs it on every call, so no exponential shapes.
  const problem = scalar?.pattern === undefined ? null : patternProblem(scalar.pattern);
  if (problem) throw invalid(`Parameter ${p.name}: ${problem}.`);
  if (p.default !== undefined) {
    const { default: _, ...schema } = parameterSchema(p);
    const validate = new Ajv({ strict: false }).compile(schema);
    if (!validate(p.default)) throw invalid(`Parameter ${p.name}: its default does not match the parameter (${validate.errors?.[0]?.message ?? 'invalid'}).`);
  }
}

/** The connector's tables (the targets of its source tools), and the driver that checks statements for them. */
async function connectorTables(deps: SavedToolDeps, orgId: string, connectorId: string) {
  const connector = await findConnector(deps.store.db, orgId, connectorId);
  if (!connector) throw notFound('connector_not_found', 'No such connector.');
  const driver = getDriver(connector.type);
  if (!driver?.checkSaved) {
    throw unprocessable('saved_tools_unsupported', `Saved-statement tools are served on database connectors, not on ${connector.type}.`);
  }
  const rows = await repo.sourceToolSpecs(deps.store.db, orgId, connectorId);
  const tables = rows.map((r) => (r.spec as unknown as SqlToolSpec).target);
  const policies = rows.map((r) => r.policy as unknown as ToolPolicy | null);
  if (!tables.length) throw unprocessable('saved_tools_unsupported', 'The connector has no tables yet: wait until its validation has introspected them.');
  return { connector, driver: driver as typeof driver & { checkSaved: NonNullable<typeof driver.checkSaved> }, tables, policies };
}

/** A definition, checked whole (parameters, placeholders, the guard): the spec to store, and whether it writes. */
async function buildSpec(deps: SavedToolDeps, orgId: string, connectorId: string, input: SavedToolRequest, version: number) {
  const params = (input.parameters ?? []) as SavedParam[];
  const names = new Set<string>();
  for (const p of params) {
    if (names.has(p.name)) throw invalid(`Parameter ${p.name} is declared twice.`);
    names.add(p.name);
    checkParameter(p);
  }
  const { connector, driver, tables, policies } = await connectorTables(deps, orgId, connectorId);
  const checked = await driver.checkSaved(input.statement, params, tables, connector.allowWrite, policies);
  if (!checked.ok) throw invalid(`The statement is refused: ${checked.reason}`);
  const target = checked.target as SqlTarget;
  // The statement split by the type's own lexer (its checkSaved); none for a MongoDB pipeline, whose {"$param": name}
  // values are no text placeholders (mongodb/template.ts).
  const template = checked.template ?? { parts: [input.statement], slots: [] };
  const saved: SavedStatement = { statement: input.statement, parameters: params, version, ...template };
  const spec: SqlToolSpec = {
    name: input.name,
    description: input.description,
    inputSchema: savedInputSchema(params),
    outputSchema: OUTPUT_SCHEMA,
    annotations: { readOnlyHint: !checked.write, destructiveHint: checked.write, openWorldHint: false },
    target: { ...target, saved },
  };
  // Saving a statement never widens what a table's policy allows (decision 0292, issue 38 item 7a): the statement
  // must run under the policy of the table it reads, as every call of it will.
  // A statement over several tables was checked with every table's hidden columns by the multi-table guard, and each
  // table's policy applies at every reference when it runs.
  const policy = checked.touched && checked.touched.length > 1 ? null : await tablePolicy(deps, orgId, connectorId, target);
  if (policy) {
    const problem = driver.checkPolicy ? await driver.checkPolicy(spec, policy) : `${connector.type} tools take no column or row policies`;
    if (problem !== null) throw invalid(`The statement cannot run under the policy of the table it reads: ${problem}.`);
  }
  return { spec, write: checked.write };
}

/** The policy of the table tool row of `target` on the connector (the table's policy, decision 0292); null: none. */
async function tablePolicy(deps: SavedToolDeps, orgId: string, connectorId: string, target: SqlTarget): Promise<ToolPolicy | null> {
  if (typeof target.table !== 'string') return null;
  const policy = await repo.tablePolicyOf(deps.store.db, orgId, connectorId, target.schema, target.table);
  return (policy as unknown as ToolPolicy | null) ?? null;
}

/**
 * Inside the writing transaction, under the org's naming lock (the one introspection takes): no two tools get one name.
 * A withdrawn tool's override of that name is given up (decision 0405).
 */
async function assertNameFree(db: Queryable, orgId: string, name: string, actor: Actor, exceptToolId?: string): Promise<void> {
  await repo.lockOrgNaming(db, orgId);
  const taken = await repo.takenToolNames(db, orgId, exceptToolId);
  if (name === CHECK_APPROVAL_STATUS || taken.has(name)) throw conflict('tool_name_taken', `Another tool of this org is already named ${name}.`);
  await releaseWithdrawnName(db, orgId, name, actor, ['tool', 'schema']);
}

const actorText = (actor: Actor): string => `${actor.type}:${actor.id ?? ''}`;
const isUniqueViolation = (err: unknown): boolean => String((err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code) === '23505';

export async function createSavedTool(deps: SavedToolDeps, orgId: string, connectorId: string, input: SavedToolRequest, actor: Actor): Promise<SavedTool> {
  const { spec, write } = await buildSpec(deps, orgId, connectorId, input, 1);
  try {
    const row = await deps.store.db.transaction(async (tx) => {
      await assertNameFree(tx, orgId, input.name, actor);
      const created = await repo.insertSavedTool(tx, {
        orgId,
        connectorId,
        baseName: input.name,
        spec: spec as unknown as Record<string, unknown>,
        savedVersion: 1,
        // A statement that writes waits for a human unless the admin says otherwise.
        requiresApproval: input.requires_approval ?? write,
      });
      await repo.insertSavedVersion(tx, versionRow(orgId, connectorId, created.id, 1, input, actor));
      await bumpCatalogVersion(tx, orgId);
      await recordAudit(tx, {
        orgId,
        action: 'saved_tool.created',
        actor,
        targetType: 'tool',
        targetId: created.id,
        details: { name: input.name, connector_id: connectorId, version: 1, statement: input.statement, writes: write },
      });
      return created;
    });
    return savedToolView(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('tool_name_taken', `Another tool of this org is already named ${input.name}.`);
    throw err;
  }
}

function versionRow(orgId: string, connectorId: string, toolId: string, version: number, input: SavedToolRequest, actor: Actor) {
  return {
    toolId,
    orgId,
    connectorId,
    version,
    name: input.name,
    description: input.description,
    statement: input.statement,
    parameters: (input.parameters ?? []) as unknown as Record<string, unknown>[],
    actor: actorText(actor),
  };
}

async function currentRow(deps: SavedToolDeps, orgId: string, connectorId: string, toolId: string): Promise<ToolRow> {
  const [row] = await repo.savedToolRows(deps.store.db, orgId, connectorId, toolId);
  if (!row) throw notFound('tool_not_found', 'No such saved tool on this connector.');
  return row;
}

export async function updateSavedTool(
  deps: SavedToolDeps,
  orgId: string,
  connectorId: string,
  toolId: string,
  input: SavedToolRequest,
  actor: Actor,
): Promise<SavedTool> {
  const current = await currentRow(deps, orgId, connectorId, toolId);
  const old = savedToolView(current);
  const version = old.version + 1;
  const { spec, write } = await buildSpec(deps, orgId, connectorId, input, version);
  const requiresApproval = input.requires_approval ?? (write && !old.writes ? true : current.requiresApproval);
  try {
    await deps.store.db.transaction(async (tx) => {
      if (input.name !== old.name) await assertNameFree(tx, orgId, input.name, actor, toolId);
      const changes = {
        baseName: input.name,
        spec: spec as unknown as Record<string, unknown>,
        savedVersion: version,
        requiresApproval,
        updatedAt: new Date(),
      };
      if (!(await repo.replaceSavedTool(tx, orgId, toolId, old.version, changes))) {
        throw conflict('saved_tool_changed', 'The saved tool was changed meanwhile: read it again and resend.');
      }
      await repo.insertSavedVersion(tx, versionRow(orgId, connectorId, toolId, version, input, actor));
      const expired = await repo.expireHeldCallsOfTool(
        tx,
        orgId,
        toolId,
        `The saved tool changed (version ${version}) since the call was requested; nothing ran.`,
      );
      await bumpCatalogVersion(tx, orgId);
      await recordAudit(tx, {
        orgId,
        action: 'saved_tool.updated',
        actor,
        targetType: 'tool',
        targetId: toolId,
        details: {
          name: input.name,
          connector_id: connectorId,
          from_version: old.version,
          version,
          old_statement: old.statement,
          new_statement: input.statement,
          ...(old.name !== input.name ? { old_name: old.name } : {}),
          ...(expired ? { expired_approvals: expired } : {}),
          writes: write,
        },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('tool_name_taken', `Another tool of this org is already named ${input.name}.`);
    throw err;
  }
  return savedToolView(await currentRow(deps, orgId, connectorId, toolId));
}

export async function deleteSavedTool(deps: SavedToolDeps, orgId: string, connectorId: string, toolId: string, actor: Actor): Promise<void> {
  const current = savedToolView(await currentRow(deps, orgId, connectorId, toolId));
  await deps.store.db.transaction(async (tx) => {
    await repo.deleteSavedToolRow(tx, orgId, toolId);
    await repo.expireHeldCallsOfTool(tx, orgId, toolId, 'The saved tool was deleted since the call was requested; nothing ran.');
    await bumpCatalogVersion(tx, orgId);
    await recordAudit(tx, {
      orgId,
      action: 'saved_tool.deleted',
      actor,
      targetType: 'tool',
      targetId: toolId,
      details: { name: current.name, connector_id: connectorId, version: current.version, statement: current.statement },
    });
  });
}

export async function listSavedTools(deps: SavedToolDeps, orgId: string, connectorId: string): Promise<SavedTool[]> {
  if (!(await findConnector(deps.store.db, orgId, connectorId))) throw notFound('connector_not_found', 'No such connector.');
  return (await repo.savedToolRows(deps.store.db, orgId, connectorId)).map(savedToolView);
}

export async function getSavedTool(deps: SavedToolDeps, orgId: string, connectorId: string, toolId: string): Promise<SavedTool> {
  return savedToolView(await currentRow(deps, orgId, connectorId, toolId));
}

export async function listSavedToolVersions(deps: SavedToolDeps, orgId: string, connectorId: string, toolId: string): Promise<SavedToolVersion[]> {
  const rows = await repo.savedVersionRows(deps.store.db, orgId, connectorId, toolId);
  if (!rows.length) throw notFound('tool_not_found', 'No such saved tool on this connector.');
  return rows.map((r) => ({
    version: r.version,
    name: r.name,
    description: r.description,
    statement: r.statement,
    parameters: r.parameters as unknown as SavedToolParameter[],
    actor: r.actor,
    created_at: r.createdAt.toISOString(),
    deleted_at: r.deletedAt ? r.deletedAt.toISOString() : null,
  }));
}
