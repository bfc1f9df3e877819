/** The one configuration module: read once at start, validated at start, units in names. */
import { canonicalHostname, originKey, parseOrigin } from './net/hostname.ts';
import { parseOutboundPolicy } from './net/outbound.ts';
import { parseTrustedProxies, type TrustedProxies } from './net/source-address.ts';
import { readFileSync } from 'node:fs';

export interface Config {
  port: number;
  host: string;
  /** Absolute base URL the gateway is reached at; MCP endpoints and the token issuer derive from it. */
  publicUrl: string;
  /** Unset: embedded PGlite in dataDir. Set: a PostgreSQL server. */
  databaseUrl: string | null;
  dataDir: string;
  /** 32-byte key (base64 or hex) for AES-256-GCM of recoverable secrets; embedded mode generates one into dataDir. */
  secretKey: string | null;
  operatorToken: string | null;
  redisUrl: string | null;
  accessTokenTtlSeconds: number;
  maxBodyBytes: number;
  /** Origins allowed on the MCP endpoint besides the gateway's own, canonical (`scheme://host[:port]`). */
  allowedOrigins: string[];
  /** Host names (canonical, no port) the gateway answers to besides its public URL's; `*` answers to any. */
  allowedHosts: string[];
  /**
   * Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed when they are the direct peer; empty: the
   * peer is the source address of every request (net/source-address.ts).
   */
  trustedProxies: TrustedProxies;
  /** TOOLGATE_OUTBOUND_ALLOW_HOSTS: hosts, host:port or CIDRs the outbound policy lets orgs reach on private addresses (net/policy.ts). */
  outboundAllowHosts: string[];
  /** TOOLGATE_OUTBOUND_CA_FILE: PEM certificates trusted for outbound https besides the system roots (a private CA). */
  outboundCaPem: string | null;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  maxResultRows: number;
  /** TOOLGATE_TOOLS_LIST_PAGE_SIZE: tools per tools/list page (MCP pagination, decision 0305). */
  toolsListPageSize: number;
  maxResultBytes: number;
  /** Per connector: calls running at once (capped at the pool size), and how long a call may queue for a slot. */
  connectorMaxConcurrentCalls: number;
  /** Connection budget of connector pools (decision 0323): in total, per server, the wait for a token, the store's reserve. */
  connectorConnectionsMax: number;
  connectorConnectionsPerServerMax: number;
  connectorConnectionsWaitMs: number;
  storeReservedConnections: number;
  connectorQueueTimeoutMs: number;
  /** PostgreSQL tools: how long the server's verdict on what a statement resolves to is reused. */
  pgResolutionCacheTtlSeconds: number;
  idpClockToleranceSeconds: number;
  jwksCooldownMs: number;
  jwksTimeoutMs: number;
  /** Seed a demo org with a sample database on start (embedded default). */
  demo: boolean;
  /** Burst limit (calls per second) of custom plans (enterprise, standalone) whose org sets none. */
  customBurstPerSecond: number;
  logLevel: 'silent' | 'error' | 'info' | 'debug';
  /** Webhook delivery (issue 11): whether this instance runs a delivery worker, and its timings (docs/decisions/0082-webhook-worker-and-retries.md). */
  webhookWorker: boolean;
  webhookTimeoutMs: number;
  webhookMaxResponseBytes: number;
  /** First retry delay; each later one doubles (capped at 8 h), with +-20% jitter. */
  webhookRetryBaseMs: number;
  /** How long a claimed delivery stays with its worker; a crashed worker's deliveries are retried after it. */
  webhookLeaseMs: number;
  webhookPollMs: number;
  /** Requests in flight per endpoint across one instance's worker (a hanging receiver holds at most this many). */
  webhookEndpointConcurrency: number;
  /** Audit rows older than this are removed by the retention sweeper (a checkpoint keeps the chain verifiable); 0 keeps all. */
  auditRetentionDays: number;
  /** Tool-call rows waiting for their group commit, and refusals waiting to be written, at most (each queue). */
  auditQueueMax: number;
  /** OTLP/HTTP base URL for traces (OTEL_EXPORTER_OTLP_ENDPOINT); null: tracing off, at no cost. */
  otlpEndpoint: string | null;
  /** service.name of the exported spans (OTEL_SERVICE_NAME). */
  serviceName: string;
  /** Share of new traces recorded (OTEL_TRACES_SAMPLER_ARG, 0-1); a caller's sampled traceparent is always followed. */
  traceSampleRatio: number;
  /** SIGTERM: how long in-flight requests may take to finish before the process closes anyway. */
  shutdownDeadlineMs: number;
  /** A server store not answering at start (DATABASE_URL): how long to keep trying before giving up (store/reach.ts). */
  storeStartWaitMs: number;
  /**
   * How long a connection may stay silent (no byte either way) before the server closes it. Bun's default, 10 s,
   * dropped slow answers without a response; the maximum Bun takes is 255.
   */
  httpIdleTimeoutSeconds: number;
  /** How long a cached MCP credential lookup may be reused (within its auth epoch; mcp/auth-cache.ts); 0: no cache. */
  authCacheTtlMs: number;
  /** How often an active connector not called successfully meanwhile is probed (connectors/health.ts); 0: never. */
  connectorProbeIntervalMs: number;
  /**
   * Outgoing mail (src/mail/, decision 0385): TOOLGATE_SMTP_URL (smtp:// or smtps://, optional user:password; never
   * logged or printed: describe it with mail/smtp-url.ts), the From address, and the time any one SMTP step may take.
   * Null URL: no mail; links are only shown to the admin.
   */
  smtpUrl: string | null;
  smtpFrom: string | null;
  smtpTimeoutMs: number;
}

export class ConfigError extends Error {}

/** A PEM file of CA certificates, read once at start; unreadable or not PEM stops the start naming the variable. */
function caFileVar(env: Record<string, string | undefined>, name: string): string | null {
  const path = env[name];
  if (!path) return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new ConfigError(`${name}: the file ${path} cannot be read`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(`${name}: ${path} holds no PEM certificate`);
  return text;
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function urlVar(env: Env, name: string, protocols: string[]): string | null {
  const raw = env[name];
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must use one of ${protocols.join(', ')}`);
  }
  return raw;
}

/** TOOLGATE_ALLOWED_HOSTS: host names or IP literals without scheme or port (the Host check ignores ports), or `*`. */
function hostsVar(env: Env, name: string): string[] {
  return listVar(env, name).map((entry) => {
    if (entry === '*') return entry;
    const hostname = canonicalHostname(entry);
    // A port is refused rather than ignored, so nobody believes it restricts anything; '::1' needs its brackets.
    if (hostname === null || entry.replace(/^\[[^\]]*\]/, '').includes(':')) {
      throw new ConfigError(`${name}: "${entry}" is not a host name; list names or IP literals without scheme or port ([::1] for IPv6), or *`);
    }
    return hostname;
  });
}

/** TOOLGATE_ALLOWED_ORIGINS: browser origins (`scheme://host[:port]`, nothing after). */
function originsVar(env: Env, name: string): string[] {
  return listVar(env, name).map((entry) => {
    const parts = parseOrigin(entry);
    if (!parts) throw new ConfigError(`${name}: "${entry}" is not an origin; write scheme://host[:port] with nothing after it`);
    return originKey(parts);
  });
}

function listVar(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function loadConfig(env: Env = process.env): Config {
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const publicUrl = (urlVar(env, 'TOOLGATE_PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '');
  if (canonicalHostname(new URL(publicUrl).host) === null)
    throw new ConfigError('TOOLGATE_PUBLIC_URL has a host name the gateway cannot compare with Host headers');
  const databaseUrl = urlVar(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const secretKey = env.TOOLGATE_SECRET_KEY || null;
  if (secretKey !== null && decodeKey(secretKey) === null) {
    throw new ConfigError('TOOLGATE_SECRET_KEY must be 32 bytes as base64 (44 chars) or hex (64 chars)');
  }
  if (databaseUrl && !secretKey) {
    throw new ConfigError('TOOLGATE_SECRET_KEY is required when DATABASE_URL is set (instances sharing a database must share the key)');
  }
  const operatorToken = env.TOOLGATE_OPERATOR_TOKEN || null;
  if (operatorToken !== null && operatorToken.length < 24) {
    throw new ConfigError('TOOLGATE_OPERATOR_TOKEN must be at least 24 characters');
  }
  const outboundAllowHosts = listVar(env, 'TOOLGATE_OUTBOUND_ALLOW_HOSTS');
  try {
    parseOutboundPolicy({ allowHosts: outboundAllowHosts });
  } catch (err) {
    throw new ConfigError(`TOOLGATE_OUTBOUND_ALLOW_HOSTS: ${(err as Error).message}`);
  }
  let trustedProxies: TrustedProxies;
  try {
    trustedProxies = parseTrustedProxies(listVar(env, 'TOOLGATE_TRUSTED_PROXIES'));
  } catch (err) {
    throw new ConfigError(`TOOLGATE_TRUSTED_PROXIES: ${(err as Error).message}`);
  }
  const logLevel = (env.TOOLGATE_LOG_LEVEL || 'info') as Config['logLevel'];
  if (!['silent', 'error', 'info', 'debug'].includes(logLevel)) {
    throw new ConfigError('TOOLGATE_LOG_LEVEL must be one of silent, error, info, debug');
  }
  return {
    port,
    host,
    publicUrl,
    databaseUrl,
    dataDir: env.TOOLGATE_DATA_DIR || './data',
    secretKey,
    operatorToken,
    redisUrl: urlVar(env, 'REDIS_URL', ['redis:', 'rediss:']),
    accessTokenTtlSeconds: 3600,
    maxBodyBytes: intVar(env, 'TOOLGATE_MAX_BODY_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    allowedOrigins: originsVar(env, 'TOOLGATE_ALLOWED_ORIGINS'),
    allowedHosts: hostsVar(env, 'TOOLGATE_ALLOWED_HOSTS'),
    trustedProxies,
    outboundAllowHosts,
    outboundCaPem: caFileVar(env, 'TOOLGATE_OUTBOUND_CA_FILE'),
    statementTimeoutMs: intVar(env, 'TOOLGATE_STATEMENT_TIMEOUT_MS', 5000, 100, 600_000),
    lockTimeoutMs: intVar(env, 'TOOLGATE_LOCK_TIMEOUT_MS', 2000, 100, 600_000),
    maxResultRows: intVar(env, 'TOOLGATE_MAX_RESULT_ROWS', 1000, 1, 100_000),
    toolsListPageSize: intVar(env, 'TOOLGATE_TOOLS_LIST_PAGE_SIZE', 100, 1, 10_000),
    maxResultBytes: intVar(env, 'TOOLGATE_MAX_RESULT_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    ...connectorConfig(env),
    pgResolutionCacheTtlSeconds: intVar(env, 'TOOLGATE_PG_RESOLUTION_CACHE_TTL_SECONDS', 30, 0, 3600),
    idpClockToleranceSeconds: intVar(env, 'TOOLGATE_IDP_CLOCK_TOLERANCE_SECONDS', 30, 0, 300),
    jwksCooldownMs: intVar(env, 'TOOLGATE_JWKS_COOLDOWN_MS', 30_000, 0, 3_600_000),
    jwksTimeoutMs: intVar(env, 'TOOLGATE_JWKS_TIMEOUT_MS', 3000, 100, 60_000),
    demo: env.TOOLGATE_DEMO === undefined ? !databaseUrl : env.TOOLGATE_DEMO === '1' || env.TOOLGATE_DEMO === 'true',
    customBurstPerSecond: intVar(env, 'TOOLGATE_CUSTOM_BURST_PER_SECOND', 1000, 1, 100_000),
    logLevel,
    ...webhookConfig(env),
    auditRetentionDays: intVar(env, 'TOOLGATE_AUDIT_RETENTION_DAYS', 365, 0, 36_500),
    auditQueueMax: intVar(env, 'TOOLGATE_AUDIT_QUEUE_MAX', 10_000, 10, 1_000_000),
    otlpEndpoint: urlVar(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    serviceName: env.OTEL_SERVICE_NAME || 'toolgate',
    traceSampleRatio: ratioVar(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
    shutdownDeadlineMs: intVar(env, 'TOOLGATE_SHUTDOWN_DEADLINE_MS', 10_000, 0, 600_000),
    storeStartWaitMs: intVar(env, 'TOOLGATE_STORE_START_WAIT_MS', 60_000, 0, 3_600_000),
    httpIdleTimeoutSeconds: intVar(env, 'TOOLGATE_HTTP_IDLE_TIMEOUT_SECONDS', 120, 1, 255),
    authCacheTtlMs: intVar(env, 'TOOLGATE_AUTH_CACHE_TTL_MS', 5000, 0, 60_000),
    ...mailConfig(env),
  };
}

/** A bare address or `Name <address>`; no line breaks (a header value). */
const FROM_ADDRESS = /^(?:[^<>\r\n]{0,200}<[^\s@<>]{1,64}@[^\s@<>]{1,255}>|[^\s@<>]{1,64}@[^\s@<>]{1,255})$/;

/** TOOLGATE_SMTP_*: the messages name the variable and never repeat the URL (it may hold a password). */
function mailConfig(env: Env) {
  const smtpUrl = urlVar(env, 'TOOLGATE_SMTP_URL', ['smtp:', 'smtps:']);
  const smtpFrom = env.TOOLGATE_SMTP_FROM?.trim() || null;
  if (smtpUrl && !new URL(smtpUrl).hostname) throw new ConfigError('TOOLGATE_SMTP_URL names no host');
  if (smtpUrl && !smtpFrom) throw new ConfigError('TOOLGATE_SMTP_FROM is required when TOOLGATE_SMTP_URL is set (the sender of invitation and reset mails)');
  if (smtpFrom !== null && !FROM_ADDRESS.test(smtpFrom)) throw new ConfigError('TOOLGATE_SMTP_FROM must be an address (name@host) or "Name <name@host>"');
  return { smtpUrl, smtpFrom, smtpTimeoutMs: intVar(env, 'TOOLGATE_SMTP_TIMEOUT_MS', 10_000, 100, 120_000) };
}

/** The connectors' calls and pools: concurrency, queueing, the connection budget (decision 0323) and health probes. */
function connectorConfig(env: Env) {
  return {
    connectorMaxConcurrentCalls: intVar(env, 'TOOLGATE_CONNECTOR_MAX_CONCURRENT_CALLS', 10, 1, 1000),
    connectorQueueTimeoutMs: intVar(env, 'TOOLGATE_CONNECTOR_QUEUE_TIMEOUT_MS', 1000, 1, 60_000),
    connectorConnectionsMax: intVar(env, 'TOOLGATE_CONNECTOR_CONNECTIONS_MAX', 200, 1, 100_000),
    connectorConnectionsPerServerMax: intVar(env, 'TOOLGATE_CONNECTOR_CONNECTIONS_PER_SERVER_MAX', 100, 1, 100_000),
    connectorConnectionsWaitMs: intVar(env, 'TOOLGATE_CONNECTOR_CONNECTIONS_WAIT_MS', 5000, 1, 60_000),
    storeReservedConnections: intVar(env, 'TOOLGATE_STORE_RESERVED_CONNECTIONS', 20, 0, 10_000),
    connectorProbeIntervalMs: intVar(env, 'TOOLGATE_CONNECTOR_PROBE_INTERVAL_MS', 15_000, 0, 3_600_000),
  };
}

function webhookConfig(env: Env) {
  const webhookTimeoutMs = intVar(env, 'TOOLGATE_WEBHOOK_TIMEOUT_MS', 5000, 100, 60_000);
  const webhookLeaseMs = intVar(env, 'TOOLGATE_WEBHOOK_LEASE_MS', webhookTimeoutMs + 25_000, 200, 3_600_000);
  // A lease shorter than a request would let a second worker re-send while the first is still waiting for an answer.
  if (webhookLeaseMs <= webhookTimeoutMs) throw new ConfigError('TOOLGATE_WEBHOOK_LEASE_MS must be greater than TOOLGATE_WEBHOOK_TIMEOUT_MS');
  return {
    webhookWorker: env.TOOLGATE_WEBHOOK_WORKER !== '0' && env.TOOLGATE_WEBHOOK_WORKER !== 'false',
    webhookTimeoutMs,
    webhookMaxResponseBytes: intVar(env, 'TOOLGATE_WEBHOOK_MAX_RESPONSE_BYTES', 65_536, 1024, 1_048_576),
    webhookRetryBaseMs: intVar(env, 'TOOLGATE_WEBHOOK_RETRY_BASE_MS', 30_000, 10, 3_600_000),
    webhookLeaseMs,
    webhookPollMs: intVar(env, 'TOOLGATE_WEBHOOK_POLL_MS', 1000, 10, 60_000),
    webhookEndpointConcurrency: intVar(env, 'TOOLGATE_WEBHOOK_ENDPOINT_CONCURRENCY', 4, 1, 100),
  };
}

function ratioVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) throw new ConfigError(`${name} must be a number between 0 and 1, got "${raw}"`);
  return value;
}

/** Decodes a 32-byte key from base64 or hex; null when it is neither. */
export function decodeKey(text: string): Uint8Array | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Uint8Array.from(Buffer.from(text, 'hex'));
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === 32 ? Uint8Array.from(bytes) : null;
}
