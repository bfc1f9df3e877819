/** The handler table: exactly one handler per operation of openapi.yaml (checked when the app is built). */
import type { HandlerTable } from './context.ts';
import { approveApproval, listApprovals, rejectApproval } from './approvals.ts';
import { archiveConnector, createConnector, getConnector, listConnectors, revalidateConnector, testConnector, updateConnector } from './connectors.ts';
import { deleteIdpConfig, getIdpConfig, setIdpConfig } from './idp.ts';
import { mcpEndpoint } from './mcp.ts';
import {
  createSavedTool,
  deleteSavedTool,
  getSavedTool,
  listSavedTools,
  listSavedToolVersions,
  listTools,
  updateSavedTool,
  updateToolMetadata,
} from './tools.ts';
import { getDocs, getDocsAsset, getHealth, getJwks, getMetrics, getOpenApi, getReady } from './meta.ts';
import { issueToken } from './oauth.ts';
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
import { createApiKey, createOAuthClient, getOrg, getOrgDirectory, listApiKeys, listOAuthClients, revokeApiKey, revokeOAuthClient } from './org.ts';
import { getProvisioningStatus, provisionOrg } from './provisioning.ts';
import { createWebhook, deleteWebhook, listWebhookDeliveries, listWebhooks, resendWebhookEvent, updateWebhook } from './webhooks.ts';
import { exportAuditEvents, getInsights, listAuditEvents } from './audit.ts';
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
  testConnector,
  getOrgDirectory,
  getInsights,
  listTools,
  updateToolMetadata,
  listSavedTools,
  createSavedTool,
  getSavedTool,
  updateSavedTool,
  deleteSavedTool,
  listSavedToolVersions,
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
