/**
 * A member's sign-in on the org's MCP authorization server through its pages (register, authorize, sign-in, consent,
 * code, token) and the refresh_token grant, for the suites that need a member's MCP tokens (issue 40).
 */
import { expect } from 'bun:test';
import { createHash, randomBytes } from 'node:crypto';
import { BASE, type TestGateway } from './gateway.ts';

/** The redirect URI of the test agent (loopback, never contacted). */
export const REDIRECT = 'http://127.0.0.1:47999/callback';

const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';
export const cookiePair = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!;
const cookiesOf = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='))
    .join('; ');

function form(g: TestGateway, path: string, fields: Record<string, string>, cookie: string) {
  return g.handle(
    new Request(`${BASE}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: BASE, 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(fields),
    }),
  );
}

/** The whole flow through the pages on instance `g`; returns the access token. */
export async function signInThroughPages(
  g: TestGateway,
  slug: string,
  email: string,
  password: string,
): Promise<{ accessToken: string; refreshToken: string; clientId: string; consentHtml: string }> {
  const registered = await g.handle(
    new Request(`${BASE}/oauth/${slug}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Test agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    }),
  );
  expect(registered.status).toBe(201);
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st-1',
    resource: `${BASE}/mcp/${slug}`,
  });
  const page = await g.handle(new Request(`${BASE}/oauth/${slug}/authorize?${params}`));
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('name="password"');
  const wrong = await form(g, `/oauth/${slug}/sign-in`, { csrf: hidden(html, 'csrf'), email, password: 'not it at all' }, cookiePair(page));
  expect(wrong.status).toBe(401);
  expect(await wrong.text()).toContain('The e-mail or the password is wrong.');
  const signedIn = await form(g, `/oauth/${slug}/sign-in`, { csrf: hidden(html, 'csrf'), email, password }, cookiePair(page));
  expect(signedIn.status).toBe(200);
  const consentHtml = await signedIn.text();
  const consented = await form(g, `/oauth/${slug}/consent`, { csrf: hidden(consentHtml, 'csrf'), decision: 'allow', scope_0: 'mcp:call' }, cookiesOf(signedIn));
  expect(consented.status).toBe(302);
  const location = new URL(consented.headers.get('location')!);
  expect(location.searchParams.get('state')).toBe('st-1');
  const tokenResponse = await g.handle(
    new Request(`${BASE}/oauth/${slug}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: location.searchParams.get('code')!,
        redirect_uri: REDIRECT,
        client_id: clientId,
        code_verifier: verifier,
        resource: `${BASE}/mcp/${slug}`,
      }),
    }),
  );
  expect(tokenResponse.status).toBe(200);
  const tokens = (await tokenResponse.json()) as { access_token: string; refresh_token: string };
  return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, clientId, consentHtml };
}

/** The refresh_token grant on instance `g`. */
export function refresh(g: TestGateway, slug: string, clientId: string, refreshToken: string) {
  return g.handle(
    new Request(`${BASE}/oauth/${slug}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId, resource: `${BASE}/mcp/${slug}` }),
    }),
  );
}
