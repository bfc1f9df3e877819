// Members' passkeys (issue 40, decision 0380) with Chromium's virtual authenticator over CDP (ctap2, internal,
// resident keys, user verification): the browser runs the WebAuthn ceremonies on a page of the gateway's origin
// (http://localhost:<port>, a secure context), the test sends the answers through the generated client (tag passkeys)
// and the console's sign-in. Two gateway instances share one PostgreSQL store: a challenge issued by one is answered
// at the other, and works once. Refused: another origin, a replayed challenge, another org's passkey, a counter that
// went back; roles; removing a passkey ends the console session signed in with it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { createClient } from '../generated/client/client/index.ts';
import * as rest from '../generated/client/sdk.gen.ts';
import { notePeerAddress } from '../src/net/source-address.ts';
import { chromiumOr, launchChromium, withVirtualAuthenticator } from './support/browser.ts';
import { api, onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { verifies } from './requirements.ts';

setDefaultTimeout(180_000);

const REFUSED = { error: 'unauthenticated', message: 'This passkey was not accepted. Try again, or sign in with your password.' };
const REDIRECT = 'http://127.0.0.1:47998/callback';

let g1: TestGateway;
let g2: TestGateway;
let server: ReturnType<typeof Bun.serve>;
let elsewhere: ReturnType<typeof Bun.serve>;
let base: string;
let browser: Browser;
let A: Onboarded;
let B: Onboarded;
let manageA: string;
const members: Record<string, string> = {};

let peer = 0;
/** A request as the console page sends it (same-origin), from an address of its own, to instance `g`. */
function send(g: TestGateway, path: string, init: { method?: string; body?: unknown; cookie?: string; form?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' };
  if (init.cookie) headers.cookie = init.cookie;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.form) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', origin: base });
  const body = init.form ? new URLSearchParams(init.form) : init.body === undefined ? undefined : JSON.stringify(init.body);
  const request = new Request(`${base}${path}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body });
  notePeerAddress(request, `198.51.100.${(++peer % 250) + 1}`);
  return g.handle(request);
}

const cookiesOf = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');

interface Session {
  cookie: string;
  csrf: string;
}

/** A console session of a member signed in with a password. */
async function passwordSession(org: string, email: string, password: string): Promise<Session> {
  const signedIn = await send(g1, '/console/auth/password', { body: { org, email, password } });
  expect(signedIn.status).toBe(200);
  const cookie = cookiesOf(signedIn);
  const info = (await (await send(g1, '/console/session', { cookie })).json()) as { csrf_token: string };
  return { cookie, csrf: info.csrf_token };
}

/** The generated client with a console session as its credential, on instance `g` (answers checked against the contract). */
function clientOf(g: TestGateway, session: Session) {
  return createClient({
    baseUrl: base,
    headers: { cookie: session.cookie, 'x-toolgate-csrf': session.csrf, 'sec-fetch-site': 'same-origin' },
    fetch: ((input: Request) => g.handle(input)) as typeof fetch,
  });
}

/** A browser page at `origin` with a virtual platform authenticator (the kind a laptop's fingerprint reader is). */
async function authenticatorPage(origin = base): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const { page, cdp, authenticatorId } = await withVirtualAuthenticator(await browser.newContext());
  await page.goto(`${origin}/robots.txt`);
  return { page, cdp, authenticatorId };
}

interface VirtualCredential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId?: string;
  privateKey: string;
  userHandle?: string;
  signCount: number;
}

/** A virtual authenticator's credential as WebAuthn.addCredential takes it (the key, its RP, user and count). */
const portable = (c: VirtualCredential, signCount = c.signCount) => ({
  credentialId: c.credentialId,
  isResidentCredential: c.isResidentCredential,
  rpId: c.rpId,
  privateKey: c.privateKey,
  userHandle: c.userHandle,
  signCount,
});

/** navigator.credentials.create() in the page with the gateway's options (JSON form), its answer in JSON form. */
const create = (page: Page, options: unknown) =>
  page.evaluate(async (o) => {
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(o as PublicKeyCredentialCreationOptionsJSON);
    return ((await navigator.credentials.create({ publicKey })) as PublicKeyCredential).toJSON();
  }, options);

const get = (page: Page, options: unknown) =>
  page.evaluate(async (o) => {
    const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(o as PublicKeyCredentialRequestOptionsJSON);
    return ((await navigator.credentials.get({ publicKey })) as PublicKeyCredential).toJSON();
  }, options);

/** Registers a passkey for the session's member through the generated client; returns its id. */
async function register(session: Session, page: Page, name: string, g = g1) {
  const client = clientOf(g, session);
  const { data: started } = await rest.startConsolePasskeyRegistration({ client, throwOnError: true });
  const response = await create(page, started.options);
  const { data } = await rest.registerConsolePasskey({ client, body: { name, response: response as never }, throwOnError: true });
  return data.id;
}

/** A console passkey sign-in: options from `from`, the answer sent to `to` (two instances, one store). */
async function passkeySignIn(page: Page, from = g1, to = g1) {
  const started = await send(from, '/console/auth/passkey/options', { method: 'POST' });
  expect(started.status).toBe(200);
  const cookie = cookiesOf(started);
  const { options } = (await started.json()) as { options: unknown };
  const response = await get(page, options);
  const answer = await send(to, '/console/auth/passkey', { body: { response }, cookie });
  return { answer, body: (await answer.json()) as unknown, response, cookie };
}

beforeAll(async () => {
  if (!chromiumOr('the member passkeys suite')) return;
  let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
  // WebAuthn needs a secure context: http://localhost is one, 127.0.0.1 is not (and an IP is no RP ID).
  base = `http://localhost:${server.port}`;
  // Another origin of the same RP ID (another port): a page a phishing site could be.
  elsewhere = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('elsewhere') });
  const env = { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: 'gateway.test' };
  g1 = await startTestGateway('postgres', env);
  g2 = await startTestGateway('postgres', env, g1.databaseUrl!);
  handle = (request) => g1.handle(request);
  A = await onboard(g1);
  B = await onboard(g1);
  manageA = await tokenFor(g1, A.clientId, A.clientSecret, 'org:manage');
  members.ada = await addMember(g1, manageA, 'ada@a.example', 'ada password 0001', ['admin']);
  // Links are followed at 2 a second from one address (members.ts): the suite's own address waits its turn.
  await Bun.sleep(1100);
  members.fin = await addMember(g1, manageA, 'fin@a.example', 'fin password 0001', ['finance']);
  await Bun.sleep(1100);
  members.bob = await addMember(g1, await tokenFor(g1, B.clientId, B.clientSecret, 'org:manage'), 'bob@b.example', 'bob password 0001', ['admin']);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  server?.stop(true);
  elsewhere?.stop(true);
  await g2?.close();
  await g1?.close();
}, 60_000);

describe.skipIf(!chromiumOr('the member passkeys suite'))('passkeys of members, with Chromium’s virtual authenticator', () => {
  test('registered through the generated client, listed, renamed; the console signs in with it across instances, audited as the member', async () => {
    verifies('PASSKEY-REGISTER', 'PASSKEY-MANAGE-OWN', 'PASSKEY-SIGN-IN', 'PASSKEY-CHALLENGE-ONCE');
    const { page, cdp, authenticatorId } = await authenticatorPage();
    const session = await passwordSession(A.slug, 'ada@a.example', 'ada password 0001');
    // Registered at one instance from options of the other: the challenge lives in the shared store.
    const client = clientOf(g1, session);
    const { data: started } = await rest.startConsolePasskeyRegistration({ client, throwOnError: true });
    expect(started.options).toMatchObject({ rp: { id: 'localhost' }, authenticatorSelection: { residentKey: 'required', userVerification: 'required' } });
    const created = await create(page, started.options);
    const registered = await rest.registerConsolePasskey({ client: clientOf(g2, session), body: { name: 'Ada laptop', response: created as never } });
    expect(registered.response.status).toBe(201);
    const id = registered.data!.id;
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(credentials.map((c) => [c.isResidentCredential, c.rpId])).toEqual([[true, 'localhost']]);

    const renamed = await rest.renameConsolePasskey({ client, path: { passkeyId: id }, body: { name: 'Ada work laptop' }, throwOnError: true });
    expect(renamed.data).toMatchObject({ id, name: 'Ada work laptop', last_used_at: null });
    const listed = await rest.listConsolePasskeys({ client, throwOnError: true });
    expect(listed.data).toMatchObject({ available: true, passkeys: [{ id, name: 'Ada work laptop' }] });
    // No key material in what is shown.
    expect(JSON.stringify(listed.data)).not.toContain(credentials[0]!.credentialId);

    const { answer, body } = await passkeySignIn(page, g2, g1);
    expect(body).toEqual({ signed_in: true });
    const info = await (await send(g1, '/console/session', { cookie: cookiesOf(answer) })).json();
    expect(info).toMatchObject({ kind: 'member', actor: 'ada@a.example', roles: ['admin'] });
    const audit = (await (await api(g1, 'GET', '/api/audit?action=member.signed_in', manageA)).json()) as {
      events: Array<{ actor: { id: string }; details: { method?: string } }>;
    };
    expect(audit.events.find((e) => e.details.method === 'passkey')?.actor.id).toBe('ada@a.example');
    const after = await rest.listConsolePasskeys({ client, throwOnError: true });
    expect(after.data.passkeys[0]!.last_used_at).not.toBeNull();
    await page.context().close();
  });

  test('refused with one answer: a replayed challenge, another origin, another org’s passkey on this org’s MCP page, a counter that went back', async () => {
    verifies('PASSKEY-REFUSALS', 'PASSKEY-COUNTER', 'PASSKEY-CHALLENGE-ONCE');
    const { page, cdp, authenticatorId } = await authenticatorPage();
    await register(await passwordSession(A.slug, 'fin@a.example', 'fin password 0001'), page, 'Fin key');

    // Replayed: the answer that signed in, sent again with its cookie, to the other instance.
    const ok = await passkeySignIn(page);
    expect(ok.answer.status).toBe(200);
    const replayed = await send(g2, '/console/auth/passkey', { body: { response: ok.response }, cookie: ok.cookie });
    expect([replayed.status, await replayed.json()]).toEqual([401, REFUSED]);

    // Another origin (another port of localhost: the same RP ID, so the authenticator answers): a page there signing in
    // with Fin's passkey (copied into its authenticator) is refused, and so is a passkey registered there.
    const [fin] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    const away = await authenticatorPage(`http://localhost:${elsewhere.port}`);
    await away.cdp.send('WebAuthn.addCredential', { authenticatorId: away.authenticatorId, credential: portable(fin!) });
    const phished = await passkeySignIn(away.page);
    expect([phished.answer.status, phished.body]).toEqual([401, REFUSED]);
    await away.page.context().close();
    const awayAgain = await authenticatorPage(`http://localhost:${elsewhere.port}`);
    const awaySession = await passwordSession(A.slug, 'fin@a.example', 'fin password 0001');
    const { data: regOptions } = await rest.startConsolePasskeyRegistration({ client: clientOf(g1, awaySession), throwOnError: true });
    const awayCreated = await create(awayAgain.page, regOptions.options);
    const awayRegistered = await rest.registerConsolePasskey({ client: clientOf(g1, awaySession), body: { name: 'Phished', response: awayCreated as never } });
    expect([awayRegistered.response.status, (awayRegistered.error as { error: string }).error]).toEqual([422, 'passkey_invalid']);
    await awayAgain.page.context().close();

    // A counter that went back (a cloned authenticator): the same key, its count reset to 0.
    const [now] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    expect(now!.signCount).toBeGreaterThanOrEqual(2);
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: now!.credentialId });
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: portable(now!, 0) });
    const cloned = await passkeySignIn(page);
    expect([cloned.answer.status, cloned.body]).toEqual([401, REFUSED]);
    const refusals = (await (await api(g1, 'GET', '/api/audit?action=member.sign_in_failed', manageA)).json()) as {
      events: Array<{ details: { reason?: string } }>;
    };
    expect(refusals.events.map((e) => e.details.reason)).toEqual(expect.arrayContaining(['replayed', 'counter']));

    // Another org's member's passkey on org A's MCP sign-in page: the answer a wrong one gets.
    const bobPage = await authenticatorPage();
    await register(await passwordSession(B.slug, 'bob@b.example', 'bob password 0001'), bobPage.page, 'Bob phone');
    const mcp = await mcpSignInPage(A.slug);
    const foreign = await get(bobPage.page, optionsIn(mcp.html));
    const refused = await send(g1, `/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(mcp.html), response: JSON.stringify(foreign) }, cookie: mcp.cookie });
    expect(refused.status).toBe(401);
    const again = await refused.text();
    expect(again).toContain(REFUSED.message);
    // ... and Fin's (a restored count, so the key is the member's own again) signs in on the same page's fresh challenge.
    await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: now!.credentialId });
    await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: portable(now!, now!.signCount + 10) });
    const own = await get(page, optionsIn(again));
    const consent = await send(g1, `/oauth/${A.slug}/passkey`, { form: { csrf: csrfIn(again), response: JSON.stringify(own) }, cookie: mcp.cookie });
    expect(consent.status).toBe(200);
    const consentHtml = await consent.text();
    expect(consentHtml).toContain('Allow this client to use your tools?');
    // Allowed: a grant made with Fin's passkey (its removal, in the next test, revokes it).
    const ticked = Object.fromEntries([...consentHtml.matchAll(/name="(scope_\d+)" value="([^"]+)"/g)].map((m) => [m[1]!, m[2]!]));
    const form = { csrf: csrfIn(consentHtml), decision: 'allow', ...ticked };
    const allowed = await send(g1, `/oauth/${A.slug}/consent`, { form, cookie: cookiesOf(consent) });
    expect(allowed.status).toBe(302);
    expect(new URL(allowed.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    await bobPage.page.context().close();
    await page.context().close();
  });

  test('roles: a session of an OAuth client has no passkeys; an admin lists and removes a member’s, a contributor may not; another org’s member is not found', async () => {
    verifies('PASSKEY-ADMIN-REMOVE', 'PASSKEY-MANAGE-OWN', 'PASSKEY-REMOVAL-ENDS-SESSIONS');
    const client = await send(g1, '/console/auth/client', { body: { client_id: A.clientId, client_secret: A.clientSecret } });
    const clientSession = { cookie: cookiesOf(client), csrf: '' };
    clientSession.csrf = ((await (await send(g1, '/console/session', { cookie: clientSession.cookie })).json()) as { csrf_token: string }).csrf_token;
    const notMember = await rest.listConsolePasskeys({ client: clientOf(g1, clientSession) });
    expect([notMember.response.status, (notMember.error as { error: string }).error]).toEqual([403, 'not_a_member']);
    const nobody = await rest.listConsolePasskeys({ client: clientOf(g1, { cookie: '', csrf: '' }) });
    expect(nobody.response.status).toBe(401);

    const admin = createClient({ baseUrl: base, headers: { authorization: `Bearer ${manageA}` }, fetch: ((r: Request) => g1.handle(r)) as typeof fetch });
    const { data: fin } = await rest.listMemberPasskeys({ client: admin, path: { memberId: members.fin! }, throwOnError: true });
    expect(fin.passkeys.map((p) => p.name)).toContain('Fin key');
    const foreign = await rest.listMemberPasskeys({ client: admin, path: { memberId: members.bob! } });
    expect(foreign.response.status).toBe(404);
    const contributorId = await addMember(g1, manageA, 'cy@a.example', 'cy password 0001', ['contributor']);
    expect(contributorId).toBeTruthy();
    const contributor = await passwordSession(A.slug, 'cy@a.example', 'cy password 0001');
    const bearer = await send(g1, `/api/org/members/${members.fin}/passkeys`, { cookie: contributor.cookie });
    expect(bearer.status).toBe(403);
    const removed = await rest.removeMemberPasskey({ client: admin, path: { memberId: members.fin!, passkeyId: fin.passkeys[0]!.id }, throwOnError: true });
    expect(removed.data.name).toBe('Fin key');
    // The MCP grant signed in with it is revoked; its removal is audited with the admin as the actor.
    const grants = (await (await api(g1, 'GET', '/api/org/mcp-grants', manageA)).json()) as {
      grants: Array<{ email: string | null; revoked_reason: string | null }>;
    };
    expect(grants.grants.filter((grant) => grant.email === 'fin@a.example').map((grant) => grant.revoked_reason)).toEqual(['passkey_removed']);
  });

  test('removing a passkey ends the console session signed in with it (on every instance), not the password session; it signs in no more', async () => {
    verifies('PASSKEY-REMOVAL-ENDS-SESSIONS');
    const { page } = await authenticatorPage();
    const password = await passwordSession(A.slug, 'ada@a.example', 'ada password 0001');
    const id = await register(password, page, 'Short-lived');
    const viaPasskey = await passkeySignIn(page);
    const passkeyCookie = cookiesOf(viaPasskey.answer);
    expect((await send(g2, '/console/session', { cookie: passkeyCookie })).status).toBe(200);
    const removed = await rest.removeConsolePasskey({ client: clientOf(g2, password), path: { passkeyId: id }, throwOnError: true });
    expect(removed.data.name).toBe('Short-lived');
    expect((await send(g1, '/console/session', { cookie: passkeyCookie })).status).toBe(401);
    expect((await send(g2, '/console/session', { cookie: password.cookie })).status).toBe(200);
    const again = await passkeySignIn(page);
    expect([again.answer.status, again.body]).toEqual([401, REFUSED]);
    await page.context().close();
  });
});

/** The org's MCP sign-in page for a freshly registered client: its HTML and the transaction cookie. */
async function mcpSignInPage(slug: string) {
  const registered = await api(g1, 'POST', `/oauth/${slug}/register`, null, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    resource: `${base}/mcp/${slug}`,
  });
  // From an address of its own: the page's passkey options are a few per second per address.
  const request = new Request(`${base}/oauth/${slug}/authorize?${params}`);
  notePeerAddress(request, `198.51.100.${(++peer % 250) + 1}`);
  const page = await g1.handle(request);
  expect(page.status).toBe(200);
  return { html: await page.text(), cookie: cookiesOf(page) };
}

const optionsIn = (html: string) => JSON.parse(/<script type="application\/json" id="passkey-options">([^<]*)<\/script>/.exec(html)![1]!);
const csrfIn = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;
