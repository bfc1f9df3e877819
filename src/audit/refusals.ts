/**
 * Audit rows of refused requests (401, 403, 429 on the MCP endpoint and /api): the reason and which credential was
 * presented, by its non-secret prefix (the 12 characters API-key lists show) or, for a bearer token, the client id
 * it claims; never the secret. Written through AuditRecorder.denial (bounded, not awaited), from one place: the HTTP
 * pipeline (pipeline/pipeline.ts), which every refusal reaches as a thrown Refusal.
 */
import { actorOf, type Principal } from '../principal.ts';
import type { AuditInput } from './repository.ts';
import type { AppError } from '../errors.ts';
import { bearerToken } from '../net/bearer.ts';

/** The API-key prefix kept in lists (docs/decisions/0012-api-key-format-and-revocation.md): identifies a key, reveals nothing of its secret. */
const KEY_PREFIX_CHARS = 12;

/** The payload of a JWT, decoded without verifying it (only what it claims); null when it is not one. */
export function claimsOf(token: string): Record<string, unknown> | null {
  const part = token.split('.')[1];
  if (!part || part.length > 8192) return null;
  try {
    const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function credentialOf(request: Request): Record<string, unknown> {
  const apiKey = request.headers.get('x-api-key');
  if (apiKey !== null) return { credential: 'api_key', key_prefix: apiKey.trim().slice(0, KEY_PREFIX_CHARS) };
  // A malformed Authorization header presents no credential (authentication reads it with the same parser).
  const token = bearerToken(request);
  if (!token) return { credential: 'none' };
  const sub = claimsOf(token)?.sub;
  return { credential: 'bearer', ...(typeof sub === 'string' ? { claimed_subject: sub.slice(0, 100) } : {}) };
}

export function refusalRow(orgId: string, request: Request, status: number, code: string, reason: string, principal: Principal | null): AuditInput {
  const action = status === 429 ? 'rate_limit.refused' : 'auth.refused';
  return {
    orgId,
    action,
    actor: principal ? actorOf(principal) : { type: 'anonymous', id: null },
    targetType: 'endpoint',
    targetId: new URL(request.url).pathname.slice(0, 200),
    outcome: 'denied',
    details: { status, code, reason: reason.slice(0, 300), method: request.method, ...credentialOf(request) },
  };
}

/** The org a refusal is recorded in: known, looked up only now (the refusal path), or none (not recorded). */
export type RefusalOrg = string | null | (() => Promise<string | undefined>);

/**
 * A refused request, thrown to the HTTP pipeline: it records the refusal in the org's audit log (when there is one) and
 * answers `response`, or the error's own wire form when the refusal has no answer of its own.
 */
export class Refusal extends Error {
  constructor(
    readonly error: AppError,
    readonly orgId: RefusalOrg,
    readonly principal: Principal | null,
    readonly response?: Response,
  ) {
    super(error.message);
    this.name = 'Refusal';
  }
}
