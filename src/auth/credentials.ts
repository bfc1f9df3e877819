/** API keys and OAuth clients: issued with a secret shown once, stored only as hashes (their SQL: repository.ts). */
import type { Queryable } from '../store/db.ts';
import { hashSecret, randomSecret } from '../util/crypto.ts';
import { randomBytes } from 'node:crypto';
import { findOAuthClientRow, insertApiKey, insertOAuthClient, type OAuthClientRow } from './repository.ts';

export type { ApiKeyRow, OAuthClientRow } from './repository.ts';

const API_KEY_PREFIX = 'tgk_';
const CLIENT_ID_PREFIX = 'tgc_';
const CLIENT_SECRET_PREFIX = 'tgs_';
export const MANAGE_SCOPE = 'org:manage';
export const MCP_SCOPE = 'mcp:call';

export async function createApiKey(db: Queryable, orgId: string, input: { name: string; connectorIds: string[] | null; attributes?: Record<string, string> }) {
  const key = API_KEY_PREFIX + randomSecret(32);
  const row = await insertApiKey(db, {
    orgId,
    name: input.name,
    prefix: key.slice(0, 12),
    keyHash: hashSecret(key),
    connectorIds: input.connectorIds,
    attributes: input.attributes ?? {},
  });
  return { row, key };
}

/** Whether a presented credential has the shape of an API key (so a refusal can say where keys go). */
export const looksLikeApiKey = (text: string): boolean => text.startsWith(API_KEY_PREFIX);

/** The digest a presented API key is looked up by; null for text that cannot be a key (nothing to look up). */
export function apiKeyDigest(key: string): string | null {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  return hashSecret(key);
}

export async function createOAuthClient(db: Queryable, orgId: string, input: { name: string; scopes: string[]; attributes?: Record<string, string> }) {
  const clientId = CLIENT_ID_PREFIX + randomBytes(12).toString('hex');
  const clientSecret = CLIENT_SECRET_PREFIX + randomSecret(32);
  const row = await insertOAuthClient(db, {
    orgId,
    name: input.name,
    clientId,
    secretHash: hashSecret(clientSecret),
    scopes: input.scopes,
    attributes: input.attributes ?? {},
  });
  return { row, clientSecret };
}

export async function findOAuthClient(db: Queryable, clientId: string): Promise<OAuthClientRow | undefined> {
  if (!clientId.startsWith(CLIENT_ID_PREFIX) || clientId.length > 100) return undefined;
  return findOAuthClientRow(db, clientId);
}
