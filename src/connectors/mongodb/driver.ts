/**
 * The `mongodb` connector driver (the official `mongodb` driver): one MongoClient (its own connection pool) per
 * connector, one tool per collection or view of the configured database. A tool runs either a find (filter,
 * projection, sort) or an aggregate pipeline, checked by guard.ts; the server cancels it at maxTimeMS.
 */
import { MongoClient, type Db, type Document, type FindCursor, type AggregationCursor, type MongoClientOptions } from 'mongodb';
import {
  ConnectorError,
  type CallTable,
  type ConnectorDriver,
  type DatabaseConfig,
  type ExecutionContext,
  type ToolResult,
  type ToolSpec,
  type SavedStatement,
} from '../types.ts';
import { admissionOf, busyText, ConnectorBusyError, PoolRegistry, type PoolSettings } from '../shared/pools.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, OUTPUT_SCHEMA } from '../shared/toolspec.ts';
import { errorResult, refusedResult, RowCollector, type Narrowing } from '../shared/result.ts';
import { toolNames } from '../shared/naming.ts';
import { connectorFailure, describeNetworkError, INTERNAL_FAILURE_TEXT, scrub, type Described } from '../shared/errors.ts';
import { netErrorCode } from '../shared/netcause.ts';
import { assertConnectTarget, refusedTargetText } from '../shared/outbound.ts';
import { checkedLookup } from '../../net/dial.ts';
import type { OutboundPolicy } from '../../net/policy.ts';
import { DEFAULT_MONGODB_PORT, mongodbConfigSchema } from './config.ts';
import { guardMongoCall, type Lookups } from './guard/guard.ts';
import type { LookupCollection } from './guard/lookup.ts';
import { bsonToJson } from './values.ts';
import { savedPipelineArgs, checkSavedPipeline } from './template.ts';

/** Databases of the server itself: never exposed. */
export const MONGODB_SYSTEM_DATABASES: ReadonlySet<string> = new Set(['admin', 'local', 'config']);

export interface MongoTarget {
  database: string;
  collection: string;
  kind: 'collection' | 'view';
  /** A saved pipeline tool (template.ts): the JSON pipeline template in `statement`, its typed parameters. */
  saved?: SavedStatement;
}

export type MongoToolSpec = ToolSpec<MongoTarget>;

/**
 * What a mongodb call reads: a database call's context whose `tables` (issue 38) are the connector's collections with
 * their tool rows' state and policies; `$lookup` and its kin read only those (guard/lookup.ts).
 */
export type MongoExecutionContext = Omit<ExecutionContext, 'tables' | 'touched'> & {
  tables?: { key: string; list: readonly CallTable<MongoTarget>[] };
  /** With `tables`: told which collections the call reads once the guard passed it (audit rows). */
  touched?: (collections: readonly MongoTarget[]) => void;
};

/** The targets of the collections a guarded call reads (its own first), from the connector's list. */
function touchedTargets(ctx: MongoExecutionContext, tool: MongoToolSpec, names: readonly string[] | undefined): MongoTarget[] {
  if (!names) return [tool.target];
  const byName = new Map((ctx.tables?.list ?? []).filter((t) => t.target.database === tool.target.database).map((t) => [t.target.collection, t.target]));
  return names.map((n) => byName.get(n) ?? { database: tool.target.database, collection: n, kind: 'collection' as const });
}

/** The connector's collections of the tool's database by name, built once per list (a catalog version). */
const lookupMaps = new WeakMap<readonly CallTable<MongoTarget>[], Map<string, Lookups>>();

function lookupsOf(ctx: MongoExecutionContext, database: string): Lookups | undefined {
  const list = ctx.tables?.list;
  if (!list) return undefined;
  let byDatabase = lookupMaps.get(list);
  if (!byDatabase) lookupMaps.set(list, (byDatabase = new Map()));
  let lookups = byDatabase.get(database);
  if (!lookups) {
    const map = new Map<string, LookupCollection>();
    for (const t of list) {
      if (t.target.database !== database) continue;
      map.set(t.target.collection, t.policy ? { enabled: t.enabled, policy: t.policy.policy } : { enabled: t.enabled });
    }
    byDatabase.set(database, (lookups = map));
  }
  return lookups;
}

interface MongoPool {
  client: MongoClient;
}

/** Client options; every value explicit. The password goes in `auth`, never into a URL that could be logged. */
export function mongoOptions(
  config: DatabaseConfig,
  credential: string | null,
  settings: PoolSettings,
  outbound?: OutboundPolicy,
): { url: string; options: MongoClientOptions } {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const tls = config.tls ?? 'disable';
  const options: MongoClientOptions = {
    appName: 'toolgate',
    maxPoolSize: settings.max,
    maxIdleTimeMS: settings.idleMs,
    connectTimeoutMS: settings.connectTimeoutMs,
    serverSelectionTimeoutMS: settings.connectTimeoutMs,
    tls: tls !== 'disable',
    ...(tls === 'require' ? { tlsAllowInvalidCertificates: true, tlsAllowInvalidHostnames: true } : {}),
    // 64-bit integers as bigint: the JSON rules (shared/jsonsafe.ts) then keep them exact.
    useBigInt64: true,
    retryWrites: false,
    directConnection: false,
    // Every socket to a named host (the configured one, and replica-set members the server announces by name) goes
    // to an address the outbound policy checked at that moment. Members announced as IP literals skip a lookup.
    ...(outbound ? { lookup: checkedLookup(outbound, config.port ?? DEFAULT_MONGODB_PORT, config.database) } : {}),
  };
  if (credential !== null) {
    options.auth = { username: config.user, password: credential };
    options.authSource = config.auth_source ?? 'admin';
  }
  return { url: `mongodb://${host}:${config.port ?? DEFAULT_MONGODB_PORT}/`, options };
}

const pools = new PoolRegistry<MongoPool, { outbound?: OutboundPolicy }>({
  open(config, credential, settings, open) {
    const { url, options } = mongoOptions(config, credential, settings, open?.outbound);
    return { client: new MongoClient(url, options) };
  },
  end: (p) => p.client.close(true),
});

/** Pool size, idle close and connect timeout for clients opened from now on (defaults: 10, 5 min, 5 s). */
export function configureMongodbPools(settings: Partial<PoolSettings>): void {
  pools.configure(settings);
}

interface ErrorContext {
  config: DatabaseConfig;
  credential: string | null;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
}

interface MongoErr {
  name?: string;
  code?: unknown;
  codeName?: string;
  message?: string;
}

function describeConnect(err: unknown, ctx: ErrorContext): Described | null {
  const { host, user } = ctx.config;
  const port = ctx.config.port ?? DEFAULT_MONGODB_PORT;
  const e = (typeof err === 'object' && err !== null ? err : {}) as MongoErr;
  const net = describeNetworkError({ code: netErrorCode(err) ?? e.code, cause: err }, host, port, ctx.connectTimeoutMs);
  if (net) return net;
  if (e.code === 18 || e.codeName === 'AuthenticationFailed') return { message: `authentication failed for user ${user}`, code: 'auth_failed' };
  if (e.name === 'MongoServerSelectionError' || e.name === 'MongoNetworkTimeoutError') {
    return { message: `could not connect to ${host}:${port}: no usable server within ${Math.round(ctx.connectTimeoutMs / 1000)} s`, code: 'timeout' };
  }
  if (e.name === 'MongoNetworkError') return { message: `the connection to ${host}:${port} failed`, code: 'connection_failed' };
  return null;
}

function connectorError(err: unknown, ctx: ErrorContext, fallback: ConnectorError['code']): ConnectorError {
  return connectorFailure(err, err instanceof ConnectorError ? null : describeConnect(err, ctx), ctx.credential, fallback);
}

function callErrorText(err: unknown, ctx: ErrorContext): string {
  if (err instanceof ConnectorBusyError) return busyText(err);
  const e = (err ?? {}) as MongoErr;
  if (e.code === 'ABORTED') return 'The call was aborted.';
  // 50: MaxTimeMSExpired, the server cancelled the operation; STATEMENT_TIMEOUT: the client's backstop.
  if (e.code === 50 || e.codeName === 'MaxTimeMSExpired' || e.code === 'STATEMENT_TIMEOUT') {
    return `The query was cancelled after ${ctx.statementTimeoutMs} ms (statement timeout).`;
  }
  const d = describeConnect(err, ctx);
  if (d) return scrub(`The database is unavailable: ${d.message}.`, ctx.credential);
  if (e.code === 13 || e.codeName === 'Unauthorized') return scrub(`Permission denied: ${e.message}.`, ctx.credential);
  if (e.name === 'MongoServerError' && typeof e.code === 'number')
    return scrub(`The database rejected the query: ${e.message} (error ${e.code}).`, ctx.credential);
  return INTERNAL_FAILURE_TEXT;
}

const errorContext = (config: DatabaseConfig, credential: string | null, statementTimeoutMs?: number): ErrorContext => ({
  config,
  credential,
  connectTimeoutMs: pools.currentSettings.connectTimeoutMs,
  statementTimeoutMs,
});

/** A throwaway client (validate, introspect): credentials under test must not replace a working pool. */
async function withClient<T>(config: DatabaseConfig, credential: string | null, outbound: OutboundPolicy | undefined, fn: (db: Db) => Promise<T>): Promise<T> {
  const { url, options } = mongoOptions(config, credential, { ...pools.currentSettings, max: 1 }, outbound);
  const client = new MongoClient(url, options);
  try {
    await client.connect();
    return await fn(client.db(config.database));
  } finally {
    await client.close(true).catch(() => undefined);
  }
}

function checkDatabase(config: DatabaseConfig): void {
  if (MONGODB_SYSTEM_DATABASES.has(config.database)) {
    throw new ConnectorError(`database ${config.database} is a system database; its collections cannot be exposed as tools`, 'invalid_config');
  }
}

function describeTool(name: string, t: MongoTarget): MongoToolSpec {
  return {
    name,
    description:
      `Query the MongoDB ${t.kind} ${t.database}.${t.collection}. Either a find (filter, projection, sort as MongoDB query ` +
      `documents) or an aggregation "pipeline" (read-only stages; $lookup/$unionWith/$graphLookup on this database's ` +
      `collections whose tools are enabled, each under its own policy). ` +
      `Use {"$oid": "<24 hex>"} for an ObjectId and {"$date": "<ISO 8601>"} for a date.`,
    inputSchema: {
      type: 'object',
      properties: {
        filter: { type: 'object', description: 'Query filter, e.g. {"status": "open", "total": {"$gt": 10}}' },
        projection: { type: 'object', description: 'Fields to return, e.g. {"name": 1, "_id": 0}' },
        sort: { type: 'object', description: 'Sort order, e.g. {"created": -1}' },
        pipeline: { type: 'array', items: { type: 'object' }, description: 'Aggregation pipeline (instead of filter/projection/sort)' },
        limit: { type: 'integer', description: 'Maximum documents to return', default: DEFAULT_LIMIT, minimum: 1, maximum: MAX_LIMIT },
      },
      additionalProperties: false,
    },
    outputSchema: OUTPUT_SCHEMA,
    target: t,
  };
}

/** The client's backstop when the server's maxTimeMS does not answer (a server that hangs): the cursor is killed. */
const CLIENT_GRACE_MS = 1000;

const failure = (code: 'STATEMENT_TIMEOUT' | 'ABORTED'): Error => Object.assign(new Error(code), { code });

/** Runs one guarded call on the pool's client. Never throws. */
export async function executeMongo(client: MongoClient, tool: MongoToolSpec, args: Record<string, unknown>, ctx: MongoExecutionContext): Promise<ToolResult> {
  const errCtx = errorContext(ctx.config, ctx.credential, ctx.limits.statementTimeoutMs);
  const callArgs = tool.target.saved ? savedPipelineArgs(tool.target.saved, args) : args;
  if (typeof callArgs === 'string') return refusedResult(callArgs, 'invalid_arguments');
  const verdict = guardMongoCall(callArgs, tool.target.collection, MAX_LIMIT, DEFAULT_LIMIT, lookupsOf(ctx, tool.target.database));
  if (!verdict.ok) return refusedResult(verdict.reason, 'not_allowed');
  const { call } = verdict;
  if (ctx.touched && verdict.touched) ctx.touched(touchedTargets(ctx, tool, verdict.touched));
  const maxRows = Math.max(1, Math.min(call.limit, ctx.limits.maxRows));
  const narrowing: Narrowing = tool.target.saved ? { kind: 'saved' } : { kind: 'pipeline', maxLimit: Math.min(MAX_LIMIT, ctx.limits.maxRows) };
  const collector = new RowCollector(maxRows, ctx.limits.maxResultBytes, narrowing);
  if (ctx.signal?.aborted) return errorResult(callErrorText(failure('ABORTED'), errCtx));
  const coll = client.db(tool.target.database).collection(tool.target.collection);
  const maxTimeMS = Math.max(1, Math.floor(ctx.limits.statementTimeoutMs));
  const cursor: FindCursor<Document> | AggregationCursor<Document> =
    call.kind === 'find'
      ? coll.find(call.filter, { projection: call.projection, sort: call.sort as never, limit: maxRows + 1, batchSize: Math.min(maxRows + 1, 1000), maxTimeMS })
      : coll.aggregate([...call.pipeline, { $limit: maxRows + 1 }], { maxTimeMS, allowDiskUse: false, batchSize: Math.min(maxRows + 1, 1000) });
  let stoppedFor: 'STATEMENT_TIMEOUT' | 'ABORTED' | null = null;
  const stop = (why: 'STATEMENT_TIMEOUT' | 'ABORTED') => (): void => {
    stoppedFor ??= why;
    cursor.close().catch(() => undefined);
  };
  const onAbort = stop('ABORTED');
  const timer = setTimeout(stop('STATEMENT_TIMEOUT'), ctx.limits.statementTimeoutMs + CLIENT_GRACE_MS);
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const doc of cursor) {
      if (stoppedFor) break;
      if (!collector.add(bsonToJson(doc) as Record<string, unknown>)) break;
    }
    if (stoppedFor) throw failure(stoppedFor);
    return collector.result();
  } catch (err) {
    return errorResult(callErrorText(stoppedFor ? failure(stoppedFor) : err, errCtx));
  } finally {
    clearTimeout(timer);
    ctx.signal?.removeEventListener('abort', onAbort);
    // Killing the cursor on the server: a read that has enough rows does not run on.
    await cursor.close().catch(() => undefined);
  }
}

export const mongodbDriver: ConnectorDriver<DatabaseConfig, MongoTarget, MongoExecutionContext> = {
  type: 'mongodb',
  kind: 'database',
  readOnly: true,
  configSchema: mongodbConfigSchema,

  async validate(_connectorId, config, credential, env = {}) {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_MONGODB_PORT);
      checkDatabase(config);
      await withClient(config, credential, env.outbound, async (db) => {
        await db.command({ ping: 1 });
      });
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'connection_failed');
    }
  },

  async introspect(_connectorId, config, credential, env = {}): Promise<MongoToolSpec[]> {
    try {
      await assertConnectTarget(env.outbound, config, DEFAULT_MONGODB_PORT);
      checkDatabase(config);
      const found = await withClient(config, credential, env.outbound, (db) =>
        // nameOnly + authorizedCollections: a login with the read role only may list what it can read.
        db.listCollections({}, { nameOnly: true, authorizedCollections: true }).toArray(),
      );
      const targets: MongoTarget[] = found
        .filter((c) => typeof c.name === 'string' && !c.name.startsWith('system.') && (c.type === 'collection' || c.type === 'view' || c.type === 'timeseries'))
        .map((c) => ({ database: config.database, collection: c.name, kind: c.type === 'view' ? ('view' as const) : ('collection' as const) }))
        .sort((a, b) => (a.collection < b.collection ? -1 : a.collection > b.collection ? 1 : 0));
      const names = toolNames(
        'mongodb',
        targets.map((t) => ({ schema: t.database, table: t.collection })),
      );
      return targets.map((t, i) => describeTool(names[i]!, t));
    } catch (err) {
      throw connectorError(err, errorContext(config, credential), 'introspection_failed');
    }
  },

  checkSaved: async (statement, params, tables) => checkSavedPipeline(statement, params, tables),

  // Issue 38: the collections a call's pipeline reads, decided by the same guard execute runs (nothing is sent).
  async touchedTables(tool, args, ctx) {
    const callArgs = tool.target.saved ? savedPipelineArgs(tool.target.saved, args) : args;
    if (typeof callArgs === 'string') return refusedResult(callArgs);
    const verdict = guardMongoCall(callArgs, tool.target.collection, MAX_LIMIT, DEFAULT_LIMIT, lookupsOf(ctx, tool.target.database));
    return verdict.ok ? touchedTargets(ctx, tool, verdict.touched) : refusedResult(verdict.reason);
  },

  async execute(tool, args, ctx) {
    // Checked at every call: this driver connects by name itself, so the policy sees the name's current answer here.
    const refused = await refusedTargetText(ctx.outbound, ctx.config, DEFAULT_MONGODB_PORT);
    if (refused) return errorResult(refused);
    try {
      return await pools.use(
        ctx.connectorId,
        ctx.config,
        ctx.credential,
        (p) => executeMongo(p.client, tool, args, ctx),
        { outbound: ctx.outbound },
        admissionOf(ctx.limits, ctx.signal),
      );
    } catch (err) {
      return errorResult(callErrorText(err, errorContext(ctx.config, ctx.credential, ctx.limits.statementTimeoutMs)));
    }
  },

  close: (connectorId) => pools.close(connectorId),
  closeAll: () => pools.closeAll(),
};
