/** Verifies bearer tokens issued by an org's own OIDC identity provider against its remote JWKS. */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type FetchImplementation, type JWTVerifyGetKey } from 'jose';
import { assertOutboundUrl, safeFetch, type OutboundPolicy } from '../../net/outbound.ts';
import { idpError, toIdpTokenError } from './errors.ts';
import { MAX_TOKEN_LENGTH, identityFrom, type IdpConfig, type IdpIdentity } from './identity.ts';

export interface IdpVerifierOptions {
  outbound: OutboundPolicy;
  /** Leeway for exp/nbf, in seconds. Default 30. */
  clockToleranceSec?: number;
  /** Minimum time between JWKS refetches triggered by an unknown kid. Default 30 s. */
  jwksCooldownMs?: number;
  /** Deadline for one JWKS fetch. Default 3 s. */
  jwksTimeoutMs?: number;
  /** Keys older than this are refetched before use. Default 10 min. */
  jwksCacheMaxAgeMs?: number;
  /** Largest JWKS document accepted. Default 256 KiB. */
  jwksMaxBytes?: number;
}

export interface IdpVerifier {
  /** Verifies `token` for `orgId` under `config`; throws IdpTokenError when it is not accepted. */
  verify(orgId: string, config: IdpConfig, token: string): Promise<IdpIdentity>;
  /** Drops the org's cached key set (config deleted or replaced). */
  forget(orgId: string): void;
}

interface CachedKeys {
  /** What the keys were fetched for; a config change makes the entry stale. */
  fingerprint: string;
  keys: Promise<JWTVerifyGetKey>;
}

/** How jose fetches and keeps an IdP's keys (its remote JWKS options, the fetch through safeFetch included). */
type RemoteOptions = NonNullable<Parameters<typeof createRemoteJWKSet>[1]>;

/** The key getter of one IdP configuration: its JWKS URI checked against the outbound policy, then fetched by jose. */
async function buildKeys(config: IdpConfig, policy: OutboundPolicy, remoteOptions: RemoteOptions): Promise<JWTVerifyGetKey> {
  let url: URL;
  try {
    url = await assertOutboundUrl(config.jwksUri, policy, { requireHttps: true });
  } catch (err) {
    const detail = err instanceof Error ? `: ${err.message}` : '';
    throw idpError('jwks_unavailable', err, `the identity provider's JWKS URI is not allowed${detail}`);
  }
  const remote = createRemoteJWKSet(url, remoteOptions);
  // jose rate-limits refetches for unknown kids (one per cooldown, concurrent misses share one request);
  // this wrapper only separates "no such key" from "could not get keys".
  return async (header, token) => {
    try {
      return await remote(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
        throw idpError('unknown_key', err);
      }
      throw idpError('jwks_unavailable', err);
    }
  };
}

export function createIdpVerifier(options: IdpVerifierOptions): IdpVerifier {
  const clockTolerance = options.clockToleranceSec ?? 30;
  const timeoutDuration = options.jwksTimeoutMs ?? 3_000;
  const maxBytes = options.jwksMaxBytes ?? 256 * 1024;
  const policy = options.outbound;

  // jose fetches the JWKS itself; routing that fetch through safeFetch re-checks the address on every refresh
  // (DNS may change after the first check), refuses redirects and caps the size. jose already asks for
  // redirect: 'manual' and passes its own timeout signal, which safeFetch combines with its own.
  const jwksFetch: FetchImplementation = (url, init) =>
    safeFetch(url, { method: init.method, headers: init.headers, signal: init.signal }, policy, {
      requireHttps: true,
      timeoutMs: timeoutDuration,
      maxBytes,
    });
  const remoteOptions: RemoteOptions = {
    timeoutDuration,
    cooldownDuration: options.jwksCooldownMs ?? 30_000,
    cacheMaxAge: options.jwksCacheMaxAgeMs ?? 600_000,
    [customFetch]: jwksFetch,
  };

  // One entry per org: replacing it on a config change keeps the map bounded by the number of orgs.
  const cache = new Map<string, CachedKeys>();

  function keysFor(orgId: string, config: IdpConfig): Promise<JWTVerifyGetKey> {
    const fingerprint = `${config.issuer}\n${config.jwksUri}`;
    const cached = cache.get(orgId);
    if (cached && cached.fingerprint === fingerprint) return cached.keys;
    const entry: CachedKeys = { fingerprint, keys: buildKeys(config, policy, remoteOptions) };
    cache.set(orgId, entry);
    // A refused URI is not remembered: the next attempt checks again (the operator may fix DNS or the allow-list).
    entry.keys.catch(() => {
      if (cache.get(orgId) === entry) cache.delete(orgId);
    });
    return entry.keys;
  }

  async function verify(orgId: string, config: IdpConfig, token: string): Promise<IdpIdentity> {
    if (!config.issuer || !config.audience || !config.jwksUri) {
      throw new TypeError('IdP configuration needs issuer, audience and jwksUri');
    }
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw idpError('malformed');
    // Resolved lazily: jose checks structure and alg first, so junk tokens cause no DNS lookup or JWKS fetch.
    const getKey: JWTVerifyGetKey = async (header, jws) => (await keysFor(orgId, config))(header, jws);
    try {
      const { payload } = await jwtVerify(token, getKey, {
        algorithms: ['RS256'],
        issuer: config.issuer,
        audience: config.audience,
        // jose only checks exp when present; a token without one would never expire.
        requiredClaims: ['exp'],
        clockTolerance,
      });
      return identityFrom(payload, config);
    } catch (err) {
      throw toIdpTokenError(err);
    }
  }

  return {
    verify,
    forget: (orgId) => {
      cache.delete(orgId);
    },
  };
}
