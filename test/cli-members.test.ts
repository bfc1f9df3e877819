// `toolgate members ...` and `org create --admin-email` (issue 40): through a running server's operator API (its
// answers checked against openapi.yaml) and offline on an embedded data folder. The link printed works once. A member's
// passkeys (registered with a software authenticator) are listed and removed.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, BASE, onboard, OPERATOR_TOKEN, startTestGateway, type TestGateway } from './support/gateway.ts';
import { SoftAuthenticator } from './support/soft-authenticator.ts';
import { startSmtp } from './support/smtp.ts';
import { verifies } from './requirements.ts';

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

async function run(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([BUN, 'src/cli.ts', ...args], { cwd: ROOT, env: childEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(stderr).not.toContain('    at ');
  let json: any = null;
  try {
    json = JSON.parse(stdout);
  } catch {}
  return { code, stdout, stderr, json };
}

setDefaultTimeout(300_000);

const tokenOf = (url: string) => url.slice(url.indexOf('#/join/') + '#/join/'.length);

describe('members through the operator API', () => {
  let g: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let dataDir: string;
  const env = () => ({ TOOLGATE_OPERATOR_URL: `http://127.0.0.1:${server.port}`, TOOLGATE_OPERATOR_TOKEN: OPERATOR_TOKEN, TOOLGATE_DATA_DIR: dataDir });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'toolgate-cli-members-'));
    g = await startTestGateway('pglite');
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => g.handle(request) });
    await onboard(g, 'crew', 'scale');
  }, 180_000);
  afterAll(async () => {
    server?.stop(true);
    await g?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('invite, accept the printed link, set roles, suspend, resume, link, remove', async () => {
    const invited = await run(['members', 'invite', '--org', 'crew', '--email', 'dee@example.com', '--roles', 'contributor', '--json'], env());
    expect(invited.code).toBe(0);
    expect(invited.json.member).toMatchObject({ email: 'dee@example.com', status: 'invited', roles: ['contributor'] });
    const accepted = await api(g, 'POST', '/members/accept', null, { token: tokenOf(invited.json.invitation.url), password: 'dee password 123' });
    expect(accepted.status).toBe(200);
    const roles = await run(['members', 'set-roles', '--org', 'crew', '--email', 'DEE@example.com', '--roles', 'admin,finance', '--json'], env());
    expect(roles.json).toMatchObject({ roles: ['admin', 'finance'], status: 'active' });
    // Dee is the only admin member: she is kept.
    const lastAdmin = await run(['members', 'suspend', '--org', 'crew', '--email', 'dee@example.com'], env());
    expect(lastAdmin.code).toBe(1);
    expect(lastAdmin.stderr).toContain('last active admin');
    await run(['members', 'invite', '--org', 'crew', '--email', 'eve@example.com'], env());
    const list = await run(['members', 'list', '--org', 'crew'], env());
    expect(list.stdout).toContain('dee@example.com');
    expect(list.stdout).toContain('invited');
    await run(['members', 'set-roles', '--org', 'crew', '--email', 'dee@example.com', '--roles', 'finance'], env()).then((r) => expect(r.code).toBe(1));
    const link = await run(['members', 'link', '--org', 'crew', '--email', 'dee@example.com', '--json'], env());
    expect(link.json.purpose).toBe('password_reset');
    const text = await run(['members', 'link', '--org', 'crew', '--email', 'eve@example.com'], env());
    expect(text.stdout).toContain('Invitation link');
    const removed = await run(['members', 'remove', '--org', 'crew', '--email', 'eve@example.com', '--json'], env());
    expect(removed.json.email).toBe('eve@example.com');
    const unknown = await run(['members', 'remove', '--org', 'crew', '--email', 'eve@example.com'], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no member with the e-mail');
    expect((await run(['members', 'invite', '--org', 'crew'], env())).code).toBe(2);
    expect((await run(['members', 'set-roles', '--org', 'crew', '--email', 'dee@example.com', '--roles', 'owner'], env())).code).toBe(2);
  });

  test('members passkeys lists a member’s passkeys (no key material); remove-passkey removes one', async () => {
    const invited = await run(['members', 'invite', '--org', 'crew', '--email', 'kit@example.com', '--json'], env());
    const token = tokenOf(invited.json.invitation.url);
    const started = await api(g, 'POST', '/members/accept/passkey-options', null, { token });
    const authenticator = new SoftAuthenticator(BASE);
    const response = authenticator.create(((await started.json()) as { options: Parameters<SoftAuthenticator['create']>[0] }).options);
    expect((await api(g, 'POST', '/members/accept', null, { token, password: 'kit password 0001', passkey: { name: 'Kit key', response } })).status).toBe(200);
    const listed = await run(['members', 'passkeys', '--org', 'crew', '--email', 'kit@example.com', '--json'], env());
    expect(listed.json.passkeys).toMatchObject([{ name: 'Kit key', last_used_at: null }]);
    expect(listed.stdout).not.toContain(response.id);
    expect((await run(['members', 'remove-passkey', '--org', 'crew', '--email', 'kit@example.com'], env())).code).toBe(2);
    const removed = await run(['members', 'remove-passkey', '--org', 'crew', '--email', 'kit@example.com', '--passkey', listed.json.passkeys[0].id], env());
    expect(removed.stdout).toContain('Removed the passkey “Kit key” of kit@example.com');
    expect((await run(['members', 'passkeys', '--org', 'crew', '--email', 'kit@example.com'], env())).stdout).toContain('kit@example.com has no passkeys');
  });

  test('org create --admin-email prints the first admin invitation', async () => {
    const created = await run(['org', 'create', '--slug', 'fresh', '--name', 'Fresh', '--admin-email', 'root@fresh.example', '--json'], env());
    expect(created.code).toBe(0);
    expect(created.json.admin_email).toBe('root@fresh.example');
    const accepted = await api(g, 'POST', '/members/accept', null, { token: tokenOf(created.json.admin_invitation_url), password: 'root password 123' });
    expect(await accepted.json()).toMatchObject({ org_slug: 'fresh', purpose: 'invitation' });
  });
});

describe('members offline, on the embedded data folder', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'toolgate-cli-members-offline-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('org create --admin-email, then members list on the store; with SMTP the invitations go by mail too', async () => {
    verifies('MAIL-MEMBER-LINKS');
    const smtp = await startSmtp();
    try {
      const env = { TOOLGATE_DATA_DIR: dataDir, TOOLGATE_DEMO: '0', TOOLGATE_SMTP_URL: smtp.url, TOOLGATE_SMTP_FROM: 'toolgate@solo.example' };
      const created = await run(['org', 'create', '--slug', 'solo', '--name', 'Solo', '--admin-email', 'me@solo.example'], env);
      expect(created.code).toBe(0);
      expect(created.stdout).toContain('Admin member:  me@solo.example');
      const list = await run(['members', 'list', '--org', 'solo', '--json'], env);
      expect(list.json.members).toMatchObject([{ email: 'me@solo.example', status: 'invited', roles: ['admin'] }]);
      // The command waited for the mail before it exited.
      expect(smtp.received.map((m) => [m.to, m.subject])).toEqual([[['me@solo.example'], 'You are invited to Solo on Toolgate']]);
      const invited = await run(['members', 'invite', '--org', 'solo', '--email', 'you@solo.example', '--json'], env);
      expect(smtp.received.map((m) => m.to[0])).toEqual(['me@solo.example', 'you@solo.example']);
      expect(smtp.received[1]!.text).toContain(invited.json.invitation.url);
    } finally {
      await smtp.close();
    }
  }, 180_000);
});
