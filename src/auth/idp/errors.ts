/** The single error type the IdP verifier throws, and the mapping from jose's errors to its machine reasons. */
import { errors } from 'jose';

export type IdpTokenErrorReason =
  | 'expired'
  | 'bad_signature'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'missing_exp'
  | 'not_yet_valid'
  | 'unsupported_alg'
  | 'unknown_key'
  | 'jwks_unavailable'
  | 'malformed';

/** A token that was not accepted. The message is safe to return to the client: it never contains token content. */
export class IdpTokenError extends Error {
  constructor(
    readonly reason: IdpTokenErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'IdpTokenError';
  }
}

const MESSAGES: Record<IdpTokenErrorReason, string> = {
  expired: 'the token has expired',
  bad_signature: 'the token signature is invalid',
  wrong_issuer: 'the token was not issued by the configured identity provider',
  wrong_audience: 'the token is not intended for this audience',
  missing_exp: 'the token has no expiry (exp) claim',
  not_yet_valid: 'the token is not valid yet (nbf)',
  unsupported_alg: 'the token signing algorithm is not accepted (RS256 only)',
  unknown_key: "the token's signing key is not among the identity provider's keys",
  jwks_unavailable: "the identity provider's signing keys could not be retrieved",
  malformed: 'the token is malformed',
};

export const idpError = (reason: IdpTokenErrorReason, cause?: unknown, message = MESSAGES[reason]): IdpTokenError =>
  new IdpTokenError(reason, message, cause === undefined ? undefined : { cause });

/**
 * Maps whatever jwtVerify threw to an IdpTokenError. jose's own messages are not reused: some quote claim values.
 * The original error stays as `cause` for server-side diagnosis (its `payload` field holds claims, so log with care).
 */
export function toIdpTokenError(err: unknown): IdpTokenError {
  if (err instanceof IdpTokenError) return err;
  if (err instanceof errors.JWTExpired) return idpError('expired', err);
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'exp':
        return idpError(err.reason === 'missing' ? 'missing_exp' : 'malformed', err);
      case 'iss':
        return idpError('wrong_issuer', err);
      case 'aud':
        return idpError('wrong_audience', err);
      case 'nbf':
        return idpError(err.reason === 'check_failed' ? 'not_yet_valid' : 'malformed', err);
      default:
        return idpError('malformed', err);
    }
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return idpError('unsupported_alg', err);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return idpError('bad_signature', err);
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return idpError('unknown_key', err);
  }
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return idpError('jwks_unavailable', err);
  return idpError('malformed', err);
}
