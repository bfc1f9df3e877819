// A member signs in on the org's MCP authorization server (issue 40 item 4): the same page flow an IdP user goes
// through (sign-in, consent, code, token), the grant names the member, and a suspension on one instance stops the
// member's MCP token and console session on the other at the next request (two gateways on one PostgreSQL store).
// Also: registration is refused for an org nobody can sign in to; with an IdP the org's setting chooses the page.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { upsertIdpConfig } from '../src/auth/idp/repository.ts';
import { api, BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { rpc } from './support/mcp.ts';
import { cookiePair, REDIRECT, refresh, signInThroughPages } from './support/member-oauth.ts';
import { serviceAvailable } from './support/services.ts';
import { notVerifiableHere, verifies } from './requirements.ts';

setDefaultTimeout(300_000);
const pg = await serviceAvailable('postgres');
if (!pg) {
  console.warn('[skip] member MCP sign-in across instances: needs PostgreSQL on 127.0.0.1:5432');
  notVerifiableHere('needs PostgreSQL on 127.0.0.1:5432', 'MEMBER-SUSPENDED-REFRESH-EVERY-INSTANCE');
}

const PASSWORD = 'member password 0001';
let one: TestGateway;
let two: TestGateway;
let A: Onboarded;
let manage: string;
let memberId: string;

describe.skipIf(!pg)('a member signs in from an MCP client, on two instances of one store', () => {
  beforeAll(async () => {
    one = await startTestGateway('postgres');
    two = await startTestGateway('postgres', {}, one.databaseUrl!);
    A = await onboard(one);
    manage = await tokenFor(one, A.clientId, A.clientSecret, 'org:manage');
  }, 300_000);
  afterAll(async () => {
    await two?.close();
    await one?.close();
  });

  test('nobody can sign in yet: registration is refused with a clear error, the authorize page says what to do', async () => {
    const refused = await api(one, 'POST', `/oauth/${A.slug}/register`, null, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as { error: string; error_description: string };
    expect(body.error).toBe('access_denied');
    expect(body.error_description).toContain('cannot sign anyone in');
    memberId = await addMember(one, manage, 'mia@a.example', PASSWORD, ['admin']);
  });

  test('pages, consent, code, token; the grant names the member; tools/list works on the other instance', async () => {
    const { accessToken, consentHtml } = await signInThroughPages(one, A.slug, 'Mia@A.example', PASSWORD);
    expect(consentHtml).toContain('mia@a.example');
    const listed = await rpc(two, A.slug, { token: accessToken }, 'tools/list');
    expect(listed.status).toBe(200);
    expect(Array.isArray(listed.body.result.tools)).toBe(true);
    const grants = (await (await api(two, 'GET', '/api/org/mcp-grants', manage)).json()) as {
      grants: Array<{ subject: string; email: string; roles: string[] }>;
    };
    expect(grants.grants[0]).toMatchObject({ subject: `member:${memberId}`, email: 'mia@a.example', roles: ['admin'] });
    const audit = (await (await api(two, 'GET', '/api/audit?action=mcp_grant.created', manage)).json()) as { events: Array<{ actor: { id: string } }> };
    expect(audit.events[0]!.actor.id).toBe('mia@a.example');
  });

  test('suspended on one instance: the MCP token and the console session stop at the next request on the other', async () => {
    const { accessToken, refreshToken: firstRefresh, clientId } = await signInThroughPages(two, A.slug, 'mia@a.example', PASSWORD);
    // The refresh token works (and rotates) before the suspension, on the other instance too.
    const refreshed = await refresh(one, A.slug, clientId, firstRefresh);
    expect(refreshed.status).toBe(200);
    const refreshToken = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    const console = await two.handle(
      new Request(`${BASE}/console/auth/password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
        body: JSON.stringify({ org: A.slug, email: 'mia@a.example', password: PASSWORD }),
      }),
    );
    expect(console.status).toBe(200);
    const cookie = cookiePair(console);
    expect((await rpc(two, A.slug, { token: accessToken }, 'tools/list')).status).toBe(200);
    expect((await two.handle(new Request(`${BASE}/console/session`, { headers: { cookie } }))).status).toBe(200);
    // Mia is the only admin member: another admin first, then the suspension.
    await addMember(one, manage, 'noa@a.example', PASSWORD, ['admin']);
    expect((await api(one, 'PATCH', `/api/org/members/${memberId}`, manage, { status: 'suspended' })).status).toBe(200);
    expect((await rpc(two, A.slug, { token: accessToken }, 'tools/list')).status).toBe(401);
    expect((await two.handle(new Request(`${BASE}/console/session`, { headers: { cookie } }))).status).toBe(401);
    verifies('MEMBER-SUSPENDED-REFRESH-EVERY-INSTANCE');
    const refused = await refresh(two, A.slug, clientId, refreshToken);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
    const grants = (await (await api(two, 'GET', `/api/org/mcp-grants?subject=mia@a.example`, manage)).json()) as { grants: Array<{ revoked_reason: string }> };
    expect(grants.grants.every((g) => g.revoked_reason === 'member_suspended')).toBe(true);
  });

  test('with an IdP, the org chooses: idp_only sends people there, both offers the page and the IdP link, members_only the page', async () => {
    await upsertIdpConfig(one.deps.store.db, {
      orgId: A.orgId,
      issuer: 'https://idp.example',
      jwksUri: 'https://idp.example/jwks',
      audience: 'a',
      consoleClientId: 'console',
    });
    const registered = await api(one, 'POST', `/oauth/${A.slug}/register`, null, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const params = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'S256',
      resource: `${BASE}/mcp/${A.slug}`,
    });
    const authorize = async () => {
      const res = await one.handle(new Request(`${BASE}/oauth/${A.slug}/authorize?${params}`));
      return { status: res.status, html: await res.text() };
    };
    // idp_only (the default): on to the IdP (unreachable here: its page), never the members' form.
    const idpOnly = await authorize();
    expect(idpOnly.status).not.toBe(200);
    expect(idpOnly.html).not.toContain('name="password"');
    expect((await api(one, 'PUT', '/api/org/people-sign-in', manage, { people_sign_in: 'both' })).status).toBe(200);
    const both = await authorize();
    expect(both.status).toBe(200);
    expect(both.html).toContain('name="password"');
    expect(both.html).toContain('via=idp');
    const list = (await (await api(one, 'PUT', '/api/org/people-sign-in', manage, { people_sign_in: 'members_only' })).json()) as Record<string, unknown>;
    expect(list).toMatchObject({ people_sign_in: 'members_only', idp_configured: true });
    const membersOnly = await authorize();
    expect(membersOnly.html).toContain('name="password"');
    expect(membersOnly.html).not.toContain('via=idp');
  });
});
