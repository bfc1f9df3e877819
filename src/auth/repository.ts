/**
 * SQL of the gateway's own credentials: API keys and OAuth clients (stored only as hashes, revoked in place) and the
 * signing keys of its access tokens (sealed). Issuing the secrets is credentials.ts's, signing is signing.ts's.
 */
import { and, desc, eq, isNull, sql } from 'drizzle-orm';
import { arrayParam, preparedFor, type Db, type Queryable } from '../store/db.ts';
import { apiKeys, oauthClients, orgs, signingKeys } from '../store/schema.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type OAuthClientRow = typeof oauthClients.$inferSelect;
type SigningKeyRow = typeof signingKeys.$inferSelect;

export async function insertApiKey(db: Queryable, values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
  const [row] = await db.insert(apiKeys).values(values).returning();
  return row!;
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

/** Sets an active key's attributes; undefined when the org has no such active key. */
export async function setApiKeyAttributes(db: Queryable, orgId: string, id: string, attributes: Record<string, string>): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ attributes })
    .where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning();
  return row;
}

export async function insertOAuthClient(db: Queryable, values: typeof oauthClients.$inferInsert): Promise<OAuthClientRow> {
  const [row] = await db.insert(oauthClients).values(values).returning();
  return row!;
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

/** Sets an active client's attributes; undefined when the org has no such active client. */
export async function setOAuthClientAttributes(
  db: Queryable,
  orgId: string,
  clientId: string,
  attributes: Record<string, string>,
): Promise<OAuthClientRow | undefined> {
  const [row] = await db
    .update(oauthClients)
    .set({ attributes })
    .where(and(eq(oauthClients.orgId, orgId), eq(oauthClients.clientId, clientId), isNull(oauthClients.revokedAt)))
    .returning();
  return row;
}

/** The client of this client_id, revoked or not (credentials.ts findOAuthClient checks the id's form first). */
export async function findOAuthClientRow(db: Queryable, clientId: string): Promise<OAuthClientRow | undefined> {
  const [row] = await db.select().from(oauthClients).where(eq(oauthClients.clientId, clientId));
  return row;
}

const activeClient = (db: Queryable) =>
  db
    .select({ id: oauthClients.id, attributes: oauthClients.attributes })
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, sql.placeholder('clientId')), eq(oauthClients.orgId, sql.placeholder('orgId')), isNull(oauthClients.revokedAt)))
    .prepare('toolgate_active_client');
const activeClientQueries = new WeakMap<Queryable, ReturnType<typeof activeClient>>();

/** Whether a client still stands (not revoked) and belongs to the org. */
export async function isClientActive(db: Queryable, orgId: string, clientId: string): Promise<boolean> {
  return (await activeClientAttributes(db, orgId, clientId)) !== null;
}

/**
 * A client's attributes while it stands (not revoked) and belongs to the org, else null: checked on every request
 * carrying its token.
 */
export async function activeClientAttributes(db: Queryable, orgId: string, clientId: string): Promise<Record<string, string> | null> {
  const [row] = await preparedFor(activeClientQueries, db, activeClient).execute({ clientId, orgId });
  return row === undefined ? null : row.attributes;
}

/**
 * Runs `create` inside one transaction holding the signing keys' advisory lock, when no active key exists yet (checked
 * under the lock): instances starting together on an empty store agree on one first key.
 */
export async function withFirstSigningKeyLock(db: Db, create: (tx: Queryable) => Promise<unknown>): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(7263311002)`);
    const [existing] = await tx.select({ kid: signingKeys.kid }).from(signingKeys).where(isNull(signingKeys.retiredAt)).limit(1);
    if (!existing) await create(tx);
  });
}

export async function insertSigningKey(db: Queryable, values: typeof signingKeys.$inferInsert): Promise<void> {
  await db.insert(signingKeys).values(values);
}

/** The keys not retired, newest first (the newest signs, all verify). */
export async function activeSigningKeys(db: Queryable): Promise<SigningKeyRow[]> {
  return db.select().from(signingKeys).where(isNull(signingKeys.retiredAt)).orderBy(desc(signingKeys.createdAt));
}

/** Whether an operator has suspended the org (its credentials are then refused); false for no such org. */
export async function isOrgSuspended(db: Queryable, orgId: string): Promise<boolean> {
  const [row] = await db.select({ suspendedAt: orgs.suspendedAt }).from(orgs).where(eq(orgs.id, orgId));
  return row?.suspendedAt != null;
}

/** A credential's recorded use: API keys by id, OAuth clients by client_id; `atMs` is when it was used (epoch ms). */
export interface CredentialUse {
  kind: 'api_key' | 'oauth_client';
  id: string;
  atMs: number;
}

const CLIENT_ID_FORM = /^tgc_[0-9a-f]{1,96}$/;

/**
 * Writes a batch of uses: one statement per credential kind, each moving last_used_at forward only (GREATEST: several
 * instances write it, and a late batch never moves it back). Client ids are checked against their form first, so the
 * comma-joined list cannot carry a separator; uses of ids of another form are dropped.
 */
export async function recordCredentialUses(db: Queryable, uses: readonly CredentialUse[]): Promise<void> {
  const keys = uses.filter((u) => u.kind === 'api_key');
  const clients = uses.filter((u) => u.kind === 'oauth_client' && CLIENT_ID_FORM.test(u.id));
  if (keys.length) {
    await db.execute(sql`
      UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, to_timestamp(u.ms / 1000.0))
      FROM unnest(${arrayParam(
        'uuid',
        keys.map((u) => u.id),
      )}::uuid[], ${arrayParam(
        'bigint',
        keys.map((u) => u.atMs),
      )}::bigint[]) AS u(id, ms)
      WHERE k.id = u.id`);
  }
  if (clients.length) {
    await db.execute(sql`
      UPDATE oauth_clients AS c SET last_used_at = GREATEST(c.last_used_at, to_timestamp(u.ms / 1000.0))
      FROM unnest(string_to_array(${clients.map((u) => u.id).join(',')}, ','), ${arrayParam(
        'bigint',
        clients.map((u) => u.atMs),
      )}::bigint[]) AS u(client_id, ms)
      WHERE c.client_id = u.client_id`);
  }
}
