// Acceptance: the official MCP TypeScript SDK client, over real HTTP, calls a flagged tool, gets pending_approval,
// and polls check_approval_status until an approver's decision has executed the call (real PostgreSQL target).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { verifies } from './requirements.ts';
import * as sdk from '../sdk/index.ts';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { createConnector, restTools } from './support/mcp.ts';
import { sdkFor } from './support/sdk.ts';
import { serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

setDefaultTimeout(60_000);
const available = await serviceAvailable('postgres');

type CallResult = { content: { type: string; text: string }[]; structuredContent?: Record<string, any>; isError?: boolean };

let g: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let org: Onboarded;
let manage: string;
let t: Targets;
let client: Client;
let rest: sdk.Client;

beforeAll(async () => {
  if (!available) return;
  [g, t] = await Promise.all([startTestGateway('pglite'), createTargets('tg_appr_sdk', 'pg')]);
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
  org = await onboard(g);
  manage = await tokenFor(g, org.clientId, org.clientSecret);
  rest = sdkFor(g, manage).client;
  const pg = await createConnector(g, manage, { name: 'warehouse', type: 'postgresql', config: t.pgConfig });
  expect(pg.status).toBe('active');
  const tool = (await restTools(g, manage, org.orgId)).find((x) => x.name === 'query_postgresql_items')!;
  expect((await sdk.updateToolMetadata({ client: rest, path: { orgId: org.orgId, toolId: tool.id }, body: { requires_approval: true } })).response.status).toBe(
    200,
  );
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp/${org.slug}`), {
    requestInit: { headers: { 'x-api-key': org.apiKey } },
  });
  client = new Client({ name: 'toolgate-approvals', version: '1.0.0' });
  await client.connect(transport);
}, 120_000);
afterAll(async () => {
  await client?.close().catch(() => {});
  server?.stop(true);
  await g?.close();
  await t?.drop();
}, 60_000);

const poll = async (approvalId: string) => (await client.callTool({ name: 'check_approval_status', arguments: { approvalId } })) as CallResult;

describe.skipIf(!available)('the MCP SDK client and a flagged tool', () => {
  test('the call is held; the client polls check_approval_status until the approved call has executed, and reads its rows', async () => {
    verifies('APPROVAL-MCP-SDK-POLL', 'APPROVAL-HELD-RESULT', 'APPROVAL-POLL-STATUS');
    const { tools } = await client.listTools();
    const flagged = tools.find((x) => x.name === 'query_postgresql_items')!;
    // Its immediate result is pending_approval, so it declares no rows outputSchema (the SDK would reject the result).
    expect(flagged.outputSchema).toBeUndefined();
    expect(tools.find((x) => x.name === 'query_postgresql_notes')!.outputSchema).toBeDefined();

    const held = (await client.callTool({ name: 'query_postgresql_items', arguments: { sql: 'SELECT id, name FROM items ORDER BY id' } })) as CallResult;
    expect(held.isError).toBe(false);
    expect(held.structuredContent!.status).toBe('pending_approval');
    expect(held.content[0]!.text).toContain('check_approval_status');
    const approvalId = held.structuredContent!.approvalId as string;
    expect((await poll(approvalId)).structuredContent).toEqual({ status: 'pending', approvalId });

    // An approver decides a moment later, while the agent keeps polling.
    const decision = Bun.sleep(150).then(() => sdk.approveApproval({ client: rest, path: { approvalId } }));
    let last: CallResult | null = null;
    const seen: string[] = [];
    for (let i = 0; i < 100; i++) {
      last = await poll(approvalId);
      seen.push(last.structuredContent!.status);
      if (last.structuredContent!.status !== 'pending') break;
      await Bun.sleep(50);
    }
    expect((await decision).response.status).toBe(200);
    expect(seen[0]).toBe('pending');
    expect(last!.structuredContent!.status).toBe('executed');
    const rows = [
      { id: 1, name: 'apple' },
      { id: 2, name: 'pear' },
      { id: 3, name: 'plum' },
    ];
    expect(last!.structuredContent!.result.structuredContent).toEqual({ rows, rowCount: 3, truncated: false });
    expect(JSON.parse(last!.content[1]!.text)).toEqual(rows);
  });

  test('rejected and unknown ids read as such through the SDK', async () => {
    verifies('APPROVAL-MCP-SDK-POLL', 'APPROVAL-REJECT');
    const held = (await client.callTool({ name: 'query_postgresql_items', arguments: { sql: 'SELECT 1 AS one FROM items' } })) as CallResult;
    const approvalId = held.structuredContent!.approvalId as string;
    expect((await sdk.rejectApproval({ client: rest, path: { approvalId } })).response.status).toBe(200);
    expect((await poll(approvalId)).structuredContent).toEqual({ status: 'rejected', approvalId });
    expect((await poll('00000000-0000-4000-8000-000000000000')).structuredContent!.status).toBe('not_found');
  });
});
