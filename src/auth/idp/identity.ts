/** Types of an org's IdP configuration and of the identity read from a verified token's claims. */
import { decodeJwt, type JWTPayload } from 'jose';
import { idpError } from './errors.ts';

type IdpRole = 'contributor' | 'admin' | 'finance';
const ROLES: ReadonlySet<string> = new Set<IdpRole>(['contributor', 'admin', 'finance']);

/** An org's identity provider, as stored in idp_configs. */
export interface IdpConfig {
  issuer: string;
  jwksUri: string;
  audience: string;
  /** Claim holding the role(s); default 'role'. A dotted path (realm_access.roles) is followed when no top-level claim has that exact name. */
  roleClaim?: string;
  /** Claim holding the e-mail address; default 'email'. */
  emailClaim?: string;
  /** Role given when the token has no role claim at all; default null (no role). */
  defaultRole?: IdpRole | null;
}

export interface IdpIdentity {
  subject: string;
  email: string | null;
  /** Recognised roles from the role claim, in claim order; the caller decides what several roles mean. */
  roles: IdpRole[];
  /** True when `roles` is the configured defaultRole because the token carried no role claim. */
  roleFromDefault: boolean;
  scopes: string[];
  claims: Readonly<JWTPayload>;
}

/** Tokens longer than this are refused before parsing: no legitimate IdP token comes close. */
export const MAX_TOKEN_LENGTH = 16 * 1024;

/**
 * Reads the `iss` of a token WITHOUT verifying it, only to route the bearer token to the right verifier
 * (the gateway's own or the org's IdP). Never trust anything else from an unverified token.
 */
export function peekIssuer(token: string): string | null {
  if (token.length > MAX_TOKEN_LENGTH) return null;
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' && iss !== '' ? iss : null;
  } catch {
    return null;
  }
}

/** Exact claim name first (Auth0-style URL claims contain dots), then a dotted path into nested objects. */
function claimAt(payload: JWTPayload, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  if (!name.includes('.')) return undefined;
  let node: unknown = payload;
  for (const part of name.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** A claim that is a space/comma separated string or an array of strings, as a list of strings. */
function stringList(value: unknown, separator: RegExp): string[] {
  if (typeof value === 'string') return value.split(separator).filter((s) => s !== '');
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string' && v !== '');
  return [];
}

function rolesFrom(payload: JWTPayload, config: IdpConfig): { roles: IdpRole[]; roleFromDefault: boolean } {
  const raw = claimAt(payload, config.roleClaim ?? 'role');
  if (raw === undefined || raw === null) {
    const fallback = config.defaultRole ?? null;
    return { roles: fallback ? [fallback] : [], roleFromDefault: fallback !== null };
  }
  // A present claim with no recognised value yields no role, not the default: the IdP said something we do not
  // map, and guessing upward would grant access nobody configured.
  const roles = stringList(raw, /[\s,]+/)
    .map((r) => r.toLowerCase())
    .filter((r): r is IdpRole => ROLES.has(r));
  return { roles: [...new Set(roles)], roleFromDefault: false };
}

function emailFrom(payload: JWTPayload, config: IdpConfig): string | null {
  const claim = config.emailClaim ?? 'email';
  const value = claimAt(payload, claim);
  if (typeof value !== 'string' || value === '') return null;
  // An address the IdP itself marks unverified must not be used to match accounts (account takeover via e-mail).
  if (claim === 'email' && payload.email_verified === false) return null;
  return value;
}

/**
 * The claims row filters may bind as `:caller.<claim>` (connectors/shared/policy.ts): every top-level string, number
 * and boolean claim of a verified token, as text (at most 64 of them, values up to 256 characters; longer values are
 * left out, so a filter on them matches no rows). Nested claims and arrays are not attributes.
 */
export function claimAttributes(payload: JWTPayload): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  for (const [k, v] of Object.entries(payload)) {
    if (count >= 64) break;
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(k)) continue;
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') continue;
    const text = String(v);
    if (text.length > 256) continue;
    out[k] = text;
    count++;
  }
  return out;
}

/** Builds the identity from a payload that jose has already verified. */
export function identityFrom(payload: JWTPayload, config: IdpConfig): IdpIdentity {
  if (typeof payload.sub !== 'string' || payload.sub === '') throw idpError('malformed');
  // OAuth uses `scope` (space-separated); Azure AD and others use `scp` (string or array).
  const scopes = [...stringList(payload.scope, / +/), ...stringList(payload.scp, / +/)];
  return {
    subject: payload.sub,
    email: emailFrom(payload, config),
    ...rolesFrom(payload, config),
    scopes: [...new Set(scopes)],
    claims: payload,
  };
}
