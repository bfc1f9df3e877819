// The authorization matrix: EVERY operation of generated/operations.ts against every kind of caller, the expected
// outcome derived from the operation's declared policy (x-toolgate-auth). An operation without a known policy, or one
// the matrix did not reach, fails the suite. Also: method swaps (405), and org A's resources addressed by org B (404).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomUUID } from 'node:crypto';
import { operations, type OperationDef } from '../generated/operations.ts';
import * as sdk from '../sdk/index.ts';
import { verifies } from './requirements.ts';
import { BASE, api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import {
  createConnector,
  idpConfig,
  idpGatewayEnv,
  idpToken,
  makeKey,
  mcpRequest,
  pgFixture,
  pgHostPort,
  saveIdpConfig,
  startFakeIdp,
  type FakeIdp,
  type IdpConfigBody,
  type PgFixture,
  type TestKey,
} from './support/idp.ts';
import { sdkFor } from './support/sdk.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { serviceAvailable } from './support/services.ts';
import { createLocalFailureLimiter, type AuthFailureLimiter } from '../src/limits/auth-failures.ts';
import { addMember } from './support/members.ts';

/** Every policy the gateway knows. A new value must be added here, with its expected outcomes, or the suite fails. */
const ROLE_POLICIES = ['contributor', 'admin', 'finance'] as const;
const KNOWN_POLICIES = ['public', 'operator', 'mcp', 'console', ...ROLE_POLICIES] as const;
type RolePolicy = (typeof ROLE_POLICIES)[number];
type IdpRole = RolePolicy;

/** Which roles each role policy admits (the decided ordering: admin includes contributor and finance, which are separate). */
const ADMITTED: Record<RolePolicy, readonly IdpRole[]> = {
  contributor: ['contributor', 'admin'],
  admin: ['admin'],
  finance: ['finance', 'admin'],
};

type CallerKind =
  | 'no token'
  | 'IdP contributor'
  | 'IdP admin'
  | 'IdP finance'
  | 'org:manage token'
  | 'MCP-only token'
  | 'API key as Bearer'
  | "org B's IdP admin"
  | "org B's org:manage token";

interface Caller {
  kind: CallerKind;
  token: string | null;
  /** The org the credential belongs to. */
  home: 'A' | 'B';
  role: IdpRole | null;
  machine: 'manage' | 'mcp-only' | 'api-key' | null;
}

/** What a request must produce: one exact status, or "allowed" (anything but 401 and 403). */
type Expectation = { status: number } | { allowed: true };

// Two cases need connectors on the PostgreSQL server; without it they are skipped with this reason, never passed empty.
const pgAvailable = await serviceAvailable('postgres');
if (!pgAvailable) console.warn('[skip] authz matrix: the tool-settings and approval cases need PostgreSQL on 127.0.0.1:5432');

const AUD_A = 'matrix-org-a';
const AUD_B = 'matrix-org-b';

let g: TestGateway;
let idp: FakeIdp;
let key: TestKey;
let A: Onboarded;
let B: Onboarded;
let manageA: string;
let manageB: string;
let callers: Caller[];

const configs = (): Record<'A' | 'B', IdpConfigBody> => ({ A: idpConfig(idp, AUD_A), B: idpConfig(idp, AUD_B) });

beforeAll(async () => {
  key = await makeKey('matrix-key');
  idp = startFakeIdp([key]);
  g = await startTestGateway('pglite', idpGatewayEnv(idp, [pgHostPort(), '127.0.0.1:9']));
  [A, B] = [await onboard(g), await onboard(g)];
  [manageA, manageB] = await Promise.all([tokenFor(g, A.clientId, A.clientSecret), tokenFor(g, B.clientId, B.clientSecret)]);
  await saveIdpConfig(g, manageA, configs().A);
  // Someone can sign in to org A (its IdP has no console client): registration is open to its MCP clients (issue 40).
  await addMember(g, manageA, 'matrix@a.example', 'matrix password 0001');
  await saveIdpConfig(g, manageB, configs().B);
  const user = (aud: string, role: IdpRole) => idpToken(key, idp.issuer, aud, { role, email: `${role}@${aud}.example` });
  // The onboarding client has mcp:call and org:manage; an MCP-only token asks for mcp:call alone.
  const manageOnly = await tokenFor(g, A.clientId, A.clientSecret, 'org:manage');
  callers = [
    { kind: 'no token', token: null, home: 'A', role: null, machine: null },
    { kind: 'IdP contributor', token: await user(AUD_A, 'contributor'), home: 'A', role: 'contributor', machine: null },
    { kind: 'IdP admin', token: await user(AUD_A, 'admin'), home: 'A', role: 'admin', machine: null },
    { kind: 'IdP finance', token: await user(AUD_A, 'finance'), home: 'A', role: 'finance', machine: null },
    { kind: 'org:manage token', token: manageOnly, home: 'A', role: null, machine: 'manage' },
    { kind: 'MCP-only token', token: await tokenFor(g, A.clientId, A.clientSecret, 'mcp:call'), home: 'A', role: null, machine: 'mcp-only' },
    { kind: 'API key as Bearer', token: A.apiKey, home: 'A', role: null, machine: 'api-key' },
    { kind: "org B's IdP admin", token: await user(AUD_B, 'admin'), home: 'B', role: 'admin', machine: null },
    { kind: "org B's org:manage token", token: await tokenFor(g, B.clientId, B.clientSecret, 'org:manage'), home: 'B', role: null, machine: 'manage' },
  ];
}, 60_000);
afterAll(async () => {
  await g?.close();
  idp?.stop();
}, 60_000);

/** The console's operations that need a signed-in session (the others are how one signs in, or public pages). */
const SESSION_OPERATIONS: ReadonlySet<string> = new Set([
  'getConsoleSession',
  'listConsolePasskeys',
  'startConsolePasskeyRegistration',
  'registerConsolePasskey',
  'removeConsolePasskey',
]);

/** The outcome the declared policy demands for this caller. Throws for a policy nobody taught this test. */
function expected(op: OperationDef, caller: Caller): Expectation {
  const policy = op.auth as string;
  switch (policy) {
    case 'public':
      return { allowed: true };
    case 'operator':
      return { status: 401 };
    case 'console':
      // A bearer is no credential of the console's own operations: every caller is a browser without a session, so
      // "who is signed in" and the signed-in member's own passkeys answer 401 (decisions 0353, 0380).
      return SESSION_OPERATIONS.has(op.operationId) ? { status: 401 } : { allowed: true };
    case 'mcp':
      // Any valid credential of THIS org that may call tools; another org's credential is invalid here.
      if (caller.token === null || caller.machine === 'api-key' || caller.home !== 'A') return { status: 401 };
      // A client-credentials token without an mcp:call scope may not call tools.
      if (caller.machine === 'manage') return { status: 403 };
      return { status: 200 };
    case 'contributor':
    case 'admin':
    case 'finance': {
      if (caller.token === null || caller.machine === 'api-key') return { status: 401 };
      if (caller.machine === 'mcp-only') return { status: 403 };
      const admitted = caller.machine === 'manage' || (caller.role !== null && ADMITTED[policy].includes(caller.role));
      if (!admitted) return { status: 403 };
      // Another org's admin may use the route for its own org, but org A's id in the path is "not found".
      if (caller.home !== 'A' && op.pathParams.includes('orgId')) return { status: 404 };
      return { allowed: true };
    }
    default:
      throw new Error(`operation ${op.operationId} declares auth "${policy}", which this matrix does not know`);
  }
}

/** Path parameters: org A's own id and slug; random uuids for every other id. */
function fillPath(op: OperationDef): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    switch (name) {
      case 'orgId':
        return A.orgId;
      case 'orgSlug':
        return A.slug;
      case 'asset':
        return 'no-such-asset.js';
      case 'eventId':
        return `evt_${randomUUID()}`;
      default:
        return randomUUID();
    }
  });
}

/** Minimal valid-looking bodies. An operation not listed here gets `{}` (or an empty form): still a complete matrix row. */
function bodyFor(op: OperationDef, caller: Caller): { body: string; contentType: string } | null {
  if (!op.bodyType) return null;
  const jsonBody = (value: unknown) => ({ body: JSON.stringify(value), contentType: 'application/json' });
  switch (op.operationId) {
    case 'issueToken':
      // A well-formed request the endpoint refuses with 400 (a wrong client would be a legitimate 401).
      return { body: 'grant_type=password&username=u&password=p', contentType: 'application/x-www-form-urlencoded' };
    case 'createApiKey':
      return jsonBody({ name: 'matrix' });
    case 'createOAuthClient':
      return jsonBody({ name: 'matrix', scopes: ['mcp:call'] });
    case 'setIdpConfig':
      // The caller's own org's current configuration: an allowed PUT changes nothing.
      return jsonBody(configs()[caller.home]);
    case 'createConnector':
      // Nothing listens on port 9 of loopback: the connector is created and fails validation at once.
      return jsonBody({ name: 'matrix', type: 'postgresql', config: { host: '127.0.0.1', port: 9, database: 'matrix', user: 'matrix' } });
    case 'updateConnector':
      return jsonBody({ name: 'renamed' });
    case 'updateToolMetadata':
      return jsonBody({ enabled: true });
    case 'updateToolsBulk':
      return jsonBody({ ids: [randomUUID()], enabled: true });
    case 'createOrg':
      return jsonBody({ slug: `matrix-${randomUUID().slice(0, 8)}`, name: 'Matrix' });
    case 'registerConsolePasskey':
      // A well-formed answer, so the missing session (not the body) decides.
      return jsonBody({ response: { id: 'AAAAAAAAAAAAAAAAAAAAAA', rawId: 'AAAAAAAAAAAAAAAAAAAAAA', type: 'public-key', response: {} } });
    case 'mcpEndpoint':
      return jsonBody({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    case 'createWebhook':
      // Refused by the URL guard (422) when the role admits the caller: nothing is created, nothing is sent.
      return jsonBody({ url: 'https://127.0.0.1/matrix', events: ['tool.called'] });
    case 'updateWebhook':
      return jsonBody({ enabled: false });
    default:
      return op.bodyType === 'form' ? { body: '', contentType: 'application/x-www-form-urlencoded' } : jsonBody({});
  }
}

let sourceCounter = 0;
/**
 * Each request comes from an address of its own: the matrix checks policies, and the wrong operator tokens it sends
 * would otherwise meet the failed-sign-in limit of one address (tested in limits-doors.test.ts).
 */
function send(method: string, path: string, caller: Caller, body: { body: string; contentType: string } | null): Promise<Response> {
  const headers: Record<string, string> = {};
  if (caller.token) headers.authorization = `Bearer ${caller.token}`;
  if (body) headers['content-type'] = body.contentType;
  const request = new Request(`${BASE}${path}`, { method, headers, body: body?.body });
  sourceCounter++;
  notePeerAddress(request, `198.18.${Math.floor(sourceCounter / 250) % 256}.${(sourceCounter % 250) + 1}`);
  return g.handle(request);
}

/** Undoes the side effects an allowed call may have had on the fixtures the matrix depends on. */
async function restore(op: OperationDef): Promise<void> {
  if (op.operationId === 'deleteIdpConfig' || op.operationId === 'setIdpConfig') {
    await saveIdpConfig(g, manageA, configs().A);
    await saveIdpConfig(g, manageB, configs().B);
  }
}

const covered = new Set<string>();
let rows = 0;

describe('every operation declares a known policy', () => {
  test('auth is one of public | operator | mcp | console | contributor | admin | finance', () => {
    verifies('REST-ROLES-MATRIX');
    const unknown = operations.filter((op) => !(KNOWN_POLICIES as readonly string[]).includes(op.auth as string));
    expect(unknown.map((op) => `${op.operationId}: ${String(op.auth)}`)).toEqual([]);
    const ids = operations.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('authorization matrix', () => {
  for (const op of operations) {
    test(`${op.method} ${op.path} [${op.auth}] ${op.operationId}`, async () => {
      verifies('REST-ROLES-MATRIX');
      // Every wrong operator token counts against the operator's own failed-sign-in cap (100 a minute across
      // addresses, limits-doors.test.ts): the matrix sends more than that, so each operator operation starts afresh.
      if (op.auth === 'operator') (g.deps as { authFailures: AuthFailureLimiter }).authFailures = createLocalFailureLimiter('matrix');
      const failures: string[] = [];
      for (const caller of callers) {
        const want = expected(op, caller);
        const path = fillPath(op);
        const res = await send(op.method, path, caller, bodyFor(op, caller));
        const text = await res.text();
        rows++;
        const got = res.status;
        const ok = 'allowed' in want ? got !== 401 && got !== 403 && got < 500 : got === want.status;
        if (!ok) failures.push(`${caller.kind}: expected ${'allowed' in want ? 'allowed (not 401/403/5xx)' : want.status}, got ${got} ${text.slice(0, 200)}`);
        // Whatever the status, org B's credential never sees org A's identity (beyond what its own request named: the
        // public discovery documents of an org's MCP URL name that URL, decision 0245).
        if (caller.home === 'B' && ((text.includes(A.orgId) && !path.includes(A.orgId)) || (text.includes(A.slug) && !path.includes(A.slug)))) {
          failures.push(`${caller.kind}: the response mentions org A: ${text.slice(0, 200)}`);
        }
        await restore(op);
      }
      covered.add(op.operationId);
      expect(failures).toEqual([]);
    });
  }

  test('the matrix covered every operation with every caller', () => {
    verifies('REST-ROLES-MATRIX');
    expect(callers.length).toBe(9);
    expect([...covered].sort()).toEqual(operations.map((op) => op.operationId).sort());
    expect(rows).toBe(operations.length * callers.length);
  });

  test('the expectations for a finance operation (none is declared yet) and for an unknown policy', () => {
    const synthetic = (auth: string, pathParams: string[] = []) => ({ ...operations[1], auth, pathParams }) as unknown as OperationDef;
    const outcome = (op: OperationDef) =>
      Object.fromEntries(callers.map((c) => [c.kind, 'allowed' in expected(op, c) ? 'allowed' : (expected(op, c) as { status: number }).status]));
    expect(outcome(synthetic('finance'))).toEqual({
      'no token': 401,
      'IdP contributor': 403,
      'IdP admin': 'allowed',
      'IdP finance': 'allowed',
      'org:manage token': 'allowed',
      'MCP-only token': 403,
      'API key as Bearer': 401,
      "org B's IdP admin": 'allowed',
      "org B's org:manage token": 'allowed',
    });
    expect(outcome(synthetic('finance', ['orgId']))["org B's IdP admin"]).toBe(404);
    expect(() => expected(synthetic('auditor'), callers[0]!)).toThrow('does not know');
  });

  test('the IdP configurations survived the matrix', async () => {
    const [a, b] = await Promise.all([api(g, 'GET', '/api/org/idp', manageA), api(g, 'GET', '/api/org/idp', manageB)]);
    expect(((await a.json()) as { audience: string }).audience).toBe(AUD_A);
    expect(((await b.json()) as { audience: string }).audience).toBe(AUD_B);
  });
});

describe('method swaps', () => {
  const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
  const byPath = new Map<string, OperationDef[]>();
  for (const op of operations) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op]);

  test('every path answers 405 with Allow for each method it does not declare, whoever asks', async () => {
    verifies('REST-METHOD-SWAP');
    const failures: string[] = [];
    let checked = 0;
    const swapCallers = () => callers.filter((c) => ['org:manage token', 'IdP admin', 'no token'].includes(c.kind));
    for (const [path, ops] of byPath) {
      const declared = ops.map((op) => op.method as string);
      for (const method of METHODS.filter((m) => !declared.includes(m))) {
        for (const caller of swapCallers()) {
          const body = method === 'GET' ? null : { body: '{}', contentType: 'application/json' };
          const res = await send(method, fillPath(ops[0]!), caller, body);
          await res.arrayBuffer();
          checked++;
          const allow = (res.headers.get('allow') ?? '').split(/,\s*/).sort();
          if (res.status !== 405) failures.push(`${method} ${path} by ${caller.kind}: ${res.status}`);
          else if (JSON.stringify(allow) !== JSON.stringify([...declared].sort())) failures.push(`${method} ${path}: Allow ${allow.join(', ')}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(byPath.size);
  });
});

describe("org A's resources addressed by org B", () => {
  let connectorId: string;
  let apiKeyId: string;
  let fixture: PgFixture | null = null;
  const bCallers = () => callers.filter((c) => c.home === 'B');

  // This block's calls go through the SDK (contract-checked); the matrix above stays raw, one request per operation.
  const as = (token: string | null) => sdkFor(g, token ?? '').client; // '' sends no Authorization, as api() with null

  beforeAll(async () => {
    const res = await sdk.createConnector({
      client: as(manageA),
      body: { name: 'a-connector', type: 'postgresql', config: { host: '127.0.0.1', port: 9, database: 'a', user: 'a' } },
    });
    expect(res.response.status).toBe(201);
    connectorId = res.data!.id;
    const keys = (await sdk.listApiKeys({ client: as(manageA), throwOnError: true })).data;
    apiKeyId = keys.api_keys.find((k) => k.name === 'default')!.id;
  }, 60_000);
  afterAll(async () => {
    await g.deps.jobs.idle();
    await fixture?.drop().catch(() => undefined);
  }, 60_000);

  test("connector: B's admin and org:manage token get 404 on GET, PATCH, DELETE and revalidate; nothing changes", async () => {
    verifies('REST-BOLA');
    for (const caller of bCallers()) {
      const client = as(caller.token);
      const path = { connectorId };
      const attempts: [string, () => Promise<{ error?: unknown; response: Response }>][] = [
        ['GET', () => sdk.getConnector({ client, path })],
        ['PATCH', () => sdk.updateConnector({ client, path, body: { name: 'stolen' } })],
        ['DELETE', () => sdk.archiveConnector({ client, path })],
        ['POST revalidate', () => sdk.revalidateConnector({ client, path })],
      ];
      for (const [method, attempt] of attempts) {
        const res = await attempt();
        expect({ caller: caller.kind, method, status: res.response.status }).toEqual({ caller: caller.kind, method, status: 404 });
        expect(res.error).toBeInstanceOf(sdk.ToolgateError);
        expect(JSON.stringify((res.error as sdk.ToolgateError).body)).not.toContain('a-connector');
      }
      const list = (await sdk.listConnectors({ client, throwOnError: true })).data;
      expect(list.connectors.map((c) => c.id)).not.toContain(connectorId);
    }
    const mine = await sdk.getConnector({ client: as(manageA), path: { connectorId } });
    expect(mine.response.status).toBe(200);
    expect(mine.data!.name).toBe('a-connector');
  });

  test("API key and OAuth client: B cannot revoke A's; A's credentials keep working", async () => {
    verifies('REST-BOLA');
    for (const caller of bCallers()) {
      const client = as(caller.token);
      expect((await sdk.revokeApiKey({ client, path: { keyId: apiKeyId } })).response.status).toBe(404);
      expect((await sdk.revokeOAuthClient({ client, path: { clientId: A.clientId } })).response.status).toBe(404);
      const keys = (await sdk.listApiKeys({ client, throwOnError: true })).data;
      expect(keys.api_keys.map((k) => k.id)).not.toContain(apiKeyId);
      const clients = (await sdk.listOAuthClients({ client, throwOnError: true })).data;
      expect(clients.oauth_clients.map((c) => c.client_id)).not.toContain(A.clientId);
    }
    expect((await mcpRequest(g, A.slug, { apiKey: A.apiKey })).status).toBe(200);
    expect((await sdk.getOrg({ client: as(manageA) })).response.status).toBe(200);
    expect((await tokenFor(g, A.clientId, A.clientSecret)).length).toBeGreaterThan(0);
  });

  test.skipIf(!pgAvailable)("tool settings: B cannot list or change A's tool, by A's org id or by its own", async () => {
    verifies('REST-BOLA');
    fixture = await pgFixture(['matrix_items']);
    const created = await createConnector(g, manageA, 'a-tools', fixture);
    expect(created.status).toBe('active');
    const query = { connector_id: created.id as string };
    const tools = (await sdk.listTools({ client: as(manageA), throwOnError: true, path: { orgId: A.orgId }, query })).data;
    const toolId = tools.tools[0]!.id;
    for (const caller of bCallers()) {
      const client = as(caller.token);
      for (const orgId of [A.orgId, B.orgId]) {
        const patch = await sdk.updateToolMetadata({ client, path: { orgId, toolId }, body: { enabled: false } });
        expect({ caller: caller.kind, orgId, status: patch.response.status }).toEqual({ caller: caller.kind, orgId, status: 404 });
      }
      const list = await sdk.listTools({ client, path: { orgId: B.orgId }, query });
      expect(list.response.status).toBe(200);
      expect(list.data!.tools).toEqual([]);
    }
    const after = (await sdk.listTools({ client: as(manageA), throwOnError: true, path: { orgId: A.orgId }, query })).data;
    expect(after.tools.find((t) => t.id === toolId)?.enabled).toBe(true);
  });
});

describe('approvals: every caller kind deciding a real pending approval of org A', () => {
  let fixture: PgFixture | null = null;
  afterAll(async () => {
    await g.deps.jobs.idle();
    await fixture?.drop().catch(() => undefined);
  }, 60_000);

  /** Beyond the role policy: the approver list (IdP admin of A is listed, its contributor is not) and org isolation. */
  const DECISION: Record<CallerKind, number> = {
    'no token': 401,
    'IdP contributor': 403,
    'IdP admin': 200,
    'IdP finance': 403,
    'org:manage token': 200,
    'MCP-only token': 403,
    'API key as Bearer': 401,
    "org B's IdP admin": 404,
    "org B's org:manage token": 404,
  };

  test.skipIf(!pgAvailable)('approve and reject answer exactly the table; a refused decision leaves the approval pending', async () => {
    verifies('REST-ROLES-MATRIX', 'APPROVAL-APPROVER-CHECK', 'APPROVAL-NO-SELF-APPROVAL', 'APPROVAL-404');
    fixture = await pgFixture(['matrix_approvals']);
    const created = await createConnector(g, manageA, 'a-approvals', fixture);
    expect(created.status).toBe('active');
    const tools = (await (await api(g, 'GET', `/api/mcp/${A.orgId}/tools?connector_id=${created.id}`, manageA)).json()) as {
      tools: { id: string; name: string; kind: string }[];
    };
    // The table's tool, not the connector's describe_<connector> schema tool listed beside it (decision 0313).
    const tool = tools.tools.find((t) => t.kind === 'tool')!;
    expect(tool.name).toBe('query_postgresql_matrix_approvals');
    const flag = await api(g, 'PATCH', `/api/mcp/${A.orgId}/tools/${tool.id}/metadata`, manageA, {
      requires_approval: true,
      approval_emails: [`admin@${AUD_A}.example`],
    });
    expect(flag.status).toBe(200);
    const hold = async () => {
      const reply = await mcpRequest(g, A.slug, { apiKey: A.apiKey }, 'tools/call', { name: tool.name, arguments: { sql: 'SELECT id FROM matrix_approvals' } });
      return reply.body.result.structuredContent.approvalId as string;
    };
    const failures: string[] = [];
    for (const caller of callers) {
      for (const decision of ['approve', 'reject'] as const) {
        const approvalId = await hold();
        const res = await send('POST', `/api/org/approvals/${approvalId}/${decision}`, caller, null);
        const text = await res.text();
        if (res.status !== DECISION[caller.kind])
          failures.push(`${caller.kind} ${decision}: expected ${DECISION[caller.kind]}, got ${res.status} ${text.slice(0, 200)}`);
        const list = (await (await api(g, 'GET', '/api/org/approvals?limit=500', manageA)).json()) as { approvals: { id: string; status: string }[] };
        const status = list.approvals.find((a) => a.id === approvalId)?.status;
        const want = res.status === 200 ? (decision === 'approve' ? 'executed' : 'rejected') : 'pending';
        if (status !== want) failures.push(`${caller.kind} ${decision}: approval is ${status}, expected ${want}`);
        if (caller.home === 'B' && text.includes(tool.name)) failures.push(`${caller.kind}: the response names org A's tool`);
      }
    }
    expect(failures).toEqual([]);
  });
});
