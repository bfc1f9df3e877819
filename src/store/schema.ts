/**
 * Table definitions of the gateway's own state, for the query layer. The SQL of record is migrations.ts (it also holds
 * the CHECK constraints); every table, column, type, nullability, default, key, foreign key and index here must match
 * what the migrations create, which test/store-schema.test.ts checks on a fresh PGlite and PostgreSQL database.
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const orgs = pgTable('orgs', {
  id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  plan: text('plan').notNull(),
  subscriptionStatus: text('subscription_status').notNull(),
  trialExpiresAt: ts('trial_expires_at'),
  provisionStatus: text('provision_status').notNull(),
  provisionedAt: ts('provisioned_at'),
  /** Bumped on every change that alters the org's tool catalog or credentials' view of it. */
  catalogVersion: bigint('catalog_version', { mode: 'number' }).notNull().default(0),
  /** Custom burst limit (enterprise, standalone); null uses the plan's. */
  burstLimitPerSecond: integer('burst_limit_per_second'),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** Set while an operator has suspended the org: every credential of it is refused. */
  suspendedAt: ts('suspended_at'),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    connectorIds: uuid('connector_ids').array(),
    createdAt: ts('created_at').notNull().defaultNow(),
    revokedAt: ts('revoked_at'),
    /** Attributes row filters bind as `:caller.<attr>` (migration 15). */
    attributes: jsonb('attributes').$type<Record<string, string>>().notNull().default({}),
  },
  (t) => [index('api_keys_org').on(t.orgId)],
);

export const oauthClients = pgTable(
  'oauth_clients',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    clientId: text('client_id').notNull().unique(),
    secretHash: text('secret_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    revokedAt: ts('revoked_at'),
    /** Attributes row filters bind as `:caller.<attr>` (migration 15). */
    attributes: jsonb('attributes').$type<Record<string, string>>().notNull().default({}),
  },
  (t) => [index('oauth_clients_org').on(t.orgId)],
);

export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  privateKeySealed: text('private_key_sealed').notNull(),
  publicJwk: jsonb('public_jwk').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull().defaultNow(),
  retiredAt: ts('retired_at'),
});

export const auditEvents = pgTable(
  'audit_events',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    action: text('action').notNull(),
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    targetType: text('target_type'),
    targetId: text('target_id'),
    outcome: text('outcome').notNull().default('success'),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: ts('created_at').notNull().defaultNow(),
    /** Position in the org's hash chain (audit/chain.ts); null until the row is sealed into it (audit/repository.ts sealPending). */
    seq: bigint('seq', { mode: 'number' }),
    prevHash: text('prev_hash'),
    hash: text('hash'),
    /** HMAC-SHA256 (hex) of the row's content with the gateway's audit key (audit/mac.ts); null on rows from before it. */
    mac: text('mac'),
    /** Set when a sealer refused the row (no valid MAC: not written by the gateway); it stays outside the chain. */
    refusedAt: ts('refused_at'),
  },
  (t) => [
    index('audit_events_org_time').on(t.orgId, t.createdAt.desc()),
    uniqueIndex('audit_events_org_seq').on(t.orgId, t.seq),
    index('audit_events_unsealed').on(t.createdAt).where(sql`(seq IS NULL) AND (refused_at IS NULL)`),
  ],
);

/** Head and base of each org's audit hash chain; the head row is the lock every audit write of the org takes. */
export const auditChains = pgTable('audit_chains', {
  orgId: uuid('org_id')
    .primaryKey()
    .references(() => orgs.id, { onDelete: 'cascade' }),
  headSeq: bigint('head_seq', { mode: 'number' }).notNull(),
  headHash: text('head_hash').notNull(),
  /** Rows up to base_seq were removed by retention; base_hash is the hash of the last of them. */
  baseSeq: bigint('base_seq', { mode: 'number' }).notNull(),
  baseHash: text('base_hash').notNull(),
  /** Rows up to this position were chained before rows carried a MAC (migration 10); every later row must carry one. */
  macFromSeq: bigint('mac_from_seq', { mode: 'number' }).notNull().default(0),
});

export const connectors = pgTable(
  'connectors',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    type: text('type').notNull(),
    status: text('status').notNull(),
    statusReason: text('status_reason'),
    /** Tools the source lists that the last validation did not serve, with why ({name, reason}[]). */
    skippedTools: jsonb('skipped_tools').$type<{ name: string; reason: string }[]>().notNull().default([]),
    config: jsonb('config').$type<Record<string, unknown>>().notNull(),
    credentialSealed: text('credential_sealed'),
    allowWrite: boolean('allow_write').notNull().default(false),
    allowDdl: boolean('allow_ddl').notNull().default(false),
    validationGeneration: integer('validation_generation').notNull().default(0),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    archivedAt: ts('archived_at'),
  },
  (t) => [index('connectors_org').on(t.orgId).where(sql`archived_at IS NULL`)],
);

export const tools = pgTable(
  'tools',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    connectorId: uuid('connector_id')
      .notNull()
      .references(() => connectors.id, { onDelete: 'cascade' }),
    baseName: text('base_name').notNull(),
    spec: jsonb('spec').$type<Record<string, unknown>>().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    requiresApproval: boolean('requires_approval').notNull().default(false),
    approvalTtlSeconds: integer('approval_ttl_seconds').notNull().default(3600),
    approvalEmails: text('approval_emails').array().notNull().default(sql`'{}'::text[]`),
    toolNameOverride: text('tool_name_override'),
    toolDescriptionOverride: text('tool_description_override'),
    readOnly: boolean('read_only').notNull().default(false),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    /** Hidden and masked columns and the row filter (connectors/shared/policy.ts ToolPolicy); null: none (migration 15). */
    policy: jsonb('policy').$type<Record<string, unknown>>(),
  },
  (t) => [
    unique().on(t.connectorId, t.baseName),
    index('tools_org').on(t.orgId),
    uniqueIndex('tools_override_unique').on(t.orgId, t.toolNameOverride).where(sql`tool_name_override IS NOT NULL`),
  ],
);

export const idpConfigs = pgTable(
  'idp_configs',
  {
    orgId: uuid('org_id')
      .primaryKey()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    issuer: text('issuer').notNull(),
    jwksUri: text('jwks_uri').notNull(),
    audience: text('audience').notNull(),
    roleClaim: text('role_claim').notNull().default('role'),
    emailClaim: text('email_claim').notNull().default('email'),
    defaultRole: text('default_role'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    /** The console's OIDC client at this IdP (authorization code + PKCE); null: no IdP sign-in to the console. */
    consoleClientId: text('console_client_id'),
    /** Its client secret, sealed; null for a public client (PKCE only). */
    consoleClientSecretSealed: text('console_client_secret_sealed'),
  },
  (t) => [uniqueIndex('idp_configs_issuer_audience').on(t.issuer, t.audience)],
);

/** Tool calls per org and calendar month (UTC); written with raw SQL by limits/quota.ts and limits/usage.ts. */
export const usageCounters = pgTable(
  'usage_counters',
  {
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    toolCalls: bigint('tool_calls', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.periodStart] })],
);

export const approvals = pgTable(
  'approvals',
  {
    id: uuid('id').primaryKey(),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    toolId: uuid('tool_id').notNull(),
    toolName: text('tool_name').notNull(),
    connectorId: uuid('connector_id').notNull(),
    /** The held arguments exactly as they will run (validated, defaults filled in), as JSON text: byte-for-byte. */
    argumentsJson: text('arguments_json').notNull(),
    /** HMAC over the approval's identity, tool and arguments (approvals/digest.ts), verified before execution. */
    argumentsDigest: text('arguments_digest').notNull(),
    requesterKind: text('requester_kind').notNull(),
    requesterId: text('requester_id').notNull(),
    requestedBy: text('requested_by').notNull(),
    /** The requesting credential's connector scope at request time (null: every connector). */
    requesterConnectorIds: uuid('requester_connector_ids').array(),
    approverEmails: text('approver_emails').array().notNull(),
    status: text('status').notNull(),
    statusReason: text('status_reason'),
    result: jsonb('result').$type<Record<string, unknown>>(),
    decidedBy: text('decided_by'),
    decidedAt: ts('decided_at'),
    executingAt: ts('executing_at'),
    completedAt: ts('completed_at'),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('approvals_org_created').on(t.orgId, t.createdAt.desc()),
    index('approvals_pending_expiry').on(t.expiresAt).where(sql`status = 'pending'::text`),
    index('approvals_executing').on(t.executingAt).where(sql`status = 'executing'::text`),
  ],
);

/** Outbound webhook endpoints (issue 11); the secret is sealed (AAD `webhook_secret:<id>`). */
export const webhooks = pgTable(
  'webhooks',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    events: text('events').array().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    secretSealed: text('secret_sealed').notNull(),
    /** Why the gateway disabled the endpoint itself (410 Gone, retries exhausted); null when an admin did or it is on. */
    disabledReason: text('disabled_reason'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('webhooks_org').on(t.orgId)],
);

/**
 * Per endpoint, the org's audit chain position up to which sealed tool-call rows were relayed into the outbox as
 * tool.called events (webhooks/relay.ts); set to the chain head when the endpoint starts taking tool.called.
 */
export const webhookRelayCursors = pgTable('webhook_relay_cursors', {
  webhookId: uuid('webhook_id')
    .primaryKey()
    .references(() => webhooks.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id')
    .notNull()
    .references(() => orgs.id, { onDelete: 'cascade' }),
  afterSeq: bigint('after_seq', { mode: 'number' }).notNull(),
  /** Calls recorded before this time are not relayed to the endpoint (rows committed, not yet sealed, at its start). */
  since: ts('since').notNull().defaultNow(),
});

/** The outbox: one row per event, holding the exact body that is signed and sent on every attempt. */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: text('id').primaryKey(),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    body: text('body').notNull(),
    createdAt: ts('created_at').notNull(),
  },
  (t) => [index('webhook_events_org').on(t.orgId, t.createdAt)],
);

/** The delivery queue: one row per event and endpoint, claimed by workers with FOR UPDATE SKIP LOCKED and a lease. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    eventId: text('event_id')
      .notNull()
      .references(() => webhookEvents.id, { onDelete: 'cascade' }),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    leaseToken: uuid('lease_token'),
    leasedUntil: ts('leased_until'),
    createdAt: ts('created_at').notNull().defaultNow(),
    completedAt: ts('completed_at'),
  },
  (t) => [
    unique().on(t.eventId, t.webhookId),
    index('webhook_deliveries_due').on(t.nextAttemptAt).where(sql`status = 'pending'::text`),
    index('webhook_deliveries_webhook').on(t.webhookId, t.createdAt),
  ],
);

/** Every delivery attempt (status code, latency, error), for GET /api/org/webhooks/{id}/deliveries. */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: uuid('id').primaryKey().default(sql`gen_random_uuid()`),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    error: text('error'),
    attemptedAt: ts('attempted_at').notNull().defaultNow(),
  },
  (t) => [index('webhook_attempts_webhook').on(t.webhookId, t.attemptedAt)],
);

/** Signed-in console sessions (src/console): the cookie carries a random id, the row its hash and the sealed bearer. */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    idHash: text('id_hash').primaryKey(),
    orgId: uuid('org_id')
      .notNull()
      .references(() => orgs.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    actor: text('actor').notNull(),
    bearerSealed: text('bearer_sealed').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('console_sessions_expires').on(t.expiresAt)],
);
