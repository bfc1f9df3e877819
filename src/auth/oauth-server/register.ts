/**
 * Dynamic client registration (RFC 7591) for MCP clients that still use it: public clients only (PKCE, no secret),
 * redirect URIs checked, switchable per org, limited per second per source address and per org, and capped in number;
 * registrations are listed and revoked by the org's admins.
 */
import { recordAudit } from '../../audit/repository.ts';
import { AppError, json } from '../../errors.ts';
import type { BurstLimiter } from '../../limits/burst.ts';
import type { Db } from '../../store/db.ts';
import { randomSecret } from '../../util/crypto.ts';
import { redirectUrisProblem } from './redirect-uris.ts';
import type { OrgRef } from './authorize.ts';
import { countActiveRegisteredClients, insertRegisteredClient, registrationEnabled } from './repository.ts';

/** Registrations per second from one source address to one org, and to one org from anywhere. */
const PER_ADDRESS_PER_SECOND = 2;
const PER_ORG_PER_SECOND = 10;
/** Active registered clients an org may hold; beyond it, admins revoke some first. */
const MAX_REGISTERED = 1000;

/** The RFC 7591 section 3.2.2 error body. */
const registrationError = (error: string, description: string, status: 400 | 403 | 429 = 400, headers: Record<string, string> = {}) =>
  json({ error, error_description: description }, status, { 'cache-control': 'no-store', ...headers });

interface Metadata {
  redirect_uris?: unknown;
  client_name?: unknown;
  token_endpoint_auth_method?: unknown;
  grant_types?: unknown;
  response_types?: unknown;
}

function checkMetadata(body: Metadata): { redirectUris: string[]; name: string | null } | Response {
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10 || !uris.every((u) => typeof u === 'string' && u.length <= 2000)) {
    return registrationError('invalid_redirect_uri', 'redirect_uris must list 1 to 10 URIs.');
  }
  const problem = redirectUrisProblem(uris as string[]);
  if (problem) return registrationError('invalid_redirect_uri', `The ${problem}`);
  if ((body.token_endpoint_auth_method ?? 'none') !== 'none') {
    return registrationError('invalid_client_metadata', 'Only public clients can register (token_endpoint_auth_method "none", with PKCE).');
  }
  const grants = body.grant_types ?? ['authorization_code'];
  if (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
    return registrationError('invalid_client_metadata', 'grant_types may only be authorization_code and refresh_token.');
  }
  const responses = body.response_types ?? ['code'];
  if (!Array.isArray(responses) || responses.some((r) => r !== 'code')) return registrationError('invalid_client_metadata', 'response_types may only be code.');
  const name = typeof body.client_name === 'string' ? body.client_name.slice(0, 100) : null;
  return { redirectUris: uris as string[], name };
}

async function limited(limiter: BurstLimiter, orgId: string, address: string): Promise<Response | null> {
  for (const [key, limit] of [
    [`dcr:${orgId}:${address}`, PER_ADDRESS_PER_SECOND],
    [`dcr:${orgId}`, PER_ORG_PER_SECOND],
  ] as const) {
    const decision = await limiter.take(key, limit);
    if (!decision.allowed) {
      const retryAfter = String(decision.retryAfterSeconds);
      return registrationError('rate_limited', `Too many registrations; retry after ${retryAfter} second(s).`, 429, { 'retry-after': retryAfter });
    }
  }
  return null;
}

export async function registerClient(deps: { db: Db; limiter: BurstLimiter }, org: OrgRef, body: Metadata, address: string): Promise<Response> {
  if (!(await registrationEnabled(deps.db, org.id))) {
    return registrationError(
      'access_denied',
      "This org does not accept dynamic client registration; use a client ID metadata document or ask the org's admins.",
      403,
    );
  }
  const refused = await limited(deps.limiter, org.id, address);
  if (refused) return refused;
  const checked = checkMetadata(body);
  if (checked instanceof Response) return checked;
  if ((await countActiveRegisteredClients(deps.db, org.id)) >= MAX_REGISTERED) {
    throw new AppError(429, 'rate_limited', 'This org holds as many registered clients as it may; its admins must revoke some first.', {
      'retry-after': '3600',
    });
  }
  const clientId = `mcp_${randomSecret(18)}`;
  const row = await insertRegisteredClient(deps.db, {
    orgId: org.id,
    clientId,
    kind: 'registered',
    clientName: checked.name,
    redirectUris: checked.redirectUris,
  });
  await recordAudit(deps.db, {
    orgId: org.id,
    action: 'mcp_client.registered',
    actor: { type: 'anonymous', id: null },
    targetType: 'mcp_client',
    targetId: clientId,
    details: { redirect_hosts: checked.redirectUris.map((u) => URL.parse(u)?.host ?? '').join(' ') },
  });
  return json(
    {
      client_id: clientId,
      client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
      client_name: checked.name ?? undefined,
      redirect_uris: checked.redirectUris,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
    201,
    { 'cache-control': 'no-store' },
  );
}
