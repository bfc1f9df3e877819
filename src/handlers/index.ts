/** The handler table: exactly one handler per operation of openapi.yaml (checked when the app is built). */
import type { HandlerTable } from './context.ts';
import { approveApproval, listApprovals, rejectApproval } from './approvals.ts';
import { archiveConnector, createConnector, getConnector, listConnectors, revalidateConnector, updateConnector } from './connectors.ts';
import { deleteIdpConfig, getIdpConfig, setIdpConfig } from './idp.ts';
import { mcpEndpoint } from './mcp.ts';
import { listTools, updateToolMetadata } from './tools.ts';
import { getDocs, getDocsAsset, getHealth, getJwks, getMetrics, getOpenApi, getReady } from './meta.ts';
import { issueToken } from './oauth.ts';
import {
  createMcpClient,
  getAuthorizationServerMetadata,
  getOpenIdConfiguration,
  getOpenIdConfigurationAppended,
  getProtectedResourceMetadata,
  issueMcpToken,
  listMcpClients,
  listMcpGrants,
  registerMcpClient,
  revokeMcpClient,
  revokeMcpGrant,
  revokeMcpToken,
  setMcpSignInSettings,
} from './oauth-server.ts';
import { authorizeMcpClient, consentMcpClient, finishMcpSignIn } from './oauth-signin.ts';
import {
  createOrg,
  exportOperatorAudit,
  getOperatorOrg,
  listOperatorApiKeys,
  listOperatorOrgs,
  revalidateOperatorConnector,
  revokeOperatorApiKey,
  updateOperatorOrg,
} from './operator.ts';
import { createApiKey, createOAuthClient, getOrg, listApiKeys, listOAuthClients, revokeApiKey, revokeOAuthClient } from './org.ts';
import { getProvisioningStatus, provisionOrg } from './provisioning.ts';
import { createWebhook, deleteWebhook, listWebhookDeliveries, listWebhooks, resendWebhookEvent, updateWebhook } from './webhooks.ts';
import { exportAuditEvents, listAuditEvents } from './audit.ts';
import { getLimits, getSubscription, getUsage } from './billing.ts';

export const handlers: HandlerTable = {
  issueToken,
  getOrg,
  listApiKeys,
  createApiKey,
  revokeApiKey,
  listOAuthClients,
  createOAuthClient,
  revokeOAuthClient,
  getIdpConfig,
  setIdpConfig,
  deleteIdpConfig,
  getProvisioningStatus,
  provisionOrg,
  listConnectors,
  createConnector,
  getConnector,
  updateConnector,
  archiveConnector,
  revalidateConnector,
  listTools,
  updateToolMetadata,
  listApprovals,
  approveApproval,
  rejectApproval,
  mcpEndpoint,
  createOrg,
  listOperatorOrgs,
  getOperatorOrg,
  updateOperatorOrg,
  listOperatorApiKeys,
  revokeOperatorApiKey,
  revalidateOperatorConnector,
  exportOperatorAudit,
  getJwks,
  getProtectedResourceMetadata,
  getAuthorizationServerMetadata,
  getOpenIdConfiguration,
  getOpenIdConfigurationAppended,
  authorizeMcpClient,
  finishMcpSignIn,
  consentMcpClient,
  issueMcpToken,
  revokeMcpToken,
  registerMcpClient,
  listMcpGrants,
  revokeMcpGrant,
  listMcpClients,
  createMcpClient,
  revokeMcpClient,
  setMcpSignInSettings,
  getHealth,
  getReady,
  getMetrics,
  getOpenApi,
  getDocs,
  getDocsAsset,
  listWebhooks,
  createWebhook,
  updateWebhook,
  deleteWebhook,
  listWebhookDeliveries,
  resendWebhookEvent,
  listAuditEvents,
  exportAuditEvents,
  getSubscription,
  getUsage,
  getLimits,
};
