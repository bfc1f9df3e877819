/** The OAuth 2.0 token endpoint (client-credentials grant, RFC 6749 section 4.4). */
import { issueClientTokenLimited } from '../auth/tokens.ts';
import { sourceAddressOf } from '../net/source-address.ts';
import { json, OAuthError } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import type { TokenRequest } from '../../generated/client/types.gen.ts';

function basicCredentials(request: Request): { id: string; secret: string } | null {
  const header = request.headers.get('authorization');
  if (!header || !/^Basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError(400, 'invalid_request', 'Malformed HTTP Basic credentials.');
  // RFC 6749 2.3.1: both parts are form-urlencoded before Basic encoding.
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError(400, 'invalid_request', 'Malformed HTTP Basic credentials.');
  }
}

export const issueToken: Handler = async ({ request, body, deps }: RequestContext<TokenRequest>) => {
  const basic = basicCredentials(request);
  if (basic && (body.client_id !== undefined || body.client_secret !== undefined)) {
    throw new OAuthError(400, 'invalid_request', 'Send client credentials either by HTTP Basic or in the form, not both.');
  }
  if (body.grant_type !== 'client_credentials') {
    throw new OAuthError(400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported.');
  }
  const clientId = basic?.id ?? body.client_id;
  const clientSecret = basic?.secret ?? body.client_secret;
  if (!clientId || !clientSecret) throw new OAuthError(400, 'invalid_request', 'client_id and client_secret are required.');

  const address = sourceAddressOf(request, deps.config.trustedProxies);
  const issued = await issueClientTokenLimited(deps, { clientId, clientSecret, scope: body.scope, basic: basic !== null }, address);
  deps.auth.clientUsed(clientId);
  return json({ access_token: issued.accessToken, token_type: 'Bearer', expires_in: issued.ttlSeconds, scope: issued.scopes.join(' ') }, 200, {
    'cache-control': 'no-store',
    pragma: 'no-cache',
  });
};
