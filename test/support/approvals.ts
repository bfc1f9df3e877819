/**
 * A setup for the approvals suites: two gateway instances sharing one fresh PostgreSQL store, an org, a write-enabled
 * PostgreSQL connector whose `ledger` tool is flagged, and the org's identity provider for user tokens. `ledger` has
 * no primary key, so every execution of a held INSERT leaves its own row: the suites count executions there (and in
 * the org's usage counter).
 */
import postgres from 'postgres';
import { decodeKey } from '../../src/config.ts';
import type { Principal } from '../../src/principal.ts';
import { deriveApprovalDigestKey } from '../../src/approvals/digest.ts';
import type { DomainEvent } from '../../src/events/index.ts';
import { periodStart } from '../../src/limits/plans.ts';
import * as sdk from '../../sdk/index.ts';
import { freshDatabase, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './gateway.ts';
import { idpConfig, idpGatewayEnv, idpToken, makeKey, pgHostPort, saveIdpConfig, startFakeIdp, type FakeIdp, type TestKey } from './idp.ts';
import { callTool, createConnector, restTools } from './mcp.ts';
import { sdkFor } from './sdk.ts';
import { createTargets, type Targets } from './targets.ts';

export const APPROVER = 'approver@example.com';
export const FLAGGED = 'query_postgresql_ledger';
/** The secret key startTestGateway gives PostgreSQL-backed gateways: the digest key derives from it. */
export const DIGEST_KEY = deriveApprovalDigestKey(decodeKey('a'.repeat(64))!);

export interface ApprovalsWorld {
  g1: TestGateway;
  g2: TestGateway;
  /** The gateways' own store, for what only the store can show (audit rows, usage, tampering). */
  store: postgres.Sql;
  targets: Targets;
  org: Onboarded;
  /** org:manage (and mcp:call) token of the onboarding client: an org-level approver. */
  manage: string;
  connectorId: string;
  flaggedToolId: string;
  apiKeyId: string;
  idp: FakeIdp;
  key: TestKey;
  audience: string;
  events: DomainEvent[];
  /** When set, the next domain event emission throws (to prove a decision rolls back with its subscribers). */
  failEvents: { on: boolean };
  close(): Promise<void>;
}

export async function approvalsWorld(prefix: string): Promise<ApprovalsWorld> {
  const key = await makeKey(`${prefix}-key`);
  const idp = startFakeIdp([key]);
  const env = idpGatewayEnv(idp, [pgHostPort()]);
  const db = await freshDatabase(prefix);
  const g1 = await startTestGateway('postgres', env, db.url);
  const g2 = await startTestGateway('postgres', env, db.url);
  const targets = await createTargets(prefix, 'pg');
  // A CHECK the tests can violate on purpose: an approved call whose statement fails on the target database.
  await targets.pg('CREATE TABLE ledger (id integer CHECK (id > 0), body text)');
  const org = await onboard(g1);
  const manage = await tokenFor(g1, org.clientId, org.clientSecret);
  const connector = await createConnector(g1, manage, { name: 'ledger', type: 'postgresql', config: targets.pgConfig, allow_write: true });
  if (connector.status !== 'active') throw new Error(`connector not active: ${JSON.stringify(connector)}`);
  const tool = (await restTools(g1, manage, org.orgId)).find((t) => t.name === FLAGGED)!;
  const client = sdkFor(g1, manage).client;
  const flagged = await sdk.updateToolMetadata({
    client,
    path: { orgId: org.orgId, toolId: tool.id },
    body: { requires_approval: true, approval_ttl_seconds: 600, approval_emails: [APPROVER, 'second@example.com'] },
  });
  if (flagged.response.status !== 200) throw new Error(`flagging failed: ${JSON.stringify(flagged.error)}`);
  const audience = `${prefix}-aud`;
  await saveIdpConfig(g1, manage, idpConfig(idp, audience));
  const keys = (await sdk.listApiKeys({ client, throwOnError: true })).data;
  const events: DomainEvent[] = [];
  const failEvents = { on: false };
  for (const g of [g1, g2]) {
    g.deps.events.subscribe(async (_tx, emitted) => {
      if (failEvents.on) throw new Error('subscriber failure (test)');
      events.push(...emitted);
    });
  }
  const url = new URL(db.url);
  const store = postgres(url.toString(), { max: 2, onnotice: () => {} });
  return {
    g1,
    g2,
    store,
    targets,
    org,
    manage,
    connectorId: connector.id,
    flaggedToolId: tool.id,
    apiKeyId: keys.api_keys.find((k) => k.name === 'default')!.id,
    idp,
    key,
    audience,
    events,
    failEvents,
    close: async () => {
      await store.end();
      await g2.close();
      await g1.close();
      await db.drop();
      await targets.drop();
      idp.stop();
    },
  };
}

let nextEntryId = 1000;
/** A fresh ledger id: each held INSERT writes its own row, so a test can count what ran. */
export const entryId = () => nextEntryId++;

/** Calls the flagged tool with the org's API key (an agent); returns the JSON-RPC result. */
export async function holdInsert(w: ApprovalsWorld, id: number, credential: { apiKey: string } | { token: string } = { apiKey: w.org.apiKey }) {
  const answer = await callTool(w.g1, w.org.slug, credential, FLAGGED, { sql: `INSERT INTO ledger VALUES (${id}, 'held ${id}')` });
  if (answer.status !== 200 || !answer.body?.result) throw new Error(`hold failed: ${answer.text}`);
  return answer.body.result as { content: { type: string; text: string }[]; structuredContent: { status: string; approvalId: string }; isError: boolean };
}

/** How many times the held INSERT of `id` ran on the target database. */
export async function ledgerRows(w: ApprovalsWorld, id: number): Promise<number> {
  return (await w.targets.pg(`SELECT count(*)::int AS n FROM ledger WHERE id = ${id}`))[0]!.n as number;
}

/** Executed tool calls of the org this month, as both instances' usage meters have counted them. */
export async function usedCalls(w: ApprovalsWorld): Promise<number> {
  await Promise.all([w.g1.deps.usage.flush(), w.g2.deps.usage.flush()]);
  const rows = await w.store`SELECT tool_calls FROM usage_counters WHERE org_id = ${w.org.orgId} AND period_start = ${periodStart(new Date())}`;
  return rows.length ? Number(rows[0]!.tool_calls) : 0;
}

/** The SDK's answer to a decision: assert the status on `response`, a success body on `data`, a refusal on `error`. */
export interface Decision {
  data?: any;
  error?: sdk.ToolgateError;
  response: Response;
}

export async function decide(
  w: ApprovalsWorld,
  g: TestGateway,
  approvalId: string,
  decision: 'approve' | 'reject',
  token: string = w.manage,
): Promise<Decision> {
  const operation = decision === 'approve' ? sdk.approveApproval : sdk.rejectApproval;
  return (await operation({ client: sdkFor(g, token).client, path: { approvalId } })) as Decision;
}

export function checkStatus(w: ApprovalsWorld, approvalId: string, credential: { apiKey: string } | { token: string } = { apiKey: w.org.apiKey }, g = w.g1) {
  return callTool(g, w.org.slug, credential, 'check_approval_status', { approvalId }).then((a) => a.body.result);
}

/** A user token of the org's identity provider. */
export function userToken(w: ApprovalsWorld, claims: Record<string, unknown>) {
  return idpToken(w.key, w.idp.issuer, w.audience, claims);
}

/** The principal the REST interface builds for the org's onboarding client (org level). */
export function managePrincipal(w: ApprovalsWorld): Principal {
  return { orgId: w.org.orgId, kind: 'oauth_client', actorId: w.org.clientId, email: null, roles: [], orgLevel: true, connectorIds: null };
}
