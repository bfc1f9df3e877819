/**
 * The one place where store rows become wire objects of openapi.yaml: every REST response body built from a row goes
 * through a function here, typed with the contract's generated types (a drift between the two fails the typecheck).
 */
import type { ApprovalRow } from '../approvals/repository.ts';
import type { DecisionResult } from '../approvals/service.ts';
import type { ApiKeyRow, OAuthClientRow } from '../auth/credentials.ts';
import type { IdpConfigRow } from '../auth/idp/repository.ts';
import type { ConnectorRow } from '../connectors/repository.ts';
import { burstLimitFor, monthlyQuotaFor } from '../limits/plans.ts';
import type { OrgRow } from '../orgs/repository.ts';
import type { ToolSettingsRow } from '../tools/settings.ts';
import { withConnectorLine } from '../tools/catalog.ts';
import type { ToolSpec } from '../connectors/types.ts';
import type { AttemptRow, WebhookRow } from '../webhooks/repository.ts';
import type * as wire from '../../generated/client/types.gen.ts';

export function operatorOrgView(org: OrgRow, customBurst: number): wire.OperatorOrg {
  return { ...orgView(org, customBurst), suspended_at: org.suspendedAt?.toISOString() ?? null };
}

export function orgView(org: OrgRow, customBurst: number): wire.Org {
  return {
    id: org.id,
    slug: org.slug,
    name: org.name,
    plan: org.plan as wire.Plan,
    subscription_status: org.subscriptionStatus as wire.Org['subscription_status'],
    trial_expires_at: org.trialExpiresAt?.toISOString() ?? null,
    provision_status: org.provisionStatus as wire.Org['provision_status'],
    burst_limit_per_second: burstLimitFor(org.plan, org.burstLimitPerSecond, customBurst),
    monthly_tool_calls: monthlyQuotaFor(org.plan),
    audit_statements: org.auditStatements,
    created_at: org.createdAt.toISOString(),
  };
}

/** The absolute URL of an org's MCP endpoint. */
export function mcpEndpointUrl(publicUrl: string, slug: string): string {
  return `${publicUrl}/mcp/${slug}`;
}

export function provisioningView(org: OrgRow, toolCount: number, publicUrl: string): wire.ProvisioningStatus {
  return {
    status: org.provisionStatus as wire.ProvisioningStatus['status'],
    endpoint: mcpEndpointUrl(publicUrl, org.slug),
    toolCount,
  };
}

export function apiKeyView(row: ApiKeyRow): wire.ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    connector_ids: row.connectorIds ?? null,
    attributes: row.attributes,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
  };
}

export function oauthClientView(row: OAuthClientRow): wire.OAuthClient {
  return {
    id: row.id,
    name: row.name,
    client_id: row.clientId,
    scopes: row.scopes,
    attributes: row.attributes,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
  };
}

export function createdApiKeyView(created: { row: ApiKeyRow; key: string }): wire.CreatedApiKey {
  return { ...apiKeyView(created.row), key: created.key };
}

export function createdOAuthClientView(created: { row: OAuthClientRow; clientSecret: string }): wire.CreatedOAuthClient {
  return { ...oauthClientView(created.row), client_secret: created.clientSecret };
}

export function onboardingView(
  created: {
    org: OrgRow;
    key: { row: ApiKeyRow; key: string };
    client: { row: OAuthClientRow; clientSecret: string };
    admin?: wire.MemberInvitation | null;
  },
  config: { publicUrl: string; customBurstPerSecond: number },
): wire.OrgOnboarding {
  return {
    org: orgView(created.org, config.customBurstPerSecond),
    endpoint: mcpEndpointUrl(config.publicUrl, created.org.slug),
    api_key: createdApiKeyView(created.key),
    oauth_client: createdOAuthClientView(created.client),
    ...(created.admin ? { admin_invitation: created.admin } : {}),
  };
}

export function connectorView(row: ConnectorRow): wire.Connector {
  return {
    id: row.id,
    name: row.name,
    type: row.type as wire.ConnectorType,
    status: row.status as wire.ConnectorStatus,
    status_reason: row.statusReason,
    health: row.health as wire.ConnectorHealth,
    health_reason: row.healthReason,
    health_changed_at: row.healthChangedAt?.toISOString() ?? null,
    skipped_tools: row.skippedTools,
    config: row.config as unknown as wire.ConnectorConfig,
    has_credential: row.credentialSealed !== null,
    allow_write: row.allowWrite,
    allow_ddl: row.allowDdl,
    free_sql: row.freeSql,
    tool_layout: row.toolLayout as wire.ToolLayout,
    description: row.description,
    include_tables: row.includeTables,
    exclude_tables: row.excludeTables,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function toolSettingsView({ tool, connector }: ToolSettingsRow): wire.Tool {
  const spec = tool.spec as unknown as ToolSpec;
  return {
    id: tool.id,
    kind: tool.kind as wire.Tool['kind'],
    tool_name: tool.baseName,
    name: tool.toolNameOverride ?? tool.baseName,
    description: withConnectorLine(tool.toolDescriptionOverride ?? spec.description, connector),
    enabled: tool.enabled,
    requires_approval: tool.requiresApproval,
    approval_ttl_seconds: tool.approvalTtlSeconds,
    approval_emails: tool.approvalEmails,
    tool_name_override: tool.toolNameOverride,
    tool_description_override: tool.toolDescriptionOverride,
    read_only: tool.readOnly,
    connector_id: connector.id,
    connector_name: connector.name,
    connector_type: connector.type as wire.ConnectorType,
    policy: (tool.policy as wire.ToolPolicy | null) ?? null,
    saved: tool.savedVersion !== null,
  };
}

export function idpConfigView(row: IdpConfigRow): wire.IdpConfig {
  return {
    issuer: row.issuer,
    jwks_uri: row.jwksUri,
    audience: row.audience,
    role_claim: row.roleClaim,
    email_claim: row.emailClaim,
    default_role: row.defaultRole as wire.IdpConfig['default_role'],
    console_client_id: row.consoleClientId,
    console_client_secret_set: row.consoleClientSecretSealed !== null,
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The Approval object of GET /api/org/approvals (contributor and up: the roles allowed to see held arguments). */
export function approvalView(row: ApprovalRow): wire.Approval {
  return {
    id: row.id,
    tool_name: row.toolName,
    status: row.status as wire.ApprovalStatus,
    arguments: JSON.parse(row.argumentsJson) as Record<string, unknown>,
    requested_by: row.requestedBy,
    decided_by: row.decidedBy,
    decided_at: row.decidedAt?.toISOString() ?? null,
    approver_emails: row.approverEmails,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    reason: row.statusReason,
  };
}

/** The body of approve / reject: the decision's outcome, with the tool's result or the failure's reason. */
export function approvalDecisionView(decision: DecisionResult): wire.ApprovalDecision {
  return {
    ok: decision.ok,
    status: decision.status,
    ...(decision.result ? { result: decision.result as unknown as Record<string, unknown> } : {}),
    ...(decision.reason ? { reason: decision.reason } : {}),
  };
}

export function webhookView(row: WebhookRow): wire.Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events as wire.WebhookEventType[],
    enabled: row.enabled,
    disabled_reason: row.disabledReason as wire.Webhook['disabled_reason'],
    created_at: row.createdAt.toISOString(),
  };
}

export function webhookAttemptView(row: AttemptRow): wire.WebhookAttempt {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType as wire.WebhookEventType,
    attempt: row.attempt,
    status_code: row.statusCode,
    latency_ms: row.latencyMs,
    error: row.error,
    attempted_at: row.attemptedAt.toISOString(),
    delivery_status: row.deliveryStatus as wire.WebhookAttempt['delivery_status'],
    // Attempts recorded before migration 16 kept no exchange: the fields are left out rather than guessed.
    ...(row.exchange && {
      request_headers: row.exchange.requestHeaders,
      request_body: row.exchange.requestBody,
      response_headers: row.exchange.responseHeaders,
      response_body: row.exchange.responseBody,
      response_truncated: row.exchange.responseTruncated,
    }),
  };
}
