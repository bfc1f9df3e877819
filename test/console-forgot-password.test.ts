// "Forgot password?" as a person meets it (issue 40; decision 0386), in headless Chromium against a gateway that mails
// through a real SMTP server in process (test/support/smtp.ts): the console's sign-in card links to the form, the form
// answers the one answer, the mail's link opens the page that sets the new password, and the new password signs in.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import type { Browser } from 'playwright-core';
import { verifies } from './requirements.ts';
import { chromiumOr, launchChromium } from './support/browser.ts';
import { onboard, startServedTestGateway, type ServedTestGateway, tokenFor, type Onboarded, type TestGateway } from './support/gateway.ts';
import { addMember } from './support/members.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';

setDefaultTimeout(300_000);
const present = chromiumOr('the console forgot-password suite is skipped');

describe.skipIf(!present)('console: forgot password', () => {
  let smtp: TestSmtp;
  let gateway: TestGateway;
  let served: ServedTestGateway;
  let browser: Browser;
  let org: Onboarded;
  let base: string;

  beforeAll(async () => {
    smtp = await startSmtp();
    served = await startServedTestGateway({ TOOLGATE_SMTP_URL: smtp.url, TOOLGATE_SMTP_FROM: 'toolgate@gateway.test' });
    ({ gateway, base } = served);
    org = await onboard(gateway);
    await addMember(gateway, await tokenFor(gateway, org.clientId, org.clientSecret), 'fay@org.example', 'fay old password 1', ['admin']);
    browser = await launchChromium();
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await smtp?.close();
  }, 30_000);

  test('sign-in card -> Forgot password? -> the mail -> the link sets a new password -> it signs in', async () => {
    verifies('MEMBER-FORGOT-PASSWORD');
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/console`);
    await page.getByLabel('Org', { exact: true }).fill(org.slug);
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { level: 1, name: 'Forgot password' }).waitFor();
    // The org typed on the sign-in card comes along.
    expect(await page.locator('#forgot-org').inputValue()).toBe(org.slug);
    await page.locator('#forgot-email').fill('fay@org.example');
    await page.getByRole('button', { name: 'Mail me a link' }).click();
    const status = page.getByRole('status');
    await status.waitFor();
    expect(await status.innerText()).toContain('If this e-mail belongs to an active member of the org');

    const mails = await smtp.mailsTo('fay@org.example', 2);
    const link = /https?:\/\/\S+#\/join\/tgl_[A-Za-z0-9_-]+/.exec(mails[1]!.text)![0];
    expect(link).toStartWith(`${base}/console#/join/`);
    // The link opens in a new tab, as from a mail client.
    const tab = await context.newPage();
    await tab.goto(link);
    await tab.getByRole('heading', { level: 1, name: 'Set your password' }).waitFor();
    // The token leaves the address bar at once.
    expect(tab.url()).not.toContain('tgl_');
    await tab.locator('#join-password').fill('fay new password 2');
    await tab.locator('#join-again').fill('fay new password 2');
    await tab.getByRole('button', { name: 'Set password' }).click();
    await tab.getByRole('heading', { level: 1, name: 'Password set' }).waitFor();
    await tab.getByRole('button', { name: 'Continue to sign in' }).click();

    await tab.getByLabel('Org', { exact: true }).fill(org.slug);
    await tab.getByLabel('E-mail').fill('fay@org.example');
    await tab.getByLabel('Password', { exact: true }).fill('fay old password 1');
    await tab.getByRole('button', { name: 'Sign in with password' }).click();
    await tab.getByText('The e-mail or the password is wrong.').first().waitFor();
    await tab.getByLabel('Password', { exact: true }).fill('fay new password 2');
    await tab.getByRole('button', { name: 'Sign in with password' }).click();
    await tab.getByRole('heading', { level: 1, name: 'Overview' }).waitFor({ timeout: 30_000 });
    await context.close();
  });
});
