/** API keys and OAuth clients: issued with a secret shown once, stored only as hashes, revoked immediately. */
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Queryable } from '../store/db.ts';
import { apiKeys, oauthClients } from '../store/schema.ts';
import { hashSecret, randomSecret } from '../util/crypto.ts';
import { randomBytes } from 'node:crypto';

const API_KEY_PREFIX = 'tgk_';
const CLIENT_ID_PREFIX = 'tgc_';
const CLIENT_SECRET_PREFIX = 'tgs_';
export const MANAGE_SCOPE = 'org:manage';
export const MCP_SCOPE = 'mcp:call';

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type OAuthClientRow = typeof oauthClients.$inferSelect;

export async function createApiKey(db: Queryable, orgId: string, input: { name: string; connectorIds: string[] | null }) {
  const key = API_KEY_PREFIX + randomSecret(32);
  const [row] = await db
    .insert(apiKeys)
    .values({ orgId, name: input.name, prefix: key.slice(0, 12), keyHash: hashSecret(key), connectorIds: input.connectorIds })
    .returning();
  return { row: row!, key };
}

export async function listApiKeys(db: Queryable, orgId: string): Promise<ApiKeyRow[]> {
  return db.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(desc(apiKeys.createdAt));
}

export async function revokeApiKey(db: Queryable, orgId: string, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning();
  return row;
}

/** The digest a presented API key is looked up by; null for text that cannot be a key (nothing to look up). */
export function apiKeyDigest(key: string): string | null {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
  return hashSecret(key);
}

/**
 * Per-request lookups run as prepared statements, built once per database handle: no query building per call, and
 * on PostgreSQL a named statement that is parsed and planned once per connection (an unprepared query with
 * parameters costs postgres.js an extra round trip to describe it, and the server a parse and plan, every time).
 */
export function preparedFor<D extends object, P>(cache: WeakMap<D, P>, db: D, build: (db: D) => P): P {
  let prepared = cache.get(db);
  if (prepared === undefined) {
    prepared = build(db);
    cache.set(db, prepared);
  }
  return prepared;
}

export async function createOAuthClient(db: Queryable, orgId: string, input: { name: string; scopes: string[] }) {
  const clientId = CLIENT_ID_PREFIX + randomBytes(12).toString('hex');
  const clientSecret = CLIENT_SECRET_PREFIX + randomSecret(32);
  const [row] = await db
    .insert(oauthClients)
    .values({ orgId, name: input.name, clientId, secretHash: hashSecret(clientSecret), scopes: input.scopes })
    .returning();
  return { row: row!, clientSecret };
}

export async function listOAuthClients(db: Queryable, orgId: string): Promise<OAuthClientRow[]> {
  return db.select().from(oauthClients).where(eq(oauthClients.orgId, orgId)).orderBy(desc(oauthClients.createdAt));
}

export async function revokeOAuthClient(db: Queryable, orgId: string, clientId: string): Promise<OAuthClientRow | undefined> {
  const [row] = await db
    .update(oauthClients)
    .set({ revokedAt: new Date() })
    .where(and(eq(oauthClients.orgId, orgId), eq(oauthClients.clientId, clientId), isNull(oauthClients.revokedAt)))
    .returning();
  return row;
}

export async function findOAuthClient(db: Queryable, clientId: string): Promise<OAuthClientRow | undefined> {
  if (!clientId.startsWith(CLIENT_ID_PREFIX) || clientId.length > 100) return undefined;
  const [row] = await db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId));
  return row;
}

const activeClient = (db: Queryable) =>
  db
    .select({ id: oauthClients.id })
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, sql.placeholder('clientId')), eq(oauthClients.orgId, sql.placeholder('orgId')), isNull(oauthClients.revokedAt)))
    .prepare('toolgate_active_client');
const activeClientQueries = new WeakMap<Queryable, ReturnType<typeof activeClient>>();

/** Whether a client still stands (not revoked) and belongs to the org: checked on every request carrying its token. */
export async function isClientActive(db: Queryable, orgId: string, clientId: string): Promise<boolean> {
  const [row] = await preparedFor(activeClientQueries, db, activeClient).execute({ clientId, orgId });
  return row !== undefined;
}
