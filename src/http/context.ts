/** What a handler receives, and the dependencies the app is built from. */
import type { Authenticator } from '../auth/authenticate.ts';
import type { Principal } from '../auth/principal.ts';
import type { TokenSigner } from '../auth/signing.ts';
import type { Config } from '../config.ts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from '../util/crypto.ts';
import type { Logger } from '../util/log.ts';
import type { CatalogCache } from '../tools/catalog.ts';
import type { JobTracker } from '../util/jobs.ts';
import type { OutboundPolicy } from '../net/outbound.ts';
import type { IdpVerifier } from '../auth/idp/verifier.ts';
import type { BurstLimiter, LocalWindow } from '../limits/burst.ts';
import type { UsageMeter } from '../limits/usage.ts';
import type { DomainEvents } from '../events/index.ts';
import type { ApprovalService } from '../approvals/service.ts';
import type { OperationId } from '../../generated/operations.ts';

export interface AppDeps {
  config: Config;
  store: Store;
  box: SecretBox;
  signer: TokenSigner;
  auth: Authenticator;
  log: Logger;
  catalog: CatalogCache;
  jobs: JobTracker;
  outbound: OutboundPolicy;
  idpVerifier: IdpVerifier;
  /** Shared (Redis) burst windows, exact across instances; used for tools/call. */
  limiter: BurstLimiter;
  /** This instance's burst windows, applied to every authenticated MCP request. */
  localBurst: LocalWindow;
  usage: UsageMeter;
  /** Domain events (approval.*, tool.called): the audit log and the webhook outbox subscribe here. */
  events: DomainEvents;
  /** Held calls and their decisions (src/approvals). */
  approvals: ApprovalService;
}

export interface RequestContext<Body = unknown> {
  request: Request;
  url: URL;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: Body;
  /** Null only for public operations. */
  principal: Principal | null;
  deps: AppDeps;
}

export type Handler = (ctx: RequestContext<any>) => Promise<Response> | Response;
export type HandlerTable = Record<OperationId, Handler>;
