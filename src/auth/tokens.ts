/** Access tokens for OAuth clients (client-credentials grant): the client's secret checked, the scope narrowed, the issue audited. */
import { recordAudit } from '../audit/repository.ts';
import { Refusal } from '../audit/refusals.ts';
import type { Config } from '../config.ts';
import { OAuthError } from '../errors.ts';
import { limitedAttempt, refusalMessage, type AuthFailureLimiter } from '../limits/auth-failures.ts';
import { countLimitRefusal } from '../observability/metrics.ts';
import type { Store } from '../store/db.ts';
import { digestsEqual, hashSecret } from '../util/crypto.ts';
import { findOAuthClient } from './credentials.ts';
import { isOrgSuspended } from './repository.ts';
import type { TokenSigner } from './signing.ts';

export interface TokenServiceDeps {
  store: Pick<Store, 'db'>;
  signer: Pick<TokenSigner, 'issue'>;
  config: Pick<Config, 'accessTokenTtlSeconds'>;
}

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes asked for; none (or blank) asks for all of the client's. */
  scope?: string;
  /** Sent by HTTP Basic: a failure then answers with WWW-Authenticate: Basic. */
  basic: boolean;
}

async function issueClientToken(deps: TokenServiceDeps, input: ClientCredentials) {
  const client = await findOAuthClient(deps.store.db, input.clientId);
  // Hash even when the client is unknown so the answer takes the same time either way.
  const presented = hashSecret(input.clientSecret);
  const valid = client !== undefined && client.revokedAt === null && digestsEqual(presented, client.secretHash);
  if (!valid) {
    throw new OAuthError(401, 'invalid_client', 'Client authentication failed.', input.basic ? { 'WWW-Authenticate': 'Basic realm="toolgate"' } : {});
  }

  if (await isOrgSuspended(deps.store.db, client.orgId)) {
    throw new OAuthError(400, 'unauthorized_client', "The client's org is suspended by the gateway operator: no token is issued until it is resumed.");
  }

  const requested = input.scope?.trim() ? [...new Set(input.scope.trim().split(/\s+/))] : client.scopes;
  const denied = requested.filter((s) => !client.scopes.includes(s));
  if (denied.length) throw new OAuthError(400, 'invalid_scope', `Scopes not allowed for this client: ${denied.join(' ').slice(0, 200)}.`);

  const ttlSeconds = deps.config.accessTokenTtlSeconds;
  const accessToken = await deps.signer.issue({ orgId: client.orgId, clientId: client.clientId, scopes: requested, ttlSeconds });
  await recordAudit(deps.store.db, {
    orgId: client.orgId,
    action: 'oauth.token_issued',
    actor: { type: 'oauth_client', id: client.clientId },
    details: { scope: requested.join(' ') },
  });
  return { accessToken, ttlSeconds, scopes: requested };
}

export interface LimitedTokenDeps extends TokenServiceDeps {
  authFailures: AuthFailureLimiter;
}

/**
 * issueClientToken under the failed-authentication limits (limits/auth-failures.ts): a wrong secret counts against
 * the client id and the source address; a refused attempt is a 429 with Retry-After, audited in the org of the
 * client it named (when that client exists), and its secret is never checked.
 */
export async function issueClientTokenLimited(deps: LimitedTokenDeps, input: ClientCredentials, address: string) {
  return limitedAttempt(
    deps.authFailures,
    { client: `oauth:${input.clientId}`, address },
    () => issueClientToken(deps, input),
    // invalid_scope comes after the secret was found right.
    (err) => (err instanceof OAuthError ? (err.status === 401 ? 'failed' : 'succeeded') : 'unjudged'),
    async (refusal) => {
      countLimitRefusal('auth_failures');
      const message = refusalMessage(refusal);
      const client = await findOAuthClient(deps.store.db, input.clientId);
      // Audited by the HTTP pipeline (pipeline/pipeline.ts), in the org of the client it named.
      throw new Refusal(new OAuthError(429, 'rate_limited', message, { 'retry-after': String(refusal.retryAfterSeconds) }), client?.orgId ?? null, null);
    },
  );
}
