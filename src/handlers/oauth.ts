/** The OAuth 2.0 token endpoint (client-credentials grant, RFC 6749 section 4.4). */
import { recordAudit } from '../audit/repository.ts';
import { findOAuthClient } from '../auth/credentials.ts';
import { json, OAuthError } from '../errors.ts';
import type { Handler, RequestContext } from './context.ts';
import { digestsEqual, hashSecret } from '../util/crypto.ts';
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

  const client = await findOAuthClient(deps.store.db, clientId);
  // Hash even when the client is unknown so the answer takes the same time either way.
  const presented = hashSecret(clientSecret);
  const valid = client !== undefined && client.revokedAt === null && digestsEqual(presented, client.secretHash);
  if (!valid) {
    throw new OAuthError(401, 'invalid_client', 'Client authentication failed.', basic ? { 'WWW-Authenticate': 'Basic realm="toolgate"' } : {});
  }

  const requested = body.scope?.trim() ? [...new Set(body.scope.trim().split(/\s+/))] : client.scopes;
  const denied = requested.filter((s) => !client.scopes.includes(s));
  if (denied.length) throw new OAuthError(400, 'invalid_scope', `Scopes not allowed for this client: ${denied.join(' ').slice(0, 200)}.`);

  const ttl = deps.config.accessTokenTtlSeconds;
  const accessToken = await deps.signer.issue({ orgId: client.orgId, clientId: client.clientId, scopes: requested, ttlSeconds: ttl });
  await recordAudit(deps.store.db, {
    orgId: client.orgId,
    action: 'oauth.token_issued',
    actor: { type: 'oauth_client', id: client.clientId },
    details: { scope: requested.join(' ') },
  });
  return json({ access_token: accessToken, token_type: 'Bearer', expires_in: ttl, scope: requested.join(' ') }, 200, {
    'cache-control': 'no-store',
    pragma: 'no-cache',
  });
};
