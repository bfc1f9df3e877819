/**
 * The one reader and writer of cookies, beside the bearer's (net/bearer.ts): the console session and login
 * transaction (console/context.ts) and the MCP sign-in's pages (handlers/oauth-signin.ts) read and set theirs here.
 */

/** The value of the request's cookie `name` (percent-decoded when it decodes), or null when it sends none. */
export function cookieValue(request: Request, name: string): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  }
  return null;
}

/** The answer with these Set-Cookie lines appended. */
export function withCookies(response: Response, cookies: readonly string[]): Response {
  for (const cookie of cookies) response.headers.append('set-cookie', cookie);
  return response;
}
