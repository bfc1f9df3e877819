/** Assembles a gateway from its configuration: store, keys, authenticator, services, and the app. */
import { join } from 'node:path';
import { Authenticator } from './auth/authenticate.ts';
import { createIdpVerifier } from './auth/idp/verifier.ts';
import { createIdpResolver } from './auth/idp/resolver.ts';
import { parseOutboundPolicy } from './net/outbound.ts';
import { TokenSigner } from './auth/signing.ts';
import { decodeKey, type Config } from './config.ts';
import { buildApp } from './app.ts';
import type { AppDeps } from './http/context.ts';
import { openStore } from './store/db.ts';
import { CatalogCache } from './tools/catalog.ts';
import { JobTracker } from './util/jobs.ts';
import { createLocalLimiter, createRedisLimiter, LocalWindow } from './limits/burst.ts';
import { UsageMeter } from './limits/usage.ts';
import { DomainEvents } from './events/index.ts';
import { ApprovalService } from './approvals/service.ts';
import { deriveApprovalDigestKey } from './approvals/digest.ts';
import { executeCatalogTool } from './tools/execute.ts';
import './connectors/index.ts';
import { closeAllConnectors } from './connectors/registry.ts';
import { SecretBox, randomSecret } from './util/crypto.ts';
import { embeddedSecretKey } from './util/datadir.ts';
import { createLogger } from './util/log.ts';

/** How often each instance expires due approvals and fails orphaned executions (lazy expiry covers reads in between). */
const APPROVAL_SWEEP_INTERVAL_MS = 30_000;
const APPROVAL_STALE_MIN_MS = 5 * 60_000;

export interface Gateway {
  deps: AppDeps;
  app: ReturnType<typeof buildApp>;
  handle(request: Request): Promise<Response>;
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** Tests: keep PGlite in memory instead of the data folder. */
  inMemory?: boolean;
}

export async function createGateway(config: Config, options: GatewayOptions = {}): Promise<Gateway> {
  const embedded = !config.databaseUrl;
  const keyText = config.secretKey ?? (embedded && !options.inMemory ? embeddedSecretKey(config.dataDir) : Buffer.from(randomSecret(32), 'base64url').toString('base64'));
  const box = new SecretBox(decodeKey(keyText)!);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: embedded && !options.inMemory ? join(config.dataDir, 'pgdata') : null,
  });
  const log = createLogger(config.logLevel);
  const signer = new TokenSigner(store.db, box, config.publicUrl);
  await signer.init();
  const outbound = parseOutboundPolicy({ allowHosts: config.outboundAllowHosts });
  const idpVerifier = createIdpVerifier({
    outbound,
    clockToleranceSec: config.idpClockToleranceSeconds,
    jwksCooldownMs: config.jwksCooldownMs,
    jwksTimeoutMs: config.jwksTimeoutMs,
  });
  const deps = {
    config,
    store,
    box,
    signer,
    auth: new Authenticator(store.db, signer, config.operatorToken, createIdpResolver(store.db, idpVerifier)),
    log,
    outbound,
    idpVerifier,
  } as AppDeps;
  deps.catalog = new CatalogCache(deps);
  deps.jobs = new JobTracker();
  deps.limiter = config.redisUrl ? await createRedisLimiter({ url: config.redisUrl, log }) : createLocalLimiter();
  deps.usage = new UsageMeter(store.db);
  deps.localBurst = new LocalWindow();
  deps.events = new DomainEvents();
  deps.approvals = new ApprovalService({
    db: store.db,
    events: deps.events,
    log,
    digestKey: deriveApprovalDigestKey(decodeKey(keyText)!),
    catalogFor: (orgId, version) => deps.catalog.get(orgId, version),
    runTool: (org, tool, input) => executeCatalogTool(deps, org, tool, input),
    // Longer than any execution can take (statement timeout plus connect and queue time), so only orphans match.
    executionStaleMs: Math.max(APPROVAL_STALE_MIN_MS, 2 * config.statementTimeoutMs + 60_000),
  });
  deps.approvals.startSweeper(APPROVAL_SWEEP_INTERVAL_MS);
  const app = buildApp(deps);
  return {
    deps,
    app,
    handle: (request) => app.handle(request),
    close: async () => {
      await deps.approvals.stopSweeper();
      await deps.jobs.idle();
      await closeAllConnectors();
      await deps.usage.close();
      await deps.limiter.close();
      await store.close();
    },
  };
}
