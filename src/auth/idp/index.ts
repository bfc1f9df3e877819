/** Public surface of the bring-your-own-IdP token verification. */
export { IdpTokenError } from './errors.ts';
export { peekIssuer, type IdpConfig } from './identity.ts';
export { createIdpVerifier, type IdpVerifierOptions } from './verifier.ts';
