/**
 * The MCP endpoint's per-request store reads: the org named in the URL and, with an API key, the key itself.
 *
 * Both run on every request, against the shared store, so that a revoked key or client is refused on the very next
 * request on every instance and a catalog change (catalog_version) applies at once. To keep that cheap:
 *  - the queries are prepared statements, built once per database handle (no query building per call; on
 *    PostgreSQL a named statement, parsed and planned once per connection, and no describe round trip);
 *  - API-key lookups are batched: the lookups requested during one turn of the event loop (and, while
 *    MAX_IN_FLIGHT batches are out, until one comes back) go to the store as ONE query (`key_hash = any(...)`),
 *    sent after the last of them was requested. Each request is therefore still checked by a query that starts
 *    after the request arrived (a key revoked before that is refused), but under load the store sees one
 *    statement for many requests instead of one each;
 *  - with a shared auth epoch (Redis, or the embedded store's single process), found results are cached in the
 *    instance (mcp/auth-cache.ts) and reused while the epoch is unchanged: writers set a new one after each change.
 */
import { apiKeyDigest } from '../auth/credentials.ts';
import { preparedFor, type Db } from '../store/db.ts';
import { ItemFailure, MicroBatcher } from '../util/batch.ts';
import type { McpAuthCache } from './auth-cache.ts';
import { keysByHash, orgBySlug, type KeyRow } from './lookup-statements.ts';

/** The org as the MCP endpoint reads it (columns: MCP_ORG_COLUMNS). */
export interface McpOrg {
  id: string;
  slug: string;
  catalogVersion: number;
  plan: string;
  burstLimitPerSecond: number | null;
  /** The trial's end decides whether tools/call runs (tools/runtime.ts, trialExpired). */
  subscriptionStatus: string;
  trialExpiresAt: Date | null;
  /** Set while an operator has suspended the org: mcp/session.ts refuses every credential. */
  suspendedAt: Date | null;
  /** What a refused statement's audit row keeps (decision 0321). */
  auditStatements: 'none' | 'fingerprint' | 'full';
}

const orgQueries = new WeakMap<Db, ReturnType<typeof orgBySlug>>();

async function orgFromStore(db: Db, slug: string): Promise<McpOrg | undefined> {
  const [row] = await preparedFor(orgQueries, db, orgBySlug).execute({ slug });
  return row;
}

/** The org named `slug`; through this instance's credential cache when one is given. */
export function findMcpOrg(db: Db, slug: string, cache?: McpAuthCache): Promise<McpOrg | undefined> {
  if (!cache?.enabled || slug.length > 100) return orgFromStore(db, slug);
  return cache.lookup(`o\n${slug}`, () => orgFromStore(db, slug));
}

export type McpOrgWithKey = Omit<KeyRow, 'keyId' | 'keyHash' | 'keyConnectorIds' | 'keyAttributes'> & {
  key: { id: string; orgId: string; connectorIds: string[] | null; attributes: Record<string, string> };
};

/** Lookups per batch at most (a batch is one statement with two array parameters). */
const MAX_BATCH = 256;
/**
 * Batches in flight at most. While they are, new lookups wait for the next batch (group commit): under load, batches
 * grow with the store's round trip instead of the number of queries; with none in flight a lookup goes out at once.
 */
const MAX_IN_FLIGHT = 2;

interface KeyLookup {
  slug: string;
  keyHash: string;
}

/** The key lookups of a batch, as one statement; an answer per lookup, in order. */
function keyLookups(db: Db): (batch: KeyLookup[]) => Promise<Array<McpOrgWithKey | undefined | ItemFailure>> {
  const query = keysByHash(db);
  const run = async (batch: KeyLookup[]): Promise<Array<McpOrgWithKey | undefined | ItemFailure>> => {
    let rows: KeyRow[];
    try {
      rows = await query.execute({ slugs: [...new Set(batch.map((w) => w.slug))], keyHashes: [...new Set(batch.map((w) => w.keyHash))] });
    } catch (err) {
      // One request's input must never fail the others: retried one by one, only the culprit (if any) fails.
      if (batch.length > 1) return (await Promise.all(batch.map((w) => run([w])))).flat();
      return [new ItemFailure(err)];
    }
    // The key must match AND belong to the org named in the URL (the join pairs each key with its own org).
    // The hash is 64 hex digits, so slug + newline + hash cannot collide.
    const found = new Map(rows.map((r) => [`${r.slug}\n${r.keyHash}`, r]));
    return batch.map((w) => {
      const row = found.get(`${w.slug}\n${w.keyHash}`);
      if (!row) return undefined;
      const { keyId, keyHash: _hash, keyConnectorIds, keyAttributes, ...org } = row;
      return { ...org, key: { id: keyId, orgId: org.id, connectorIds: keyConnectorIds, attributes: keyAttributes } };
    });
  };
  return run;
}

/** Lookups of one database handle, batched (MAX_BATCH, MAX_IN_FLIGHT). */
const keyLookupBatcher = (db: Db) =>
  new MicroBatcher<KeyLookup, McpOrgWithKey | undefined>({ send: keyLookups(db), maxItems: MAX_BATCH, maxInFlight: MAX_IN_FLIGHT });

const batchers = new WeakMap<Db, ReturnType<typeof keyLookupBatcher>>();

/**
 * The org named `slug` with the active API key `apiKey` of that org; undefined when the slug is unknown, or the key
 * unknown, revoked or another org's (the endpoint answers all of these alike).
 */
export async function findMcpOrgWithApiKey(db: Db, slug: string, apiKey: string, cache?: McpAuthCache): Promise<McpOrgWithKey | undefined> {
  const keyHash = apiKeyDigest(apiKey);
  // Text no org's slug can be (slugs are at most 63 URL-safe characters) is not worth a lookup.
  if (keyHash === null || slug.length > 100 || slug.includes('\0')) return undefined;
  const batcher = preparedFor(batchers, db, keyLookupBatcher);
  if (!cache?.enabled) return batcher.add({ slug, keyHash });
  // The hash is 64 hex digits and a slug has no newline: no two (slug, key) pairs share a cache key.
  return cache.lookup(`k\n${slug}\n${keyHash}`, () => batcher.add({ slug, keyHash }));
}
