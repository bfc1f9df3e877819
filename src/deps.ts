/**
 * The dependency container: everything the app is built from, assembled once by gateway.ts. Only the entry and the
 * HTTP layers see it whole; handlers pass each domain service the container itself, but a service's signature names
 * just the parts it uses (its own narrow interface), so a service can be built and tested from those parts alone.
 */
import type { Authenticator } from './auth/authenticate.ts';
import type { TokenSigner } from './auth/signing.ts';
import type { Config } from './config.ts';
import type { Store } from './store/db.ts';
import type { SecretBox } from './util/crypto.ts';
import type { Logger } from './util/log.ts';
import type { CatalogCache } from './tools/catalog.ts';
import type { JobTracker } from './util/jobs.ts';
import type { OutboundPolicy } from './net/outbound.ts';
import type { IdpVerifier } from './auth/idp/verifier.ts';
import type { BurstLimiter, LocalWindow } from './limits/burst.ts';
import type { AuthFailureLimiter } from './limits/auth-failures.ts';
import type { UsageMeter } from './limits/usage.ts';
import type { DomainEvents } from './events/index.ts';
import type { McpServer } from './mcp/server.ts';
import type { WebhookWorker } from './webhooks/worker.ts';
import type { ApprovalService } from './approvals/service.ts';
import type { AuditRecorder } from './audit/recorder.ts';
import type { McpAuthCache } from './mcp/auth-cache.ts';
import type { Mailer } from './mail/mailer.ts';

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
  /** Shared (Redis) one-second windows, exact across instances: tools/call per org, REST calls per credential. */
  limiter: BurstLimiter;
  /** Failed sign-ins per client and source address (/oauth/token, console sign-in, operator token), shared in Redis. */
  authFailures: AuthFailureLimiter;
  /** This instance's burst windows, applied to every authenticated MCP request. */
  localBurst: LocalWindow;
  usage: UsageMeter;
  /** Domain events (approval.*): the audit log and the webhook outbox subscribe here (tool.called: webhooks/relay.ts). */
  events: DomainEvents;
  /** Held calls and their decisions (src/approvals); the tool runtime holds and polls through it. */
  approvals: ApprovalService;
  /** The audit log's group-commit writer for tool calls and refusals (audit/recorder.ts). */
  audit: AuditRecorder;
  /**
   * This instance's cache of the MCP endpoint's credential lookup, and the signal of changes to it: every writer of
   * orgs or API keys calls `authCache.changed()` after its commit (the router after each management write).
   */
  authCache: McpAuthCache;
  /** The MCP methods (JSON-RPC method table over the tool runtime) behind the MCP transport. */
  mcp: McpServer;
  /** This instance's webhook delivery worker; null when TOOLGATE_WEBHOOK_WORKER=0. */
  webhookWorker: WebhookWorker | null;
  /** Outgoing mail (TOOLGATE_SMTP_URL); null: none is sent, links are only shown to the admin (decision 0385). */
  mailer: Mailer | null;
  /** Set when a shutdown begins: /readyz answers 503 so load balancers stop sending requests (src/main.ts). */
  lifecycle: { shuttingDown: boolean };
}
