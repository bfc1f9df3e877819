/** Connector lifecycle: create, update, archive, and the background validation that provisions their tools. */
import Ajv from 'ajv';
import { recordAudit, type Actor } from '../audit/repository.ts';
import { assertConnectorAllowed } from '../billing/service.ts';
import { AppError, notFound, unprocessable } from '../errors.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import type { JobTracker } from '../util/jobs.ts';
import type { Logger } from '../util/log.ts';
import { describeError } from '../util/log.ts';
import { describeSchemaError } from '../util/schema-errors.ts';
import { getDriver } from './registry.ts';
import * as repo from './repository.ts';
import { ConnectorError, type SkippedTool, type SourceEnv } from './types.ts';
import { assertOutboundUrl, OutboundRefusedError, type OutboundPolicy } from '../net/outbound.ts';
import { assertDatabaseTarget } from '../net/dial.ts';
import { embeddedDatabaseFor } from './shared/embedded.ts';
import { targetRefusedText } from './shared/errors.ts';
import { withSchemaTool } from './shared/schema-tool.ts';
import type { Config } from '../config.ts';
import type { AuthChanges } from '../auth/epoch.ts';
import { setHealth } from './health-statements.ts';
import { applyTableFilter, checkDescription, checkTablePatterns } from './table-filter.ts';

const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true });
type Driver = NonNullable<ReturnType<typeof getDriver>>;
const configValidators = new WeakMap<Driver, ReturnType<typeof ajv.compile>>();

/** What the connector service uses: the store, the secret box for credentials, background jobs, the log. */
export interface ConnectorServiceDeps {
  store: Pick<Store, 'db'>;
  box: SecretBox;
  jobs: JobTracker;
  log: Logger;
  /** Upstream MCP servers are reached under the operator's outbound policy and the call limits. */
  outbound: OutboundPolicy;
  config: Pick<Config, 'statementTimeoutMs' | 'maxResultBytes'>;
  /**
   * Told after a background change to an org's catalog_version commits (REST writes are signalled by the router):
   * the MCP endpoint's cached org rows carry catalog_version.
   */
  authCache: AuthChanges;
}

function driverFor(type: string): Driver {
  const driver = getDriver(type);
  if (!driver) throw unprocessable('connector_type_unavailable', `Connector type ${type} is not available on this gateway.`);
  return driver;
}

function checkConfig(driver: Driver, config: unknown): void {
  let validate = configValidators.get(driver);
  if (!validate) {
    validate = ajv.compile(driver.configSchema);
    configValidators.set(driver, validate);
  }
  if (!validate(config)) {
    throw new AppError(400, 'validation_error', describeSchemaError('body.config', validate.errors?.[0]));
  }
}

/**
 * The outbound policy at save time: a database host, or an MCP server URL, the gateway may not connect to is
 * refused with 422 before anything is written. The words do not say why (private, unresolvable, the gateway
 * itself), so connector creation cannot map what exists behind the gateway. Checked again at every connection.
 */
async function checkTarget(deps: Pick<ConnectorServiceDeps, 'outbound'>, orgId: string, driver: Driver, config: Record<string, unknown>): Promise<void> {
  try {
    if (driver.kind === 'database') {
      const db = config as { host: string; port?: number; database: string };
      if (embeddedDatabaseFor(db.host, orgId)) return;
      try {
        await assertDatabaseTarget(deps.outbound, { host: db.host, port: db.port ?? 0, database: db.database });
      } catch (err) {
        if (err instanceof OutboundRefusedError)
          throw unprocessable('connector_target_refused', `The connector's host is not allowed: ${targetRefusedText(db.host)}.`);
        throw err;
      }
    } else if (typeof config.url === 'string') {
      await assertOutboundUrl(config.url, deps.outbound, { requireHttps: true });
    }
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw unprocessable('connector_target_refused', `The MCP server URL is not allowed: ${err.message}`);
    throw err;
  }
}

export function listConnectors(deps: Pick<ConnectorServiceDeps, 'store'>, orgId: string, status?: string): Promise<repo.ConnectorRow[]> {
  return repo.listConnectors(deps.store.db, orgId, status);
}

export async function getConnector(deps: Pick<ConnectorServiceDeps, 'store'>, orgId: string, id: string): Promise<repo.ConnectorRow> {
  const row = await repo.findConnector(deps.store.db, orgId, id);
  if (!row) throw notFound('connector_not_found', 'No such connector.');
  return row;
}

export interface CreateConnectorInput {
  name: string;
  type: string;
  /** The type's config, checked against the driver's schema before anything is written. */
  config: Record<string, unknown>;
  credential?: string;
  allow_write?: boolean;
  allow_ddl?: boolean;
  free_sql?: boolean;
  tool_layout?: 'per_table' | 'single';
  description?: string | null;
  include_tables?: string[];
  exclude_tables?: string[];
}

/** Whether a driver takes the `single` layout: the SQL types (decision 0299). */
const takesLayout = (driver: { kind: string; checkPolicy?: unknown }): boolean => driver.kind === 'database' && driver.checkPolicy !== undefined;

/** The table filter and description of a create or update, checked with words a 400 can answer (decision 0303). */
function checkFilterAndDescription(driver: Driver, input: Pick<CreateConnectorInput, 'description' | 'include_tables' | 'exclude_tables'>): void {
  checkDescription(input.description);
  checkTablePatterns('include_tables', input.include_tables);
  checkTablePatterns('exclude_tables', input.exclude_tables);
  if (driver.kind !== 'database' && (input.include_tables?.length || input.exclude_tables?.length)) {
    throw new AppError(400, 'validation_error', 'include_tables and exclude_tables apply to database connectors only.');
  }
}

/** A description as stored: trimmed, and empty is none. */
const storedDescription = (d: string | null | undefined): string | null => (d?.trim() ? d.trim() : null);

export async function createConnector(deps: ConnectorServiceDeps, orgId: string, input: CreateConnectorInput, actor: Actor) {
  const driver = driverFor(input.type);
  checkConfig(driver, input.config);
  checkFilterAndDescription(driver, input);
  // A type whose client package is an optional dependency this install lacks: 422, naming the package.
  await driver.ready?.();
  await checkTarget(deps, orgId, driver, input.config);
  // Types that only read (mongodb, mssql, oracle) keep allow_write/allow_ddl false whatever is sent.
  const isDatabase = driver.kind === 'database' && driver.readOnly !== true;
  const row = await deps.store.db.transaction(async (tx) => {
    await assertConnectorAllowed(tx, orgId);
    const created = await repo.insertConnector(tx, {
      orgId,
      name: input.name,
      type: input.type,
      status: 'validating',
      config: input.config as unknown as Record<string, unknown>,
      allowWrite: isDatabase && Boolean(input.allow_write),
      allowDdl: isDatabase && Boolean(input.allow_ddl),
      // free_sql: false serves only the connector's saved tools (database types; an mcp connector has no free SQL).
      freeSql: driver.kind !== 'database' || input.free_sql !== false,
      toolLayout: takesLayout(driver) && input.tool_layout === 'single' ? 'single' : 'per_table',
      description: storedDescription(input.description),
      includeTables: input.include_tables ?? [],
      excludeTables: input.exclude_tables ?? [],
      validationGeneration: 1,
    });
    // The ciphertext is bound to the row id, so it is sealed once the id exists.
    const sealed = input.credential !== undefined ? deps.box.encrypt(input.credential, repo.credentialContext(created.id)) : null;
    const withCredential = await repo.updateConnectorRow(tx, created.id, { credentialSealed: sealed });
    await recordAudit(tx, {
      orgId,
      action: 'connector.created',
      actor,
      targetType: 'connector',
      targetId: created.id,
      details: { type: input.type, name: input.name, ...(input.free_sql === false ? { free_sql: false } : {}) },
    });
    return withCredential;
  });
  scheduleValidation(deps, row);
  return row;
}

export interface TestConnectionInput {
  type: string;
  config: Record<string, unknown>;
  credential?: string;
  /** A saved connector whose stored credential is used when `credential` is omitted. */
  connectorId?: string;
}

/**
 * Connects with these settings and introspects, writing nothing: the checks of a create (schema, driver, outbound
 * policy) first, then the driver's own validate and introspect under a throwaway id, closed afterwards.
 */
export async function testConnection(deps: ConnectorServiceDeps, orgId: string, input: TestConnectionInput) {
  const driver = driverFor(input.type);
  checkConfig(driver, input.config);
  await driver.ready?.();
  await checkTarget(deps, orgId, driver, input.config);
  let credential = input.credential ?? null;
  if (credential === null && input.connectorId) {
    const saved = await getConnector(deps, orgId, input.connectorId);
    credential = saved.credentialSealed ? deps.box.decrypt(saved.credentialSealed, repo.credentialContext(saved.id)) : null;
  }
  const id = `test-${crypto.randomUUID()}`;
  const env: SourceEnv = {
    connectorName: 'connection test',
    outbound: deps.outbound,
    orgId,
    limits: { statementTimeoutMs: deps.config.statementTimeoutMs, maxResultBytes: deps.config.maxResultBytes },
  };
  try {
    await driver.validate(id, input.config, credential, env);
    const specs = await driver.introspect(id, input.config, credential, env);
    return { ok: true, reason: null, tools: specs.length };
  } catch (err) {
    if (!(err instanceof ConnectorError)) deps.log.error('connection test failed', { error: describeError(err) });
    return { ok: false, reason: err instanceof ConnectorError ? err.message : 'The test failed unexpectedly.', tools: null };
  } finally {
    await driver.close(id).catch(() => {});
  }
}

export interface UpdateConnectorInput {
  name?: string;
  config?: Record<string, unknown>;
  credential?: string;
  allow_write?: boolean;
  allow_ddl?: boolean;
  free_sql?: boolean;
  tool_layout?: 'per_table' | 'single';
  description?: string | null;
  include_tables?: string[];
  exclude_tables?: string[];
}

export async function updateConnector(deps: ConnectorServiceDeps, orgId: string, id: string, input: UpdateConnectorInput, actor: Actor) {
  const existing = await repo.findConnector(deps.store.db, orgId, id);
  if (!existing) throw notFound('connector_not_found', 'No such connector.');
  const driver = driverFor(existing.type);
  if (input.config !== undefined) {
    checkConfig(driver, input.config);
    await checkTarget(deps, orgId, driver, input.config);
  }
  checkFilterAndDescription(driver, input);
  const isDatabase = driver.kind === 'database' && driver.readOnly !== true;
  const changes: repo.ConnectorChanges = { updatedAt: new Date() };
  if (input.name !== undefined) changes.name = input.name;
  if (input.config !== undefined) changes.config = input.config as unknown as Record<string, unknown>;
  if (input.credential !== undefined) changes.credentialSealed = deps.box.encrypt(input.credential, repo.credentialContext(id));
  // allow_write and allow_ddl exist for database types only; for other types they are silently ignored.
  if (isDatabase && input.allow_write !== undefined) changes.allowWrite = input.allow_write;
  if (isDatabase && input.allow_ddl !== undefined) changes.allowDdl = input.allow_ddl;
  if (driver.kind === 'database' && input.free_sql !== undefined) changes.freeSql = input.free_sql;
  if (input.tool_layout !== undefined) changes.toolLayout = takesLayout(driver) ? input.tool_layout : 'per_table';
  if (input.description !== undefined) changes.description = storedDescription(input.description);
  if (input.include_tables !== undefined) changes.includeTables = input.include_tables;
  if (input.exclude_tables !== undefined) changes.excludeTables = input.exclude_tables;
  // The filter decides which tables become tools: a change re-runs introspection, as a new config does.
  const revalidate = input.config !== undefined || input.credential !== undefined || input.include_tables !== undefined || input.exclude_tables !== undefined;
  const row = await deps.store.db.transaction(async (tx) => {
    const updated = await repo.updateConnectorRow(tx, id, changes);
    await repo.bumpCatalogVersion(tx, orgId);
    const fields = Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined);
    await recordAudit(tx, { orgId, action: 'connector.updated', actor, targetType: 'connector', targetId: id, details: { fields } });
    return updated;
  });
  if (revalidate) {
    await driver.close(id);
    return (await revalidateConnector(deps, orgId, id, actor, false))!;
  }
  return row;
}

export async function archiveConnector(deps: ConnectorServiceDeps, orgId: string, id: string, actor: Actor): Promise<void> {
  const existing = await repo.findConnector(deps.store.db, orgId, id);
  if (!existing) throw notFound('connector_not_found', 'No such connector.');
  const archived = await deps.store.db.transaction(async (tx) => {
    const done = await repo.archive(tx, orgId, id);
    if (done) {
      await repo.bumpCatalogVersion(tx, orgId);
      await recordAudit(tx, { orgId, action: 'connector.archived', actor, targetType: 'connector', targetId: id });
    }
    return done;
  });
  if (!archived) throw notFound('connector_not_found', 'No such connector.');
  // Closing a pool can wait on a dead database: do it in the background, the archive is already done.
  const driver = getDriver(existing.type);
  if (driver) deps.jobs.run(() => driver.close(id));
}

export async function revalidateConnector(deps: ConnectorServiceDeps, orgId: string, id: string, actor: Actor, audit = true) {
  const row = await repo.startValidation(deps.store.db, orgId, id);
  if (!row) throw notFound('connector_not_found', 'No such connector.');
  if (audit) await recordAudit(deps.store.db, { orgId, action: 'connector.revalidated', actor, targetType: 'connector', targetId: id });
  scheduleValidation(deps, row);
  return row;
}

function scheduleValidation(deps: ConnectorServiceDeps, row: repo.ConnectorRow): void {
  deps.jobs.run(() => validateNow(deps, row));
}

/** An audit detail list of at most 100 entries, and how many more there were; nothing when empty. */
function listed<T>(key: string, list: T[]): Record<string, T[] | number> {
  if (!list.length) return {};
  return { [key]: list.slice(0, 100), ...(list.length > 100 ? { [`more_${key}`]: list.length - 100 } : {}) };
}

/** Connects, introspects and provisions the connector's tools; a failure leaves status `failed` with a safe reason. */
async function validateNow(deps: ConnectorServiceDeps, row: repo.ConnectorRow): Promise<void> {
  const driver = getDriver(row.type);
  const generation = row.validationGeneration;
  try {
    if (!driver) throw new ConnectorError(`Connector type ${row.type} is not available on this gateway.`, 'invalid_config');
    const credential = row.credentialSealed ? deps.box.decrypt(row.credentialSealed, repo.credentialContext(row.id)) : null;
    const config = row.config;
    let skipped: SkippedTool[] = [];
    const env: SourceEnv = {
      connectorName: row.name,
      outbound: deps.outbound,
      orgId: row.orgId,
      limits: { statementTimeoutMs: deps.config.statementTimeoutMs, maxResultBytes: deps.config.maxResultBytes },
      reportSkipped: (list) => (skipped = list),
    };
    await driver.validate(row.id, config, credential, env);
    const filtered = applyTableFilter(await driver.introspect(row.id, config, credential, env), { include: row.includeTables, exclude: row.excludeTables });
    // A database connector's schema tool joins its tables (decision 0313): governed by a row of its own.
    const specs = driver.kind === 'database' ? withSchemaTool(filtered, row.type, row.name) : filtered;
    const applied = await deps.store.db.transaction(async (tx) => {
      const applied = await repo.applyIntrospection(tx, row.orgId, { id: row.id, name: row.name }, generation, specs, skipped);
      if (!applied) return false;
      // The source answered: healthy (this row is the audit of it; decision 0325).
      await setHealth(tx, row.orgId, row.id, 'healthy', null);
      await repo.bumpCatalogVersion(tx, row.orgId);
      // Renamed tools (an old `_2` named after its connector, decision 0305): agents' names changed, so the row says
      // which; so do the tools withdrawn and returned (decision 0405), whose settings an admin may look for.
      const details = {
        tools: specs.length,
        ...(skipped.length ? { skipped: skipped.length } : {}),
        ...listed('renamed', applied.renamed),
        ...listed('withdrawn', applied.withdrawn),
        ...listed('returned', applied.returned),
      };
      await recordAudit(tx, {
        orgId: row.orgId,
        action: 'connector.validated',
        actor: { type: 'system', id: null },
        targetType: 'connector',
        targetId: row.id,
        details,
      });
      return true;
    });
    if (applied) await deps.authCache.changed();
  } catch (err) {
    const reason = err instanceof ConnectorError ? err.message : 'Validation failed unexpectedly.';
    if (!(err instanceof ConnectorError)) deps.log.error('connector validation failed', { connector: row.id, error: describeError(err) });
    const failed = await deps.store.db.transaction(async (tx) => {
      if (!(await repo.markFailed(tx, row.orgId, row.id, generation, reason))) return false;
      // A source that did not answer is unhealthy too; one that answered wrongly (a missing schema) says so in status.
      if (unreachable(err)) await setHealth(tx, row.orgId, row.id, 'unhealthy', reason);
      await repo.bumpCatalogVersion(tx, row.orgId);
      await recordAudit(tx, {
        orgId: row.orgId,
        action: 'connector.validation_failed',
        actor: { type: 'system', id: null },
        targetType: 'connector',
        targetId: row.id,
        outcome: 'error',
        details: { reason },
      });
      return true;
    });
    if (failed) await deps.authCache.changed();
  }
}

const unreachable = (err: unknown): boolean => err instanceof ConnectorError && (err.code === 'connection_failed' || err.code === 'timeout');

/** Manual provisioning re-validates every live connector of the org and waits for the results. */
export async function reprovisionConnectors(deps: ConnectorServiceDeps, orgId: string): Promise<void> {
  const rows = await repo.listConnectors(deps.store.db, orgId);
  for (const row of rows) {
    const started = await repo.startValidation(deps.store.db, orgId, row.id);
    if (started) await validateNow(deps, started);
  }
}
