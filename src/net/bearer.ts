/**
 * The one reader of `Authorization: Bearer <token>` (RFC 6750, token68): authentication (auth/authenticate.ts) and the
 * refusal audit (audit/refusals.ts, pipeline/pipeline.ts) and the operator door (http/router.ts) see the same token, or the same absence of one.
 */
const BEARER = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i;

/** The token; '' when an Authorization header is there but holds no well-formed bearer token; null when there is none. */
export function bearerToken(request: Request): string | null {
  const header = request.headers.get('authorization');
  if (!header) return null;
  const match = BEARER.exec(header);
  return match ? match[1]! : '';
}
