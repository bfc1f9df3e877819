// The Members page in headless Chromium (issue 40): the admin invites a person (the link shown once), the person
// opens the link and sets a password, signs in with e-mail and password, the admin changes the role and suspends;
// the suspended person's session ends at their next request.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { onboard, startTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';

setDefaultTimeout(300_000);
const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent) console.warn(`[skip] ${CHROMIUM} is missing: the console members suite is skipped`);

describe.skipIf(!chromiumPresent)('console: members', () => {
  let gateway: TestGateway;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let org: Onboarded;
  let base: string;

  beforeAll(async () => {
    let handle: (request: Request) => Promise<Response> = async () => new Response('starting', { status: 503 });
    server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request) => handle(request) });
    base = `http://127.0.0.1:${server.port}`;
    gateway = await startTestGateway('pglite', { TOOLGATE_PUBLIC_URL: base, TOOLGATE_ALLOWED_HOSTS: 'gateway.test' });
    handle = (request) => gateway.handle(request);
    org = await onboard(gateway);
    await addMember(gateway, await tokenFor(gateway, org.clientId, org.clientSecret), 'boss@org.example', 'boss password 0001', ['admin']);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    await gateway?.close();
  }, 30_000);

  async function signIn(email: string, password: string) {
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/console`);
    await page.getByLabel('Org', { exact: true }).fill(org.slug);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Sign in with password' }).click();
    return { context, page };
  }

  test('invite, join, sign in, change the role, suspend', async () => {
    const admin = await signIn('boss@org.example', 'boss password 0001');
    await admin.page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor({ timeout: 30_000 });
    expect(await admin.page.getByTestId('actor').innerText()).toContain('boss@org.example');
    await admin.page.goto(`${base}/console#/members`);
    await admin.page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    await admin.page.locator('#member-email').fill('ann@org.example');
    await admin.page.getByRole('button', { name: 'Invite', exact: true }).click();
    const link = await admin.page.getByTestId('secret-value').innerText();
    expect(link).toContain('/console#/join/tgl_');

    // The person opens the link (another browser) and sets a password; the token leaves the address bar.
    const person = await browser.newContext();
    const joinPage = await person.newPage();
    await joinPage.goto(link);
    await joinPage.getByRole('heading', { name: 'Set your password' }).waitFor();
    expect(joinPage.url()).not.toContain('tgl_');
    await joinPage.getByLabel('New password').fill('ann password 0001');
    await joinPage.getByLabel('The same password again').fill('ann password 0001');
    await joinPage.getByRole('button', { name: 'Set password' }).click();
    await joinPage.getByRole('heading', { name: 'Password set' }).waitFor();
    await person.close();

    const ann = await signIn('ann@org.example', 'ann password 0001');
    await ann.page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor({ timeout: 30_000 });
    // A contributor: no Members page in the navigation.
    expect(await ann.page.getByRole('navigation').getByRole('link').allInnerTexts()).not.toContain('Members');

    // The admin makes Ann finance, then suspends her.
    await admin.page.goto(`${base}/console#/overview`);
    await admin.page.goto(`${base}/console#/members`);
    await admin.page.getByRole('link', { name: 'ann@org.example' }).click();
    await admin.page.getByRole('heading', { level: 1, name: 'ann@org.example' }).waitFor();
    await admin.page.getByLabel('contributor').uncheck();
    await admin.page.getByLabel('finance').check();
    await admin.page.getByRole('button', { name: 'Save roles' }).click();
    await admin.page.getByText('Saved ann@org.example').waitFor();
    await admin.page.goto(`${base}/console#/members`);
    admin.page.once('dialog', (dialog) => dialog.accept());
    await admin.page.getByRole('button', { name: 'Suspend ann@org.example' }).click();
    await admin.page.getByTestId('member-ann@org.example').getByText('suspended').waitFor();

    // Ann's next request finds the session gone: the sign-in form.
    await ann.page.reload();
    await ann.page.getByRole('button', { name: 'Sign in with password' }).waitFor({ timeout: 30_000 });
    await ann.context.close();
    await admin.context.close();
  });
});
