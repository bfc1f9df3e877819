/**
 * Audit rows of refused requests (401, 403, 429 on the MCP endpoint and /api): the reason and which credential was
 * presented, by its non-secret prefix (the 12 characters API-key lists show) or, for a bearer token, the client id
 * it claims; never the secret. Written through AuditRecorder.denial (bounded, not awaited).
 */
import { actorOf, type Principal } from '../principal.ts';
import type { AuditInput } from './repository.ts';

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

export function bearerOf(request: Request): string | null {
  const header = request.headers.get('authorization');
  const match = header ? /^Bearer\s+(\S+)$/i.exec(header.trim()) : null;
  return match ? match[1]! : null;
}

function credentialOf(request: Request): Record<string, unknown> {
  const apiKey = request.headers.get('x-api-key');
  if (apiKey !== null) return { credential: 'api_key', key_prefix: apiKey.trim().slice(0, KEY_PREFIX_CHARS) };
  const token = bearerOf(request);
  if (token === null) return { credential: 'none' };
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
