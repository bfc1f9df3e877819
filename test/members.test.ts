// Members of an org (issue 40 items 1-3): REST list, invite, change roles, suspend, remove; one-time links; passwords.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import * as sdk from '../sdk/index.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { api, BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { sdkFor } from './support/sdk.ts';
import { hashPassword, verifyPassword } from '../src/members/password.ts';
import { memberSignInPage } from '../src/auth/oauth-server/member-page.ts';
import { verifies } from './requirements.ts';

let g: TestGateway;
let A: Onboarded;
let B: Onboarded;
let manageA: string;
let manageB: string;

setDefaultTimeout(120_000);

beforeAll(async () => {
  g = await startTestGateway();
  A = await onboard(g);
  B = await onboard(g);
  manageA = await tokenFor(g, A.clientId, A.clientSecret, 'org:manage');
  manageB = await tokenFor(g, B.clientId, B.clientSecret, 'org:manage');
}, 180_000);
afterAll(() => g?.close());

const tokenOf = (url: string) => url.slice(url.indexOf('#/join/') + '#/join/'.length);

let peer = 0;
/** POST /members/accept, each from its own address: the link follow-ups' per-address limit (2 a second) is not under test. */
async function accept(token: string, password: string) {
  const request = new Request(`${BASE}/members/accept`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password }),
  });
  notePeerAddress(request, `198.51.100.${++peer}`);
  return g.handle(request);
}

describe('members over REST', () => {
  test('invite answers a one-time link (fragment), the member is invited; accepting it sets the password and makes them active', async () => {
    const client = sdkFor(g, manageA).client;
    const invited = await sdk.inviteMember({ client, body: { email: 'Ada@Example.com', roles: ['admin'] }, throwOnError: true });
    expect(invited.response.status).toBe(201);
    const { member, invitation } = invited.data;
    expect(member).toMatchObject({ email: 'Ada@Example.com', status: 'invited', roles: ['admin'], has_password: false });
    expect(invitation.url).toStartWith(`${g.config.publicUrl}/console#/join/tgl_`);
    expect(Date.parse(invitation.expires_at) - Date.now()).toBeGreaterThan(6.9 * 24 * 3600_000);
    // Same e-mail, other case: taken.
    const again = await api(g, 'POST', '/api/org/members', manageA, { email: 'ada@example.com' });
    expect(again.status).toBe(409);
    // A weak password is refused and the link stays usable.
    expect((await accept(tokenOf(invitation.url), 'short')).status).toBe(422);
    const ok = await accept(tokenOf(invitation.url), 'correct horse battery');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ email: 'Ada@Example.com', org_slug: A.slug, purpose: 'invitation' });
    // One-time.
    expect((await accept(tokenOf(invitation.url), 'another good password')).status).toBe(404);
    const list = await sdk.listMembers({ client, throwOnError: true });
    expect(list.data.members.find((m) => m.id === member.id)).toMatchObject({ status: 'active', has_password: true });
    expect(list.data).toMatchObject({ people_sign_in: 'idp_only', idp_configured: false });
  });

  test('an unknown link and a garbage one get the same 404', async () => {
    const unknown = await accept(`tgl_${'x'.repeat(43)}`, 'correct horse battery');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe('link_invalid');
  });

  test('roles change, attributes are set, suspend and resume; the last admin is kept', async () => {
    const client = sdkFor(g, manageA).client;
    const { data } = await sdk.inviteMember({ client, body: { email: 'bo@example.com' }, throwOnError: true });
    expect(data.member.roles).toEqual(['contributor']);
    // An invited member is not suspended (they are not active yet).
    expect((await api(g, 'PATCH', `/api/org/members/${data.member.id}`, manageA, { status: 'suspended' })).status).toBe(409);
    await accept(tokenOf(data.invitation.url), 'bo has a long password');
    const changed = await sdk.updateMember({
      client,
      path: { memberId: data.member.id },
      body: { roles: ['finance', 'contributor'], attributes: { tenant_id: 't-17' } },
      throwOnError: true,
    });
    expect(changed.data).toMatchObject({ roles: ['finance', 'contributor'], attributes: { tenant_id: 't-17' } });
    const suspended = await sdk.updateMember({ client, path: { memberId: data.member.id }, body: { status: 'suspended' }, throwOnError: true });
    expect(suspended.data.status).toBe('suspended');
    const resumed = await sdk.updateMember({ client, path: { memberId: data.member.id }, body: { status: 'active' }, throwOnError: true });
    expect(resumed.data.status).toBe('active');
    const bad = await api(g, 'PATCH', `/api/org/members/${data.member.id}`, manageA, { roles: ['owner'] });
    expect(bad.status).toBe(400);
    // Ada is the only active admin: she keeps the role.
    const ada = (await sdk.listMembers({ client, throwOnError: true })).data.members.find((m) => m.email === 'Ada@Example.com')!;
    const demote = await api(g, 'PATCH', `/api/org/members/${ada.id}`, manageA, { roles: ['contributor'] });
    expect(demote.status).toBe(409);
    expect((await api(g, 'DELETE', `/api/org/members/${ada.id}`, manageA)).status).toBe(409);
  });

  test('a password-reset link for an active member; the old password stops matching', async () => {
    const client = sdkFor(g, manageA).client;
    const { data } = await sdk.inviteMember({ client, body: { email: 'cy@example.com' }, throwOnError: true });
    await accept(tokenOf(data.invitation.url), 'first password here');
    const link = await sdk.createMemberLink({ client, path: { memberId: data.member.id }, throwOnError: true });
    expect(link.data.purpose).toBe('password_reset');
    expect((await accept(tokenOf(link.data.url), 'second password here')).status).toBe(200);
    const removed = await sdk.removeMember({ client, path: { memberId: data.member.id }, throwOnError: true });
    expect(removed.data.email).toBe('cy@example.com');
    expect((await api(g, 'DELETE', `/api/org/members/${data.member.id}`, manageA)).status).toBe(404);
  });

  test("another org's admin sees none of A's members and cannot touch them", async () => {
    const list = await api(g, 'GET', '/api/org/members', manageB);
    expect(((await list.json()) as { members: unknown[] }).members).toEqual([]);
    const ofA = (await sdk.listMembers({ client: sdkFor(g, manageA).client, throwOnError: true })).data.members[0]!;
    for (const [method, path, body] of [
      ['PATCH', `/api/org/members/${ofA.id}`, { roles: ['admin'] }],
      ['DELETE', `/api/org/members/${ofA.id}`, undefined],
      ['POST', `/api/org/members/${ofA.id}/link`, undefined],
    ] as const) {
      const res = await api(g, method, path, manageB, body);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain(ofA.email);
    }
  });

  test('a token without org:manage (MCP only) may not list members', async () => {
    const mcpOnly = await tokenFor(g, A.clientId, A.clientSecret, 'mcp:call');
    expect((await api(g, 'GET', '/api/org/members', mcpOnly)).status).toBe(403);
    expect((await api(g, 'GET', '/api/org/members', null)).status).toBe(401);
  });
});

describe('without SMTP (TOOLGATE_SMTP_URL unset)', () => {
  test('forgot-password is refused with mail_not_configured, the same for any e-mail; the sign-in page says to ask an admin', async () => {
    verifies('MEMBER-FORGOT-PASSWORD-LIMITS');
    expect(g.deps.mailer).toBeNull();
    for (const email of ['Ada@Example.com', 'nobody@example.com']) {
      const refused = await g.handle(
        new Request(`${BASE}/members/password-reset`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ org: A.slug, email }),
        }),
      );
      expect(refused.status).toBe(409);
      expect(await refused.json()).toEqual({
        error: 'mail_not_configured',
        message: 'This gateway sends no mail: ask an admin of your org for a password-reset link (Members page).',
      });
    }
    const tx = { org: { id: A.orgId, slug: A.slug, name: 'A' }, request: {} as never, csrf: 'c', expiresAt: Date.now() + 60_000 };
    const without = await memberSignInPage(tx, { idpUrl: null, problem: null, email: '', status: 200, cookies: [], passkey: null }).text();
    expect(without).toContain('An admin of the org gives you a link');
    expect(without).not.toContain('#/forgot/');
    const withMail = await memberSignInPage(tx, {
      idpUrl: null,
      problem: null,
      email: '',
      status: 200,
      cookies: [],
      passkey: null,
      mailConfigured: true,
    }).text();
    expect(withMail).toContain(`href="/console#/forgot/${A.slug}"`);
  });
});

describe('password hashes', () => {
  test('scrypt strings carry their parameters; a right password matches, a wrong one and a mangled hash do not', async () => {
    const hash = await hashPassword('correct horse battery');
    expect(hash).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse batterY', hash)).toBe(false);
    expect(await verifyPassword('correct horse battery', hash.replace('scrypt$15', 'scrypt$30'))).toBe(false);
    expect(await hashPassword('correct horse battery')).not.toBe(hash);
  });
});
