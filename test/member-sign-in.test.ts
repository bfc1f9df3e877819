// A member's password sign-in at the console (issue 40 item 3): the session works with the member's roles; a wrong
// password, an unknown e-mail, an unknown org and a suspended member get one answer in about the same time (a dummy
// hash); the failed-sign-in limits answer before any hashing; hashes, passwords and link tokens reach no log line,
// audit row or export.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { notePeerAddress } from '../src/net/source-address.ts';
import { verifies } from './requirements.ts';
import { api, BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';

setDefaultTimeout(300_000);

let g: TestGateway;
let A: Onboarded;
let manage: string;
const logLines: string[] = [];
const tokens: string[] = [];
const PASSWORDS = { admin: 'admin password 0001', contrib: 'contrib password 0002' };

const tokenOf = (url: string) => url.slice(url.indexOf('#/join/') + '#/join/'.length);

let peer = 0;
/** POST /console/auth/password from `address` (each test its own, so the limits of one do not meet another). */
async function signIn(org: string, email: string, password: string, address = `198.51.100.${++peer}`) {
  const request = new Request(`${BASE}/console/auth/password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ org, email, password }),
  });
  notePeerAddress(request, address);
  const started = performance.now();
  const response = await g.handle(request);
  return { response, ms: performance.now() - started, body: await response.text() };
}

const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!;

async function invite(email: string, roles: string[], password: string) {
  const res = await api(g, 'POST', '/api/org/members', manage, { email, roles });
  const { member, invitation } = (await res.json()) as { member: { id: string }; invitation: { url: string } };
  tokens.push(tokenOf(invitation.url));
  expect((await api(g, 'POST', '/members/accept', null, { token: tokenOf(invitation.url), password })).status).toBe(200);
  return member.id;
}

let contribId: string;

beforeAll(async () => {
  g = await startTestGateway('pglite', { TOOLGATE_LOG_LEVEL: 'debug' }, undefined, { logDestination: { write: (line) => logLines.push(line) } });
  A = await onboard(g);
  manage = await tokenFor(g, A.clientId, A.clientSecret, 'org:manage');
  await invite('admin@a.example', ['admin'], PASSWORDS.admin);
  contribId = await invite('contrib@a.example', ['contributor'], PASSWORDS.contrib);
  // Invited, not yet active (no password): signs in no better and no faster than an unknown e-mail.
  expect((await api(g, 'POST', '/api/org/members', manage, { email: 'invited@a.example', roles: ['admin'] })).status).toBe(201);
}, 300_000);
afterAll(() => g?.close());

describe('console sign-in with e-mail and password', () => {
  test('a member signs in; the session acts with their roles, and is audited as them', async () => {
    const admin = await signIn(A.slug, 'ADMIN@a.example', PASSWORDS.admin);
    expect(admin.response.status).toBe(200);
    const session = await g.handle(new Request(`${BASE}/console/session`, { headers: { cookie: cookieOf(admin.response) } }));
    const info = (await session.json()) as { kind: string; actor: string; roles: string[]; csrf_token: string };
    expect(info).toMatchObject({ kind: 'member', actor: 'admin@a.example', roles: ['admin'] });
    const headers = { cookie: cookieOf(admin.response), 'x-toolgate-csrf': info.csrf_token, 'sec-fetch-site': 'same-origin' };
    const members = await g.handle(new Request(`${BASE}/api/org/members`, { headers }));
    expect(members.status).toBe(200);
    const contrib = await signIn(A.slug, 'contrib@a.example', PASSWORDS.contrib);
    const cInfo = (await (await g.handle(new Request(`${BASE}/console/session`, { headers: { cookie: cookieOf(contrib.response) } }))).json()) as {
      csrf_token: string;
    };
    const cHeaders = { cookie: cookieOf(contrib.response), 'x-toolgate-csrf': cInfo.csrf_token, 'sec-fetch-site': 'same-origin' };
    expect((await g.handle(new Request(`${BASE}/api/org/members`, { headers: cHeaders }))).status).toBe(403);
    expect((await g.handle(new Request(`${BASE}/api/connectors`, { headers: cHeaders }))).status).toBe(200);
    const audit = (await (await api(g, 'GET', '/api/audit?action=member.signed_in', manage)).json()) as { events: Array<{ actor: { id: string } }> };
    expect(audit.events.map((e) => e.actor.id)).toContain('admin@a.example');
  });

  test('a suspended member: the session stops at the next request, and the right password gets the wrong-password answer', async () => {
    const before = await signIn(A.slug, 'contrib@a.example', PASSWORDS.contrib);
    const cookie = cookieOf(before.response);
    expect((await api(g, 'PATCH', `/api/org/members/${contribId}`, manage, { status: 'suspended' })).status).toBe(200);
    expect((await g.handle(new Request(`${BASE}/console/session`, { headers: { cookie } }))).status).toBe(401);
    const again = await signIn(A.slug, 'contrib@a.example', PASSWORDS.contrib);
    expect(again.response.status).toBe(401);
    expect(JSON.parse(again.body)).toEqual({ error: 'unauthenticated', message: 'The e-mail or the password is wrong.' });
    await api(g, 'PATCH', `/api/org/members/${contribId}`, manage, { status: 'active' });
  });

  test('wrong password, unknown e-mail, unknown org, invited member: one answer, and each takes a hash (no fast path to tell them apart)', async () => {
    const cases = [
      ['member, wrong password', A.slug, 'admin@a.example', 'not the password'],
      ['unknown e-mail', A.slug, 'nobody@a.example', 'not the password'],
      ['unknown org', 'no-such-org', 'admin@a.example', 'not the password'],
      ['invited member', A.slug, 'invited@a.example', 'not the password'],
    ] as const;
    const times: Record<string, number[]> = {};
    // Four rounds (a pair locks at five failures), medians: one sample slowed by a parallel worker must not decide it.
    for (let round = 0; round < 4; round++) {
      for (const [name, org, email, password] of cases) {
        const { response, body, ms } = await signIn(org, email, password);
        expect(response.status).toBe(401);
        expect(JSON.parse(body)).toEqual({ error: 'unauthenticated', message: 'The e-mail or the password is wrong.' });
        (times[name] ??= []).push(ms);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const member = median(times['member, wrong password']!);
    // A lookup without a hash answers in a few milliseconds; with the dummy hash it takes what a member's takes.
    verifies('MEMBER-SIGN-IN-UNIFORM');
    for (const name of ['unknown e-mail', 'unknown org', 'invited member']) {
      const ratio = median(times[name]!) / member;
      expect(ratio, `${name}: ${median(times[name]!).toFixed(0)} ms vs ${member.toFixed(0)} ms`).toBeGreaterThan(0.5);
      expect(ratio).toBeLessThan(2);
    }
  });

  test('the failed-sign-in limits answer before hashing: the 6th wrong password from one address is a quick 429', async () => {
    const address = '203.0.113.77';
    const hashed: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { response, ms } = await signIn(A.slug, 'admin@a.example', `wrong ${i} password`, address);
      expect(response.status).toBe(401);
      hashed.push(ms);
    }
    const refused = await signIn(A.slug, 'admin@a.example', PASSWORDS.admin, address);
    expect(refused.response.status).toBe(429);
    expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.ms).toBeLessThan(Math.min(...hashed) / 2);
    // Another address is not locked out by it (the anti-lockout rule): the member still signs in.
    expect((await signIn(A.slug, 'admin@a.example', PASSWORDS.admin, '203.0.113.78')).response.status).toBe(200);
  });

  test('hashes, passwords and link tokens appear in no log line, audit row or export', async () => {
    const exported = await (await api(g, 'GET', '/api/audit/export-json', manage)).text();
    const redacted = await (await api(g, 'GET', '/api/audit/export-json?redact=true', manage)).text();
    const list = await (await api(g, 'GET', '/api/org/members', manage)).text();
    const haystacks = { logs: logLines.join('\n'), export: exported, redacted, members: list };
    expect(logLines.length).toBeGreaterThan(10);
    for (const [where, text] of Object.entries(haystacks)) {
      expect(text, where).not.toContain('scrypt$');
      for (const password of Object.values(PASSWORDS)) expect(text, where).not.toContain(password);
      for (const token of tokens) expect(text, where).not.toContain(token);
    }
    expect(redacted).not.toContain('admin@a.example');
  });
});
