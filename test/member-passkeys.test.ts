// Members' passkeys over HTTP (issue 40 items 3-4, decision 0380), with a software authenticator (real keys, CBOR and
// signatures: test/support/soft-authenticator.ts): a signed-in member registers one from the console and signs the
// console and the org's MCP sign-in page in with it; an invitation is accepted with a passkey alone; admins list and
// remove a member's passkeys through the generated client. Refused with one answer: a replayed assertion, another
// origin, no user verification, a removed passkey, a suspended member, another org's member's passkey. The failed
// sign-in limits hold before any check.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import * as sdk from '../sdk/index.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { relyingParty } from '../src/members/passkeys.ts';
import { api, BASE, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { sdkFor } from './support/sdk.ts';
import { SoftAuthenticator } from './support/soft-authenticator.ts';

setDefaultTimeout(120_000);

let g: TestGateway;
let A: Onboarded;
let B: Onboarded;
let manageA: string;
const ids: Record<string, string> = {};
const REDIRECT = 'http://127.0.0.1:47998/callback';
const REFUSED = { error: 'unauthenticated', message: 'This passkey was not accepted. Try again, or sign in with your password.' };

let peer = 0;
/** A request as the console page sends it, from an address of its own unless one is given. */
function send(path: string, init: { method?: string; body?: unknown; cookie?: string; csrf?: string; address?: string; form?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' };
  if (init.cookie) headers.cookie = init.cookie;
  if (init.csrf) headers['x-toolgate-csrf'] = init.csrf;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.form) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', origin: BASE });
  const body = init.form ? new URLSearchParams(init.form) : init.body === undefined ? undefined : JSON.stringify(init.body);
  const request = new Request(`${BASE}${path}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body });
  notePeerAddress(request, init.address ?? `198.51.100.${++peer % 250}`);
  return g.handle(request);
}

const cookiesOf = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');

/** A console session of a member signed in with a password: its cookie and CSRF token. */
async function passwordSession(org: string, email: string, password: string) {
  const signedIn = await send('/console/auth/password', { body: { org, email, password } });
  expect(signedIn.status).toBe(200);
  const cookie = cookiesOf(signedIn);
  const info = (await (await send('/console/session', { cookie })).json()) as { csrf_token: string };
  return { cookie, csrf: info.csrf_token };
}

/** Registers a passkey from the console session on `authenticator`; returns the created passkey's id. */
async function registerFromConsole(session: { cookie: string; csrf: string }, authenticator: SoftAuthenticator, name: string) {
  const started = await send('/console/passkeys/options', { method: 'POST', ...session });
  expect(started.status).toBe(200);
  const { options } = (await started.json()) as { options: Parameters<SoftAuthenticator['create']>[0] & { authenticatorSelection: unknown } };
  expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
  const created = await send('/console/passkeys', { body: { name, response: authenticator.create(options) }, ...session });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

/** Options of a console passkey sign-in, with the browser's binding cookie. */
async function consoleOptions() {
  const started = await send('/console/auth/passkey/options', { method: 'POST' });
  expect(started.status).toBe(200);
  return { cookie: cookiesOf(started), options: ((await started.json()) as { options: { challenge: string; rpId: string } }).options };
}

async function consolePasskeySignIn(authenticator: SoftAuthenticator, tweaks: Parameters<SoftAuthenticator['get']>[1] = {}, address?: string) {
  const { cookie, options } = await consoleOptions();
  const response = authenticator.get(options, tweaks);
  const answer = await send('/console/auth/passkey', { body: { response }, cookie, address });
  return { answer, body: await answer.json(), response, cookie };
}

/** The org's MCP sign-in page for a freshly registered client: its HTML and the transaction cookie. */
async function mcpSignInPage(slug: string) {
  const registered = await api(g, 'POST', `/oauth/${slug}/register`, null, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    resource: `${BASE}/mcp/${slug}`,
  });
  const page = await g.handle(new Request(`${BASE}/oauth/${slug}/authorize?${params}`));
  expect(page.status).toBe(200);
  return { html: await page.text(), cookie: cookiesOf(page), csp: page.headers.get('content-security-policy') ?? '' };
}

const optionsIn = (html: string) => JSON.parse(/<script type="application\/json" id="passkey-options">([^<]*)<\/script>/.exec(html)![1]!);
const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

const authenticators = { ada: new SoftAuthenticator(BASE), bob: new SoftAuthenticator(BASE), cy: new SoftAuthenticator(BASE) };

beforeAll(async () => {
  g = await startTestGateway();
  A = await onboard(g);
  B = await onboard(g);
  manageA = await tokenFor(g, A.clientId, A.clientSecret, 'org:manage');
  ids.ada = await addMember(g, manageA, 'ada@a.example', 'ada password 0001', ['admin']);
  // A second admin, so that Ada (not the org's last admin) can be suspended.
  await addMember(g, manageA, 'eve@a.example', 'eve password 0001', ['admin']);
  ids.bob = await addMember(g, await tokenFor(g, B.clientId, B.clientSecret, 'org:manage'), 'bob@b.example', 'bob password 0001', ['admin']);
  ids.adaKey = await registerFromConsole(await passwordSession(A.slug, 'ada@a.example', 'ada password 0001'), authenticators.ada, 'Ada laptop');
  ids.bobKey = await registerFromConsole(await passwordSession(B.slug, 'bob@b.example', 'bob password 0001'), authenticators.bob, 'Bob phone');
}, 180_000);
afterAll(() => g?.close());

describe('passkeys of members', () => {
  test('registered from the console, listed there; the console signs in with it, usernameless, audited as the member', async () => {
    const session = await passwordSession(A.slug, 'ada@a.example', 'ada password 0001');
    const listed = (await (await send('/console/passkeys', session)).json()) as { passkeys: Array<{ name: string; last_used_at: null }>; available: boolean };
    expect(listed).toMatchObject({ available: true, passkeys: [{ name: 'Ada laptop', last_used_at: null }] });
    const { answer, body } = await consolePasskeySignIn(authenticators.ada);
    expect(body).toEqual({ signed_in: true });
    const info = await (await send('/console/session', { cookie: cookiesOf(answer) })).json();
    expect(info).toMatchObject({ kind: 'member', actor: 'ada@a.example', roles: ['admin'] });
    const audit = (await (await api(g, 'GET', '/api/audit?action=member.signed_in', manageA)).json()) as {
      events: Array<{ actor: { id: string }; details: { method?: string } }>;
    };
    expect(audit.events.find((e) => e.details.method === 'passkey')?.actor.id).toBe('ada@a.example');
    const after = (await (await send('/console/passkeys', session)).json()) as { passkeys: Array<{ last_used_at: string | null }> };
    expect(after.passkeys[0]!.last_used_at).not.toBeNull();
  });

  test('the MCP sign-in page offers the passkey (its script allowed by hash) and a member signs in with it to the consent page', async () => {
    const { html, cookie, csp } = await mcpSignInPage(A.slug);
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    expect(csp).toContain(`script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`);
    // The script parses (a lost escape in its template literal once broke it without a word from the browser).
    expect(() => new Function(script)).not.toThrow();
    const response = authenticators.ada.get(optionsIn(html));
    const signedIn = await send(`/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(html), response: JSON.stringify(response) }, cookie });
    expect(signedIn.status).toBe(200);
    expect(await signedIn.text()).toContain('Allow this client to use your tools?');
  });

  test('refused with one answer: replayed, another origin, no user verification, a removed passkey, a suspended member', async () => {
    const answers: unknown[] = [];
    // Replayed: the very assertion that signed in, sent again with its cookie.
    const ok = await consolePasskeySignIn(authenticators.ada);
    expect(ok.answer.status).toBe(200);
    const replayed = await send('/console/auth/passkey', { body: { response: ok.response }, cookie: ok.cookie });
    answers.push([replayed.status, await replayed.json()]);
    for (const tweaks of [{ origin: 'https://gateway.test.evil.example' }, { userVerified: false }]) {
      const { answer, body } = await consolePasskeySignIn(authenticators.ada, tweaks);
      answers.push([answer.status, body]);
    }
    // A challenge this browser did not ask for (another browser's binding cookie is missing).
    const { options } = await consoleOptions();
    const foreign = await send('/console/auth/passkey', { body: { response: authenticators.ada.get(options) } });
    answers.push([foreign.status, await foreign.json()]);
    // Suspended, then resumed.
    expect((await api(g, 'PATCH', `/api/org/members/${ids.ada}`, manageA, { status: 'suspended' })).status).toBe(200);
    const suspended = await consolePasskeySignIn(authenticators.ada);
    answers.push([suspended.answer.status, suspended.body]);
    expect((await api(g, 'PATCH', `/api/org/members/${ids.ada}`, manageA, { status: 'active' })).status).toBe(200);
    expect((await consolePasskeySignIn(authenticators.ada)).answer.status).toBe(200);
    for (const [i, answer] of answers.entries()) expect([i, answer]).toEqual([i, [401, REFUSED]]);
  });

  test("another org's member's passkey is refused on this org's MCP page with the answer a wrong one gets", async () => {
    const page = await mcpSignInPage(A.slug);
    const foreign = authenticators.bob.get(optionsIn(page.html));
    const refused = await send(`/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(page.html), response: JSON.stringify(foreign) }, cookie: page.cookie });
    expect(refused.status).toBe(401);
    const html = await refused.text();
    expect(html).toContain(REFUSED.message);
    // The page comes again with a fresh challenge; Ada's passkey signs in with it, the replay of Bob's does not.
    const again = authenticators.ada.get(optionsIn(html));
    const replay = await send(`/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(html), response: JSON.stringify(foreign) }, cookie: page.cookie });
    expect([replay.status, (await replay.text()).includes(REFUSED.message)]).toEqual([401, true]);
    const ok = await send(`/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(html), response: JSON.stringify(again) }, cookie: page.cookie });
    expect(ok.status).toBe(200);
  });

  test('an invitation accepted with a passkey alone; the admin lists and removes it (generated client); removed, it signs in no more', async () => {
    const client = sdkFor(g, manageA).client;
    const { data } = await sdk.inviteMember({ client, body: { email: 'cy@a.example', roles: ['contributor'] }, throwOnError: true });
    const token = data.invitation.url.split('#/join/')[1]!;
    const { data: started } = await sdk.startMemberLinkPasskey({ client, body: { token }, throwOnError: true });
    const response = authenticators.cy.create(started.options as unknown as Parameters<SoftAuthenticator['create']>[0]);
    const accepted = await sdk.acceptMemberLink({ client, body: { token, passkey: { name: 'Cy key', response } }, throwOnError: true });
    expect(accepted.data).toMatchObject({ email: 'cy@a.example', purpose: 'invitation' });
    const member = (await sdk.listMembers({ client, throwOnError: true })).data.members.find((m) => m.email === 'cy@a.example')!;
    expect(member).toMatchObject({ status: 'active', has_password: false });
    expect((await consolePasskeySignIn(authenticators.cy)).answer.status).toBe(200);
    const { data: list } = await sdk.listMemberPasskeys({ client, path: { memberId: member.id }, throwOnError: true });
    expect(list.passkeys.map((p) => p.name)).toEqual(['Cy key']);
    expect(JSON.stringify(list)).not.toContain(authenticators.cy.credentials[0]!.id.toString('base64url'));
    await sdk.removeMemberPasskey({ client, path: { memberId: member.id, passkeyId: list.passkeys[0]!.id }, throwOnError: true });
    const removed = await consolePasskeySignIn(authenticators.cy);
    expect([removed.answer.status, removed.body]).toEqual([401, REFUSED]);
    // Another org's admin cannot see or remove org A's member's passkeys.
    const other = sdkFor(g, await tokenFor(g, B.clientId, B.clientSecret, 'org:manage')).client;
    expect((await sdk.listMemberPasskeys({ client: other, path: { memberId: ids.ada! } })).response.status).toBe(404);
    expect((await sdk.removeMemberPasskey({ client: other, path: { memberId: ids.ada!, passkeyId: ids.adaKey! } })).response.status).toBe(404);
  });

  test('registration refused: another origin, a challenge of another session, no user verification (422); a used link', async () => {
    const one = await passwordSession(A.slug, 'ada@a.example', 'ada password 0001');
    const two = await passwordSession(A.slug, 'ada@a.example', 'ada password 0001');
    const optionsOf = async (session: typeof one) =>
      ((await (await send('/console/passkeys/options', { method: 'POST', ...session })).json()) as { options: Parameters<SoftAuthenticator['create']>[0] })
        .options;
    const soft = new SoftAuthenticator(BASE);
    const cases = [
      soft.create(await optionsOf(one), { origin: 'http://evil.example' }),
      soft.create(await optionsOf(two)),
      soft.create(await optionsOf(one), { userVerified: false }),
    ];
    for (const response of cases) {
      const refused = await send('/console/passkeys', { body: { response }, ...one });
      expect(refused.status).toBe(422);
      expect(((await refused.json()) as { error: string }).error).toBe('passkey_invalid');
    }
    expect((await send('/console/passkeys/options', { method: 'POST', cookie: one.cookie })).status).toBe(403);
    const used = await api(g, 'POST', '/members/accept/passkey-options', null, { token: 'tgl_not-a-live-link-0000' });
    expect(used.status).toBe(404);
    expect(relyingParty('http://127.0.0.1:8080')).toBeNull();
    expect(relyingParty('https://gw.example.com')).toEqual({ id: 'gw.example.com', origin: 'https://gw.example.com' });
  });

  test('the failed-sign-in limits hold first: the 6th refused passkey of an account from one address is a 429; another address signs in', async () => {
    const address = '203.0.113.90';
    for (let i = 0; i < 5; i++) {
      const { answer } = await consolePasskeySignIn(authenticators.ada, { origin: 'http://evil.example' }, address);
      expect(answer.status).toBe(401);
    }
    const locked = await consolePasskeySignIn(authenticators.ada, {}, address);
    expect(locked.answer.status).toBe(429);
    expect(Number(locked.answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The password of the same account counts with it at that address: same bucket.
    const password = await send('/console/auth/password', { body: { org: A.slug, email: 'ada@a.example', password: 'ada password 0001' }, address });
    expect(password.status).toBe(429);
    expect((await consolePasskeySignIn(authenticators.ada, {}, '203.0.113.91')).answer.status).toBe(200);
  });
});
