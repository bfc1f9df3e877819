/**
 * Server-side resolution check: what the server will really run for a statement, before it runs for the first time.
 *
 * The text guard (sqlguard/postgres.ts) sees names; the server resolves them against the catalog, and some of what it
 * resolves calls functions with nothing in the text that looks like a call: attribute notation (`t.f` and `(t).f` are
 * `f(t)`), user-defined operators, implicit and assignment casts, domains (their CHECKs), user functions in the
 * tool's schema that shadow or overload a built-in name. So the server analyses the statement itself:
 *
 *   begin read write; set local statement_timeout/lock_timeout/search_path (exactly as the call will run)
 *   create function pg_temp.toolgate_resolution() returns void language sql begin atomic <statement>; end
 *   select ... from pg_depend where the function is the dependent object
 *   rollback
 *
 * A BEGIN ATOMIC body (PostgreSQL 14+) is parsed and analysed at CREATE time and never executed; its dependencies
 * are recorded like a view's: every function (including those behind attribute notation and casts), operator, type,
 * collation and relation/column the analysed statement refers to, except built-in (pinned) objects. Anything in that
 * list other than the tool's own relation, the types of its own columns and harmless catalog objects (collations,
 * text-search configurations) means the statement would reach something the allow-lists did not vet: refused.
 * Built-in functions are pinned too, yet attribute notation reaches them with no call in the text, so the analysed
 * tree itself (pg_proc.prosqlbody) is read as well: every function it calls must be on the guard's allow-list.
 * Built-in relations (pinned, so not recorded) cannot be named because the guard only lets the tool's table name
 * through and the search_path puts the tool's schema first (see pool.ts), and this check requires that the tool's
 * table exists.
 *
 * DDL cannot be analysed this way (running it would evaluate CHECKs and defaults on the table's rows), so for DDL
 * the check is by name: refused when any name or operator in the statement has a user-defined (non-built-in)
 * function or operator of that name in the database, when a name in attribute position names any function not on
 * the allow-list, or when the database defines its own casts with functions.
 *
 * Cost: one round trip with catalog writes (about 2 ms on a local server), so verdicts are cached per pool,
 * tool, mode and exact statement text, for a short TTL (see PG_RESOLUTION_DEFAULT_TTL_MS): a function, operator or
 * cast created by the DBA after a verdict is noticed at the latest when it expires.
 */
import type { PgPool } from './pool.ts';
import { ResolutionUnavailable, TEMP_PRIVILEGE_MISSING, type ResolutionRequest, type ResolutionVerdict } from './resolution-common.ts';
import { dependencies } from './resolution-dml.ts';
import { ddlNames } from './resolution-ddl.ts';

export { ResolutionUnavailable, TEMP_PRIVILEGE_MISSING, type ResolutionRequest, type ResolutionVerdict };

/** Default verdict lifetime: a new user function or operator is seen at the latest this long after it appears. */
export const PG_RESOLUTION_DEFAULT_TTL_MS = 30_000;
/** Verdicts kept per pool (least recently used first out), and the longest statement whose verdict is kept. */
const CACHE_ENTRIES = 512;
const CACHE_MAX_KEY = 8192;

interface Entry {
  expires: number;
  verdict: Promise<ResolutionVerdict>;
}
const caches = new WeakMap<PgPool, Map<string, Entry>>();

/** For tests and benchmarks: forget the verdicts of one pool. */
export function clearPgResolutionCache(pool: PgPool): void {
  caches.get(pool)?.clear();
}

/**
 * The verdict for `req` on `pool`, from the cache while fresh. Concurrent first calls with the same text share one
 * check. Throws ResolutionUnavailable (never cached) when the server could not analyse the statement for a reason
 * other than the statement itself; a statement the server rejects (syntax, unknown column) throws the server error.
 */
export async function checkPgResolution(pool: PgPool, req: ResolutionRequest): Promise<ResolutionVerdict> {
  const key = `${req.kind}\u0000${req.schema}\u0000${req.table}\u0000${req.statement}`;
  let cache = caches.get(pool);
  if (!cache) caches.set(pool, (cache = new Map()));
  const now = Date.now();
  const hit = cache.get(key);
  if (hit && hit.expires > now && req.ttlMs > 0) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.verdict;
  }
  const verdict = analyse(pool, req).then(({ verdict: v, cacheable }) => {
    if (!cacheable) cache.delete(key);
    return v;
  });
  if (req.ttlMs > 0 && key.length <= CACHE_MAX_KEY) {
    cache.set(key, { expires: now + req.ttlMs, verdict });
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    // Errors are never cached: the next call tries again.
    verdict.catch(() => cache.delete(key));
  }
  return verdict;
}

async function analyse(pool: PgPool, req: ResolutionRequest): Promise<{ verdict: ResolutionVerdict; cacheable: boolean }> {
  const row = req.kind === 'ddl' ? await ddlNames(pool, req) : await dependencies(pool, req);
  // A tool table named like a catalog relation: cached verdicts would outlive a DROP of the table, after which the
  // unqualified name would resolve to the catalog relation (pinned, so never in pg_depend). Check every call.
  const cacheable = !row.shadowed;
  // DDL may (re)create the tool's table; other statements on a missing table could only resolve elsewhere.
  if (!row.own && req.kind !== 'ddl') {
    return { verdict: { ok: false, reason: `The table ${req.schema}.${req.table} of this tool does not exist (any more); ask an admin to refresh the connector's tools.` }, cacheable };
  }
  const foreign = (row.foreign ?? []).filter((x): x is string => typeof x === 'string').sort();
  if (foreign.length === 0) return { verdict: { ok: true }, cacheable };
  const list = foreign.slice(0, 5).join(', ') + (foreign.length > 5 ? ', ...' : '');
  const why =
    req.kind === 'ddl'
      ? 'names in this statement can resolve to functions, operators or casts that are not allowed'
      : 'the server resolves the statement to objects that are not allowed';
  return {
    verdict: {
      ok: false,
      reason: `Only this tool's table (${req.schema}.${req.table}) and the allowed built-in functions, operators and types may be used: ${why} (${list}).`,
    },
    cacheable,
  };
}

