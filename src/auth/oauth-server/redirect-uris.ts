/**
 * The one rule a client's redirect URI passes, whatever its source (dynamic registration, a client ID metadata
 * document, an admin's pre-registration, a stored row at use): decision 0363.
 */

/** Schemes a browser runs or reads locally: never a redirect target, whatever else the rule allows. */
const DANGEROUS_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:', 'view-source:']);
/** RFC 8252 section 7.3: http only to the machine the native app runs on. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** RFC 8252 section 7.1: a private-use scheme is a reverse domain name (at least one dot). */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;
const MAX_REDIRECT_URI_LENGTH = 2000;

/**
 * Why `uri` may not be a redirect URI, or null when it may. The raw text is judged as well as its parse: a space,
 * a control character or a backslash (which WHATWG parsing drops or turns into a slash), a fragment (even an empty
 * `#`) or user info (even an empty `@`) would let the text a person or an exact match sees differ from where the
 * browser goes.
 */
export function redirectUriProblem(uri: string): string | null {
  if (uri.length === 0 || uri.length > MAX_REDIRECT_URI_LENGTH) return `is empty or longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  if (/[\u0000-\u0020\u007f-\u009f\\]/.test(uri)) return 'holds a space, a control character or a backslash';
  if (uri.includes('#')) return 'has a fragment';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URL';
  }
  if (DANGEROUS_SCHEMES.has(url.protocol)) return `uses the ${url.protocol} scheme`;
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/?]*@/i.test(uri) || url.username || url.password) return 'carries user info';
  if (url.protocol === 'https:') return url.hostname ? null : 'has no host';
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? null : 'is http to a host other than localhost, 127.0.0.1 or [::1]';
  return PRIVATE_USE_SCHEME.test(url.protocol) ? null : `uses the ${url.protocol} scheme, which is neither https nor a private-use scheme with a dot`;
}

/** What a refusal says: the rule, and the first offending URI's problem (the URI itself is not echoed). */
export function redirectUrisProblem(uris: readonly string[]): string | null {
  for (const [i, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri);
    if (problem) return `redirect URI ${i + 1} ${problem}. ${REDIRECT_URI_RULE}`;
  }
  return null;
}

export const REDIRECT_URI_RULE =
  'A redirect URI must be https, or http on localhost, 127.0.0.1 or [::1], or a private-use scheme with a dot (com.example.app:/cb), with no fragment or user info.';
