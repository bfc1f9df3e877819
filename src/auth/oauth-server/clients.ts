/**
 * Who the client is: a Client ID Metadata Document (the client_id is an https URL whose document the gateway fetches
 * through the outbound policy, capped in size and time, cached by its HTTP cache headers), a dynamically registered
 * client (RFC 7591) or a pre-registered one. Whatever a client's metadata says is its own claim: the consent page
 * shows the client_id's host first (decision 0246).
 */
import { OutboundFetchError, OutboundRefusedError, safeFetch, type OutboundPolicy } from '../../net/outbound.ts';
import type { Queryable } from '../../store/db.ts';
import { redirectUrisProblem } from './redirect-uris.ts';
import { findRegisteredClient } from './repository.ts';

export interface OAuthClientInfo {
  clientId: string;
  kind: 'metadata_document' | 'registered' | 'preregistered';
  /** The client's own name for itself (its claim, shown as such). */
  name: string | null;
  redirectUris: string[];
}

/** A client that cannot be identified: answered with an error page, never a redirect (RFC 6749 section 4.1.2.1). */
export class ClientError extends Error {}

const CIMD_MAX_BYTES = 5 * 1024;
const CIMD_TIMEOUT_MS = 3000;
/** Cache lifetime bounds: a document without cache headers is reused for five minutes, none for more than a day. */
const DEFAULT_TTL_MS = 5 * 60_000;
const MAX_TTL_MS = 24 * 3600_000;
const MAX_CACHED = 1000;

const cache = new Map<string, { client: OAuthClientInfo; expiresAt: number }>();

/** Whether a client_id names a metadata document: https, a path, no fragment or credentials (CIMD draft section 3). */
function isMetadataDocumentId(clientId: string): boolean {
  return clientId.startsWith('https://');
}

function checkDocumentUrl(clientId: string): URL {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new ClientError('The client_id is not a valid URL.');
  }
  if (url.protocol !== 'https:') throw new ClientError('A client_id URL must be https.');
  if (url.pathname === '/' || url.hash || url.username || url.password) {
    throw new ClientError('A client_id URL must have a path and no fragment or credentials.');
  }
  return url;
}

/** How long a fetched document may be reused, from its Cache-Control (no-store/no-cache: not at all). */
function ttlOf(response: Response): number {
  const header = (response.headers.get('cache-control') ?? '').toLowerCase();
  if (/no-store|no-cache/.test(header)) return 0;
  const maxAge = /max-age=(\d+)/.exec(header);
  return maxAge ? Math.min(Number(maxAge[1]) * 1000, MAX_TTL_MS) : DEFAULT_TTL_MS;
}

function parseDocument(clientId: string, doc: unknown): OAuthClientInfo {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new ClientError('The client metadata document is not a JSON object.');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) throw new ClientError('The client metadata document names another client_id.');
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((u) => typeof u === 'string' && u.length <= 2000)) {
    throw new ClientError('The client metadata document lists no valid redirect_uris.');
  }
  // The same rule as a registration's (decision 0363): a document is the client's claim, not a trusted source.
  const problem = redirectUrisProblem(uris as string[]);
  if (problem) throw new ClientError(`The client metadata document is refused: its ${problem}`);
  const method = d.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') throw new ClientError('Only public clients (token_endpoint_auth_method "none") can sign in here.');
  const name = typeof d.client_name === 'string' ? d.client_name.slice(0, 100) : null;
  return { clientId, kind: 'metadata_document', name, redirectUris: uris as string[] };
}

async function fetchDocument(clientId: string, outbound: OutboundPolicy): Promise<OAuthClientInfo> {
  checkDocumentUrl(clientId);
  const hit = cache.get(clientId);
  if (hit && hit.expiresAt > Date.now()) return hit.client;
  let response: Response;
  try {
    response = await safeFetch(clientId, { headers: { accept: 'application/json' } }, outbound, {
      requireHttps: true,
      timeoutMs: CIMD_TIMEOUT_MS,
      maxBytes: CIMD_MAX_BYTES,
    });
  } catch (err) {
    if (err instanceof OutboundRefusedError || err instanceof OutboundFetchError) {
      throw new ClientError(`The client metadata document could not be fetched (${err.message}).`);
    }
    throw err;
  }
  if (!response.ok) throw new ClientError(`The client metadata document could not be fetched (HTTP ${response.status}).`);
  let doc: unknown;
  try {
    doc = await response.json();
  } catch {
    throw new ClientError('The client metadata document is not JSON.');
  }
  const client = parseDocument(clientId, doc);
  const ttl = ttlOf(response);
  if (ttl > 0) {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(clientId, { client, expiresAt: Date.now() + ttl });
  }
  return client;
}

/** The client named by client_id for this org; throws ClientError when it cannot be identified or is revoked. */
export async function resolveClient(db: Queryable, outbound: OutboundPolicy, orgId: string, clientId: string): Promise<OAuthClientInfo> {
  if (!clientId || clientId.length > 2000) throw new ClientError('client_id is missing or too long.');
  if (isMetadataDocumentId(clientId)) return fetchDocument(clientId, outbound);
  const row = await findRegisteredClient(db, orgId, clientId);
  if (!row || row.revokedAt) throw new ClientError('This client is not registered with this org, or has been revoked.');
  return { clientId, kind: row.kind, name: row.clientName, redirectUris: row.redirectUris };
}
