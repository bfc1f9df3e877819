/** Headless Chromium for the console's browser tests (Debian's build, driven by playwright-core), and its sign-in. */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/** Whether Chromium is installed; when not, says which suite is skipped. */
export function chromiumOr(skipped: string): boolean {
  const present = existsSync(CHROMIUM);
  if (!present) console.warn(`[skip] ${CHROMIUM} is missing: ${skipped}`);
  return present;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** Signs the page in to the console at `base` with an OAuth client's id and secret, and waits for the Overview. */
export async function signInWithClient(page: Page, base: string, client: { clientId: string; clientSecret: string }): Promise<void> {
  await page.goto(`${base}/console`);
  // The OAuth client sign-in is behind a link: people sign in with e-mail and password (issue 40).
  await page.getByText('Sign in with an OAuth client').click();
  await page.getByLabel('Client id').fill(client.clientId);
  await page.getByLabel('Client secret').fill(client.clientSecret);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/**
 * A new page of `context` with a virtual platform authenticator (the kind a laptop's fingerprint reader is): CTAP2,
 * resident keys, user verification that always matches, presence given without a prompt.
 */
export async function withVirtualAuthenticator(context: BrowserContext): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { page, cdp, authenticatorId };
}
