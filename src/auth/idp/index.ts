/** Public surface of the bring-your-own-IdP token verification. */
export { IdpTokenError, type IdpTokenErrorReason } from './errors.ts';
export { peekIssuer, type IdpConfig, type IdpIdentity, type IdpRole } from './identity.ts';
export { createIdpVerifier, type IdpVerifier, type IdpVerifierOptions } from './verifier.ts';
