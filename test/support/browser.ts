/** Headless Chromium for the console's browser tests (Debian's build, driven by playwright-core), and its sign-in. */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

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
