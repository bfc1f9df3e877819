// The operator CLI as a subprocess: offline on an embedded data folder (PGlite), and against a running server's
// operator API (TOOLGATE_OPERATOR_URL; the server's responses checked against openapi.yaml). Each command's --json output,
// its error line (no stack trace) and its exit code (0 done, 1 failed, 2 usage, 3 gateway unusable).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onboard, OPERATOR_TOKEN, startTestGateway, type Onboarded, type TestGateway } from './support/gateway.ts';
import { rpc } from './support/mcp.ts';
import { verifies } from './requirements.ts';

const HOOK_TIMEOUT_MS = 60_000;
const ROOT = join(import.meta.dir, '..');
const BUN = join(ROOT, 'node_modules', '.bin', 'bun');

function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  for (const k of [
    'DATABASE_URL',
    'TOOLGATE_OPERATOR_TOKEN',
    'TOOLGATE_SECRET_KEY',
    'TOOLGATE_PUBLIC_URL',
    'TOOLGATE_OPERATOR_URL',
    'PORT',
    'HOST',
    'REDIS_URL',
  ])
    delete env[k];
  return { ...env, TOOLGATE_LOG_LEVEL: 'error', ...extra };
}

async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  const proc = Bun.spawn([BUN, 'src/cli.ts', ...args], { cwd: ROOT, env: childEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  let json: unknown = null;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = null;
  }
  expect(stderr).not.toContain('    at '); // never a stack trace
  return { code, stdout, stderr, json };
}

describe('operator CLI offline, on the embedded data folder', () => {
  let dataDir: string;
  const env = () => ({ TOOLGATE_DATA_DIR: dataDir });
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'toolgate-cli-operator-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('usage errors exit 2 and name the problem', async () => {
    expect((await run([], env())).code).toBe(2);
    const unknown = await run(['org', 'frobnicate'], env());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toStartWith('toolgate: unknown command: org frobnicate');
    const plan = await run(['org', 'set-plan', '--slug', 'acme', '--plan', 'gold'], env());
    expect(plan.code).toBe(2);
    expect(plan.stderr.trim()).toBe('toolgate: --plan must be one of starter, growth, scale, enterprise, standalone');
    expect((await run(['key', 'revoke', '--org', 'acme', '--id', 'nope'], env())).code).toBe(2);
    expect((await run(['org', 'show', '--slug', 'acme', '--bogus'], env())).code).toBe(2);
    const help = await run(['help'], env());
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 done; 1');
  }, 60_000);

  test('create, list, show, set-plan, suspend, resume, key revoke, export and verify, each with --json', async () => {
    verifies('OPERATOR-CLI');
    const created = await run(['org', 'create', '--slug', 'acme', '--name', 'Acme', '--json'], env());
    expect(created.code).toBe(0);
    const keyId = String(created.json.api_key_id);
    expect(keyId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.json.slug).toBe('acme');
    expect((await run(['org', 'create', '--slug', 'beta', '--name', 'Beta', '--plan', 'growth'], env())).code).toBe(0);

    const listed = await run(['org', 'list', '--limit', '1', '--json'], env());
    expect(listed.code).toBe(0);
    expect(listed.json).toMatchObject({ orgs: [{ slug: 'acme', plan: 'starter', suspended_at: null }], next_cursor: 'acme' });
    const next = await run(['org', 'list', '--cursor', 'acme'], env());
    expect(next.stdout).toMatch(/^beta\s+growth\s+trialing\s+Beta$/m);

    const planned = await run(['org', 'set-plan', '--slug', 'acme', '--plan', 'scale', '--json'], env());
    expect(planned.code).toBe(0);
    expect(planned.json.org).toMatchObject({ plan: 'scale', subscription_status: 'active', trial_expires_at: null, burst_limit_per_second: 100 });
    expect(planned.json.limits).toMatchObject({ plan: 'scale', monthly_tool_calls: null });

    const suspended = await run(['org', 'suspend', '--slug', 'acme', '--json'], env());
    expect(suspended.json.org.suspended_at).toEqual(expect.any(String));
    const shown = await run(['org', 'show', '--slug', 'acme'], env());
    expect(shown.stdout).toContain(`suspended:     ${suspended.json.org.suspended_at}`);
    expect((await run(['org', 'resume', '--slug', 'acme', '--json'], env())).json.org.suspended_at).toBeNull();

    const keys = await run(['key', 'list', '--org', 'acme', '--json'], env());
    expect(keys.json.api_keys.map((k: { id: string }) => k.id)).toEqual([keyId]);
    const revoked = await run(['key', 'revoke', '--org', 'acme', '--id', keyId, '--json'], env());
    expect(revoked.stderr).toBe('');
    expect(revoked.code).toBe(0);
    expect(revoked.json).toMatchObject({ id: keyId, revoked_at: expect.any(String) });
    const again = await run(['key', 'revoke', '--org', 'acme', '--id', keyId], env());
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe('toolgate: No such active API key.');
    expect((await run(['key', 'list', '--org', 'acme'], env())).stdout).toMatch(new RegExp(`^${keyId}  tgk_\\S+  revoked \\S+  default$`, 'm'));

    const exported = await run(['audit', 'export', '--org', 'acme'], env());
    expect(exported.code).toBe(0);
    const actions = (exported.json.events as { action: string }[]).map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['org.created', 'org.plan_changed', 'org.suspended', 'org.resumed', 'api_key.revoked']));
    const verified = await run(['audit', 'verify', '--org', 'acme', '--json'], env());
    expect(verified.code).toBe(0);
    expect(verified.json).toMatchObject({ org: 'acme', ok: true, broken: null });

    const missing = await run(['org', 'show', '--slug', 'nope'], env());
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('toolgate: No org with slug "nope".');
    const connector = await run(['connector', 'revalidate', '--org', 'acme', '--id', '00000000-0000-4000-8000-000000000000'], env());
    expect(connector.code).toBe(1);
    expect(connector.stderr.trim()).toBe('toolgate: No such connector.');
  }, 120_000);
});

describe('operator CLI against a running server (TOOLGATE_OPERATOR_URL)', () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let acme: Onboarded;
  let dataDir: string;
  const env = (token = OPERATOR_TOKEN) => ({
    TOOLGATE_OPERATOR_URL: `http://127.0.0.1:${server.port}`,
    TOOLGATE_OPERATOR_TOKEN: token,
    TOOLGATE_DATA_DIR: dataDir,
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'toolgate-cli-remote-'));
    g = await startTestGateway('pglite');
    // The test gateway's handle checks every response against openapi.yaml.
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
    acme = await onboard(g, 'acme', 'scale');
  }, HOOK_TIMEOUT_MS);
  afterAll(async () => {
    server?.stop(true);
    await g?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('plan change, suspension and key revocation through the operator API take effect on the server', async () => {
    verifies('OPERATOR-CLI');
    const planned = await run(['org', 'set-plan', '--slug', 'acme', '--plan', 'growth', '--json'], env());
    expect(planned.code).toBe(0);
    expect(planned.json.org).toMatchObject({ plan: 'growth', burst_limit_per_second: 50 });

    expect((await run(['org', 'suspend', '--slug', 'acme'], env())).code).toBe(0);
    expect((await rpc(g, 'acme', { apiKey: acme.apiKey }, 'tools/list')).status).toBe(403);
    expect((await run(['org', 'resume', '--slug', 'acme'], env())).code).toBe(0);
    expect((await rpc(g, 'acme', { apiKey: acme.apiKey }, 'tools/list')).status).toBe(200);

    const listed = await run(['org', 'list', '--json'], env());
    expect(listed.json.orgs.map((o: { slug: string }) => o.slug)).toEqual(['acme']);
    const keys = await g.handle(new Request('http://gateway.test/operator/orgs/acme', { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }));
    expect(keys.status).toBe(200);

    const outFile = join(dataDir, 'acme-audit.json');
    const exported = await run(['audit', 'export', '--org', 'acme', '--redact', '--out', outFile, '--json'], env());
    expect(exported.code).toBe(0);
    expect(exported.json).toEqual({ org: 'acme', file: outFile, redacted: true });
    const doc = JSON.parse(readFileSync(outFile, 'utf8'));
    expect(doc).toMatchObject({ org_id: acme.orgId, redacted: true });
    expect(doc.events.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['org.plan_changed', 'org.suspended', 'org.resumed']));
  }, 60_000);

  test('server refusals: exit 1 with its message; a wrong operator token or no server: exit 3', async () => {
    const missing = await run(['org', 'show', '--slug', 'nope', '--json'], env());
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('toolgate: No org with slug "nope".');
    const revoke = await run(['key', 'revoke', '--org', 'acme', '--id', '00000000-0000-4000-8000-000000000000'], env());
    expect(revoke.code).toBe(1);
    expect(revoke.stderr.trim()).toBe('toolgate: No such active API key.');
    const wrong = await run(['org', 'list'], env('wrong-operator-token-0123456789abcdef'));
    expect(wrong.code).toBe(3);
    expect(wrong.stderr.trim()).toBe('toolgate: The operator token is invalid.');
    const down = await run(['org', 'list'], { ...env(), TOOLGATE_OPERATOR_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(3);
    expect(down.stderr).toStartWith('toolgate: the server at TOOLGATE_OPERATOR_URL does not answer at http://127.0.0.1:9');
  }, 60_000);
});
