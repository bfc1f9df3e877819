// The client README's "Sign in" and "One example per endpoint group" examples (packages/client/README.md, its first
// two ```ts blocks), run as written against a real gateway served over HTTP with a real PostgreSQL target: only the
// placeholders are substituted (the base URL, the OAuth client, the API key, a token, the database, the webhook
// receiver, the operator token). test/sdk-runtimes.test.ts runs the other two blocks (Errors, gateway down).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tg from '../packages/client/src/index.ts';
import { BASE, OPERATOR_TOKEN, onboard, type Onboarded, startTestGateway, type TestGateway, tokenFor } from './support/gateway.ts';
import { PG_URL, serviceAvailable } from './support/services.ts';
import { createTargets, type Targets } from './support/targets.ts';

const ROOT = resolve(import.meta.dir, '..');
const CLIENT = join(ROOT, 'packages', 'client', 'src', 'index.ts');
const README_BLOCKS = [...readFileSync(join(ROOT, 'packages', 'client', 'README.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
const SIGN_IN_BLOCK = README_BLOCKS[0]!;
const ENDPOINTS_BLOCK = README_BLOCKS[1]!;
const README_PG = "{ host: 'db.internal', port: 5432, database: 'shop', user: 'reader' }";

const pgUp = await serviceAvailable('postgres');

/** Replaces `from` by `to` in `text`, failing when the README no longer holds `from` (the substitution would be silent). */
function substitute(text: string, pairs: [string, string][]): string {
  let out = text;
  for (const [from, to] of pairs) {
    if (!out.includes(from)) throw new Error(`the README example no longer contains ${from}`);
    out = out.replaceAll(from, to);
  }
  return out;
}

describe.skipIf(!pgUp)("the client README's Sign in and endpoint-group examples, run against a gateway", () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let receiver: ReturnType<typeof Bun.serve>;
  let targets: Targets;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => new Response('ok'),
    });
    [g, targets] = await Promise.all([
      startTestGateway('pglite', {
        TOOLGATE_PUBLIC_URL: base,
        TOOLGATE_ALLOWED_HOSTS: new URL(BASE).hostname,
        TOOLGATE_OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
      }),
      createTargets('rdx_shop', 'pg'),
    ]);
    handle = g.handle;
    dir = mkdtempSync(join(tmpdir(), 'tg-readme-'));
  }, 120_000);
  afterAll(async () => {
    server?.stop(true);
    receiver?.stop(true);
    await g?.close();
    await targets?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test('both blocks run to the end: sign-in, API key shown once, connector, tools, approval, MCP, webhook, audit, usage, a new org', async () => {
    const org: Onboarded = await onboard(g);
    const accessToken = await tokenFor(g, org.clientId, org.clientSecret);
    const credential = decodeURIComponent(new URL(PG_URL).password) || 'unused';

    // A call already held for approval, for the block's `pending.approvals[0]`: a flagged tool called once over MCP.
    const setup = new tg.Toolgate({ baseUrl: base, token: accessToken, retry: false });
    const opts = { client: setup.client, throwOnError: true } as const;
    let { data: held } = await tg.createConnector({ ...opts, body: { name: 'held', type: 'postgresql', config: targets.pgConfig, credential } });
    for (let i = 0; i < 100 && held.status === 'validating'; i++) {
      await Bun.sleep(100);
      held = (await tg.getConnector({ ...opts, path: { connectorId: held.id } })).data;
    }
    expect(held.status).toBe('active');
    const { data: heldTools } = await tg.listTools({ ...opts, path: { orgId: org.orgId }, query: { connector_id: held.id } });
    const items = heldTools.tools.find((t) => t.name === 'query_postgresql_items')!;
    await tg.updateToolMetadata({ ...opts, path: { orgId: org.orgId, toolId: items.id }, body: { requires_approval: true } });
    const call = await fetch(`${base}/mcp/${org.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': org.apiKey },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: items.name, arguments: { sql: 'SELECT id FROM items' } },
      }),
    });
    expect(call.status).toBe(200);
    expect(await call.text()).toContain('pending_approval');

    const signInFile = join(dir, 'sign-in.ts');
    writeFileSync(
      signInFile,
      `const accessToken = ${JSON.stringify(accessToken)};\nconst session = { getTokens: async () => ({ access_token: accessToken }) };\n` +
        substitute(SIGN_IN_BLOCK, [
          ["'@toolgate/client'", JSON.stringify(CLIENT)],
          ["'https://toolgate.example.com'", JSON.stringify(base)],
          ["'tgc_...'", JSON.stringify(org.clientId)],
          ["clientSecret: '...'", `clientSecret: ${JSON.stringify(org.clientSecret)}`],
          ["'tgk_...'", JSON.stringify(org.apiKey)],
        ]) +
        '\nexport { toolgate, withToken, asUser, agent, org };\n',
    );
    const endpointsFile = join(dir, 'endpoints.ts');
    writeFileSync(
      endpointsFile,
      `import { toolgate, agent, org } from ${JSON.stringify(signInFile)};\n` +
        substitute(ENDPOINTS_BLOCK, [
          ["'@toolgate/client'", JSON.stringify(CLIENT)],
          ["'https://toolgate.example.com'", JSON.stringify(base)],
          ["'tgc_...'", JSON.stringify(org.clientId)],
          ["client_secret: '...'", `client_secret: ${JSON.stringify(org.clientSecret)}`],
          [README_PG, JSON.stringify(targets.pgConfig)],
          ["credential: '...'", `credential: ${JSON.stringify(credential)}`],
          ["'https://hooks.example.com/toolgate'", JSON.stringify(`http://127.0.0.1:${receiver.port}/toolgate`)],
          ['process.env.TOOLGATE_OPERATOR_TOKEN', JSON.stringify(OPERATOR_TOKEN)],
        ]) +
        '\nexport { key, status, connector, tools, pending, hook, usage, health };\n',
    );

    const signIn = await import(signInFile);
    expect(signIn.org).toMatchObject({ id: org.orgId, slug: org.slug });
    // The static token and the token provider both reach the gateway.
    expect((await tg.getOrg({ client: signIn.withToken.client, throwOnError: true })).data.id).toBe(org.orgId);
    expect((await tg.getOrg({ client: signIn.asUser.client, throwOnError: true })).data.id).toBe(org.orgId);

    const seen = await import(endpointsFile);
    expect(seen.key.key).toStartWith('tgk_'); // shown once
    expect(seen.status).toBeDefined();
    expect(seen.connector).toMatchObject({ name: 'shop', type: 'postgresql', status: 'active' });
    expect(seen.tools.tools.length).toBeGreaterThan(0);
    expect(seen.pending.approvals.length).toBeGreaterThanOrEqual(1);
    expect(seen.hook.id).toBeString();
    expect(seen.usage).toBeDefined();
    expect(seen.health).toBeDefined();
    // The operator's org exists.
    const acme = await g.handle(new Request(`${BASE}/operator/orgs`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }));
    expect(await acme.text()).toContain('"acme"');
  }, 120_000);
});
