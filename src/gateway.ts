/** Assembles a gateway from its configuration: store, keys, authenticator, services, and the app. */
import { createMailer } from './mail/mailer.ts';
import { join } from 'node:path';
import { Authenticator } from './auth/authenticate.ts';
import { LastUseRecorder } from './auth/last-use.ts';
import { createIdpVerifier } from './auth/idp/verifier.ts';
import { createIdpResolver } from './auth/idp/resolver.ts';
import { parseOutboundPolicy, type OutboundPolicy, type Resolver } from './net/outbound.ts';
import { storeTargetOf } from './net/policy.ts';
import { TokenSigner } from './auth/signing.ts';
import { decodeKey, type Config } from './config.ts';
import { buildApp } from './app.ts';
import type { AppDeps } from './deps.ts';
import { maxConnections, openStore, type Store } from './store/db.ts';
import { connectionBudget, serverKey } from './connectors/shared/budget.ts';
import { startStoreShare, type StoreShare } from './connectors/shared/store-share.ts';
import { CatalogCache } from './tools/catalog.ts';
import { JobTracker } from './util/jobs.ts';
import { createLocalLimiter, createRedisLimiter, LocalWindow } from './limits/burst.ts';
import { limitsRedis } from './limits/redis.ts';
import { openRedis, type RedisConnection } from './util/redis.ts';
import { createLocalFailureLimiter, createRedisFailureLimiter } from './limits/auth-failures.ts';
import type { LeaseTuning } from './limits/quota-lease.ts';
import { UsageMeter } from './limits/usage.ts';
import { DomainEvents } from './events/index.ts';
import { createMcpServer } from './mcp/server.ts';
import { outboxSubscriber } from './webhooks/outbox.ts';
import { WebhookWorker } from './webhooks/worker.ts';
import { ApprovalService } from './approvals/service.ts';
import { deriveApprovalDigestKey } from './approvals/digest.ts';
import { executeTool } from './tools/runtime.ts';
import { AuditRecorder, auditSubscriber } from './audit/recorder.ts';
import { startOrphanSealer } from './audit/seal.ts';
import { bindAuditKey, deriveAuditMacKey } from './audit/mac.ts';
import { startRetentionSweeper } from './audit/retention.ts';
import { startRollupFolder } from './audit/rollup-days.ts';
import './connectors/index.ts';
import { closeAllConnectors } from './connectors/registry.ts';
import { SecretBox, randomSecret } from './util/crypto.ts';
import { embeddedSecretKey } from './util/datadir.ts';
import { createLogger, type LogDestination, type Logger } from './util/log.ts';
import { registerGatewaySource, registerOutboxDepth, startDefaultMetrics } from './observability/metrics.ts';
import { startTracing } from './observability/tracing.ts';
import { countPendingDeliveries } from './webhooks/repository.ts';
import { hostname } from 'node:os';
import { createLocalEpoch, createRedisEpoch, type AuthEpoch } from './auth/epoch.ts';
import { McpAuthCache } from './mcp/auth-cache.ts';
import { SignedInTokens } from './auth/oauth-server/access.ts';
import { ConnectorHealth } from './connectors/health.ts';

/** How often each instance expires due approvals and fails orphaned executions (lazy expiry covers reads in between). */
const APPROVAL_SWEEP_INTERVAL_MS = 30_000;
const APPROVAL_STALE_MIN_MS = 5 * 60_000;
/** What the log says when Redis goes down: what each user of the connection does meanwhile. */
const REDIS_DOWN = 'limits fall back to per-instance counts; MCP credential lookups go to the store on every request';

export interface Gateway {
  deps: AppDeps;
  app: ReturnType<typeof buildApp>;
  handle(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** Tests: keep PGlite in memory instead of the data folder. */
  inMemory?: boolean;
  /** Tests: answer DNS look-ups of the outbound guard without a DNS server. */
  resolve?: Resolver;
  /** Tests: where log lines go instead of stdout. */
  logDestination?: LogDestination;
  /** Tests: the Redis key of the auth epoch, so that suites running at once do not share one. */
  authEpochKey?: string;
  /** Tests: the prefix of the failed-authentication keys in Redis, so that suites running at once do not share them. */
  limitsKeyPrefix?: string;
  /** Where a start that waits for its store server says so (default: the log, at error). */
  onStoreWait?: (message: string) => void;
  /** Tests: shorter lives and waits of the blocks of monthly quota (limits/quota-lease.ts). */
  quotaLeases?: Partial<LeaseTuning>;
  /** Tests: the interval of the instance beat that shares the store server's connector connections (decision 0409). */
  storeShareBeatMs?: number;
}

/**
 * The auth epoch (auth/epoch.ts): shared in Redis when configured; in process for the embedded store (one process);
 * none for a PostgreSQL store without Redis (instances could not tell each other about changes: no cache).
 */
function openAuthEpoch(config: Config, log: Logger, redis: RedisConnection | null, key: string | undefined): AuthEpoch | null {
  if (redis) return createRedisEpoch({ redis, log, key });
  return config.databaseUrl ? null : createLocalEpoch();
}

/**
 * The connection budget of connector pools (decision 0323); on the store's own server, the connectors of all live
 * instances stay the store's reserve below its max_connections (read once), each instance taking its share
 * (decision 0409), so the store, the CLI and other instances always connect.
 */
async function applyConnectionBudget(config: Config, store: Store, log: Logger, options: GatewayOptions): Promise<StoreShare | null> {
  connectionBudget.settings = {
    total: config.connectorConnectionsMax,
    perServer: config.connectorConnectionsPerServerMax,
    waitMs: config.connectorConnectionsWaitMs,
  };
  const target = storeTargetOf(config.databaseUrl);
  if (!target || store.kind !== 'postgres') return null;
  const max = await maxConnections(store.db);
  if (max === null) return null;
  return startStoreShare({
    db: store.db,
    server: serverKey(target.host, target.port),
    capacity: max - config.storeReservedConnections,
    beatMs: options.storeShareBeatMs,
    onTrouble: (message) => log.error(message),
  });
}

/** The secret key, the store it opens and the process-wide parts every other one needs. */
async function openBase(config: Config, options: GatewayOptions) {
  const embedded = !config.databaseUrl;
  const keyText =
    config.secretKey ?? (embedded && !options.inMemory ? embeddedSecretKey(config.dataDir) : Buffer.from(randomSecret(32), 'base64url').toString('base64'));
  const box = new SecretBox(decodeKey(keyText)!);
  const log = createLogger(config.logLevel, options.logDestination);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: embedded && !options.inMemory ? join(config.dataDir, 'pgdata') : null,
    reach: { waitMs: config.storeStartWaitMs, onWait: options.onStoreWait ?? ((message) => log.error(message)) },
  });
  let storeShare: StoreShare | null;
  try {
    storeShare = await applyConnectionBudget(config, store, log, options);
  } catch (err) {
    await store.close();
    throw err;
  }
  startDefaultMetrics();
  const stopTracing = config.otlpEndpoint
    ? await startTracing({
        endpoint: config.otlpEndpoint,
        serviceName: config.serviceName,
        sampleRatio: config.traceSampleRatio,
        attributes: { 'service.instance.id': `${hostname()}:${process.pid}` },
      })
    : async () => {};
  const signer = new TokenSigner(store.db, box, config.publicUrl);
  await signer.init();
  return { keyText, box, store, log, stopTracing, signer, storeShare };
}

/** The outbound policy and the IdP verifier that follows it. */
function outboundParts(config: Config, options: GatewayOptions) {
  // The gateway's own listener and its store are never an org's target, whatever the allow-list says.
  const outbound = parseOutboundPolicy({
    allowHosts: config.outboundAllowHosts,
    resolve: options.resolve,
    ownPorts: [config.port],
    store: storeTargetOf(config.databaseUrl),
    extraCa: config.outboundCaPem,
  });
  const idpVerifier = createIdpVerifier({
    outbound,
    clockToleranceSec: config.idpClockToleranceSeconds,
    jwksCooldownMs: config.jwksCooldownMs,
    jwksTimeoutMs: config.jwksTimeoutMs,
  });
  return { outbound, idpVerifier };
}

/** Binds the audit key and starts sealing what earlier instances left unsealed, then the orphan sweep; returns its stop. */
function startAuditChain(store: Store, log: Logger, key: Uint8Array): () => Promise<void> {
  // Rows left unsealed (written before the audit chain existed, or by an instance that stopped) are sealed in the
  // background, so the instance is ready at once (decision 0349); later orphans by the sweep of any instance.
  bindAuditKey(store.db, deriveAuditMacKey(key));
  return startOrphanSealer({ db: store.db, log });
}

/** Domain events with their subscribers: the webhook outbox and the audit rows of approvals. */
function domainEvents(): DomainEvents {
  const events = new DomainEvents();
  // The webhook outbox subscribes to every emitted event (approvals), in the emitter's transaction; tool.called is
  // relayed from sealed audit rows by the webhook worker (webhooks/relay.ts).
  events.subscribe(outboxSubscriber);
  events.subscribe(auditSubscriber, ['approval.requested']);
  return events;
}

interface ApprovalParts {
  store: Store;
  events: DomainEvents;
  log: Logger;
  key: Uint8Array;
  catalog: CatalogCache;
  usage: UsageMeter;
  config: Config;
  outbound: OutboundPolicy;
  health: ConnectorHealth;
}

function approvalService({ store, events, log, key, catalog, usage, config, outbound, health }: ApprovalParts): ApprovalService {
  return new ApprovalService({
    db: store.db,
    events,
    log,
    digestKey: deriveApprovalDigestKey(key),
    catalog,
    // The tool runtime's own execution step: an approved call meets the same quota, driver and limits as tools/call.
    runTool: (org, tool, input, caller, touched) => executeTool({ usage, config, outbound, health }, org, tool, input, undefined, caller, touched),
    // Longer than any execution can take (the wait for a connector slot, the statement timeout, connect time), so
    // only orphans match.
    executionStaleMs: Math.max(APPROVAL_STALE_MIN_MS, config.connectorQueueTimeoutMs + 2 * config.statementTimeoutMs + 60_000),
  });
}

/** The limits kept in Redis when there is one (each falls back to this instance's counts while it is down), else in process. */
function limiters(redis: RedisConnection | null, prefix: string): Pick<AppDeps, 'limiter' | 'authFailures'> {
  if (!redis) return { limiter: createLocalLimiter(), authFailures: createLocalFailureLimiter(prefix) };
  const limits = limitsRedis(redis);
  return { limiter: createRedisLimiter({ redis: limits }), authFailures: createRedisFailureLimiter(limits, prefix) };
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const { keyText, box, store, log, stopTracing, signer, storeShare } = await openBase(config, options);
  const key = decodeKey(keyText)!;
  const { outbound, idpVerifier } = outboundParts(config, options);
  const catalog = new CatalogCache({ store, box });
  const usage = new UsageMeter(store.db, undefined, options.quotaLeases);
  const stopOrphanSealer = startAuditChain(store, log, key);
  const events = domainEvents();
  const webhookWorker = config.webhookWorker ? new WebhookWorker({ store, box, outbound, log, config }) : null;
  const health = new ConnectorHealth({ store, box, log, outbound, config });
  const approvals = approvalService({ store, events, log, key, catalog, usage, config, outbound, health });
  const audit = new AuditRecorder({ db: store.db, log, queueMax: config.auditQueueMax });
  // One Redis connection for the limits and the auth epoch (util/redis.ts), closed last.
  const redis = config.redisUrl ? await openRedis({ url: config.redisUrl, log, whenDown: REDIS_DOWN }) : null;
  const authCache = new McpAuthCache({ epoch: openAuthEpoch(config, log, redis, options.authEpochKey), ttlMs: config.authCacheTtlMs });
  const lastUse = new LastUseRecorder({ db: store.db, log });
  const stopRetention = startRetentionSweeper({ db: store.db, log, retentionDays: config.auditRetentionDays });
  const stopFolder = startRollupFolder({ db: store.db, log });
  const deps: AppDeps = {
    config,
    store,
    box,
    signer,
    auth: new Authenticator(
      store.db,
      signer,
      config.operatorToken,
      createIdpResolver(store.db, idpVerifier),
      new SignedInTokens(store.db, signer, config.publicUrl),
      lastUse,
    ),
    log,
    catalog,
    jobs: new JobTracker(),
    outbound,
    idpVerifier,
    ...limiters(redis, options.limitsKeyPrefix ?? 'toolgate'),
    localBurst: new LocalWindow(),
    usage,
    events,
    approvals,
    audit,
    authCache,
    mcp: createMcpServer({ catalog, usage, config, log, approvals, outbound, audit, health }),
    webhookWorker,
    mailer: createMailer(config),
    lifecycle: { shuttingDown: false },
  };
  const unregisterMetrics = registerGatewaySource({ auditQueue: () => audit.queueDepth(), burstMode: () => deps.limiter.mode?.() ?? 'local' });
  registerOutboxDepth(() => countPendingDeliveries(store.db));
  approvals.startSweeper(APPROVAL_SWEEP_INTERVAL_MS);
  webhookWorker?.start();
  health.start();
  const app = buildApp(deps);
  const close = async () => {
    await deps.approvals.stopSweeper();
    await webhookWorker?.stop();
    await health.stop();
    await deps.jobs.idle();
    deps.mailer?.close();
    stopRetention();
    stopFolder();
    await stopOrphanSealer();
    await audit.drain();
    await lastUse.close();
    await closeAllConnectors();
    // Its pools closed, the instance leaves the count: the others take its share of the store's server at their next beat.
    await storeShare?.stop();
    await deps.usage.close();
    await deps.limiter.close();
    await authCache.close();
    await redis?.close();
    unregisterMetrics();
    registerOutboxDepth(null);
    await store.close();
    await stopTracing();
    log.flush();
  };
  return { deps, app, handle: (request) => app.handle(request), close };
}
