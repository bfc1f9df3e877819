/**
 * Server-side resolution check: what the server will really run for a statement, before it runs for the first time.
 *
 * The text guard (guard/guard.ts) sees names; the server resolves them against the catalog, and some of what it
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
 * tool, mode and statement shape (guard/shape.ts: the parse tree with each literal's value replaced by
 * its type), for a short TTL (see PG_RESOLUTION_DEFAULT_TTL_MS): a function, operator or cast created by the DBA after
 * a verdict is noticed at the latest when it expires. Agents send the same statement with other values far more often
 * than a new statement, and those texts resolve alike. Where the server reports that a literal's value entered the
 * analysis (a name looked up through a `reg*` type), the verdict is kept for that exact text only. DDL and calls
 * without a shape are keyed by their exact text.
 */
import type { PgPool } from './pool.ts';
import { ResolutionUnavailable, type ResolutionRequest, type ResolutionVerdict } from './resolution-common.ts';
import { dependencies } from './resolution-dml.ts';
import { ddlNames } from './resolution-ddl.ts';

export { ResolutionUnavailable, type ResolutionRequest, type ResolutionVerdict };

/** Default verdict lifetime: a new user function or operator is seen at the latest this long after it appears. */
export const PG_RESOLUTION_DEFAULT_TTL_MS = 30_000;
/** Verdicts kept per pool (least recently used first out), and the longest statement whose verdict is kept. */
const CACHE_ENTRIES = 512;
const CACHE_MAX_KEY = 8192;

/** A verdict, and whether it holds for this exact text only (literal values entered the analysis). */
interface Outcome {
  verdict: ResolutionVerdict;
  perValue: boolean;
  /** False when the verdict must not be reused at all (see analyse). */
  cacheable: boolean;
}
interface Entry {
  expires: number;
  outcome: Promise<Outcome>;
}
interface Cache {
  entries: Map<string, Entry>;
  /** Analyses run on the server (for tests and benchmarks: how often the cache missed). */
  analysed: number;
}
const caches = new WeakMap<PgPool, Cache>();

function cacheOf(pool: PgPool): Cache {
  let cache = caches.get(pool);
  if (!cache) caches.set(pool, (cache = { entries: new Map(), analysed: 0 }));
  return cache;
}

/** For tests and benchmarks: how many statements one pool has had analysed on the server. */
export function pgResolutionAnalyses(pool: PgPool): number {
  return caches.get(pool)?.analysed ?? 0;
}

/**
 * The verdict for `req` on `pool`, from the cache while fresh. Concurrent first calls with the same shape (or text)
 * share one check. Throws ResolutionUnavailable (never cached) when the server could not analyse the statement for a reason
 * other than the statement itself; a statement the server rejects (syntax, unknown column) throws the server error.
 */
export async function checkPgResolution(pool: PgPool, req: ResolutionRequest): Promise<ResolutionVerdict> {
  const cache = cacheOf(pool);
  const relations = req.relations && req.kind !== 'ddl' ? `\u0000${req.relations.map((r) => `${r.schema}\u0001${r.table}`).join('\u0002')}` : '';
  const scope = `${req.kind}\u0000${req.schema}\u0000${req.table}${relations}`;
  const textKey = req.statement.length > CACHE_MAX_KEY ? null : `${scope}\u0000${req.statement}`;
  if (req.shape !== undefined && req.kind !== 'ddl') {
    let mine = false;
    let byShape: Outcome | null = null;
    try {
      byShape = await cached(cache, `${scope}\u0001${req.shape}`, req, () => ((mine = true), analyse(pool, req)));
    } catch (err) {
      // Another text's analysis failed (its own values, say `'x'::int`): that error is not this call's; check this text.
      if (mine) throw err;
    }
    // The analysis of another text of this shape holds for this one unless literal values entered it.
    if (byShape !== null && !byShape.perValue) return byShape.verdict;
    if (byShape !== null && mine) {
      // This text's own analysis, valid for this text only: kept under the text too.
      if (textKey !== null && req.ttlMs > 0 && byShape.cacheable) remember(cache, textKey, req.ttlMs, Promise.resolve(byShape));
      return byShape.verdict;
    }
  }
  if (textKey === null) return (await analyse(pool, req)).verdict;
  return (await cached(cache, textKey, req, () => analyse(pool, req))).verdict;
}

function remember(cache: Cache, key: string, ttlMs: number, outcome: Promise<Outcome>): void {
  cache.entries.delete(key);
  cache.entries.set(key, { expires: Date.now() + ttlMs, outcome });
  if (cache.entries.size > CACHE_ENTRIES) cache.entries.delete(cache.entries.keys().next().value!);
}

/** The fresh cached outcome under `key`, or a new analysis (shared by concurrent callers; errors never cached). */
function cached(cache: Cache, key: string, req: ResolutionRequest, run: () => Promise<Outcome>): Promise<Outcome> {
  const now = Date.now();
  const hit = cache.entries.get(key);
  if (hit && hit.expires > now && req.ttlMs > 0) {
    cache.entries.delete(key);
    cache.entries.set(key, hit);
    return hit.outcome;
  }
  cache.analysed++;
  const outcome = run().then((o) => {
    if (!o.cacheable) cache.entries.delete(key);
    return o;
  });
  if (req.ttlMs > 0) {
    remember(cache, key, req.ttlMs, outcome);
    // Errors are never cached: the next call tries again.
    outcome.catch(() => cache.entries.delete(key));
  }
  return outcome;
}

async function analyse(pool: PgPool, req: ResolutionRequest): Promise<Outcome> {
  const row = req.kind === 'ddl' ? await ddlNames(pool, req) : await dependencies(pool, req);
  // A tool table named like a catalog relation: cached verdicts would outlive a DROP of the table, after which the
  // unqualified name would resolve to the catalog relation (pinned, so never in pg_depend). Check every call.
  const cacheable = !row.shadowed;
  // Literal values entered the analysis (or the server did not say): the verdict holds for this text only.
  const perValue = row.per_value !== false;
  // DDL may (re)create the tool's table; other statements on a missing table could only resolve elsewhere.
  if (!row.own && req.kind !== 'ddl') {
    const names = req.relations ? req.relations.map((r) => `${r.schema}.${r.table}`).join(', ') : `${req.schema}.${req.table}`;
    return {
      verdict: {
        ok: false,
        reason: req.relations
          ? `A table this statement reads (${names}) does not exist (any more); ask an admin to refresh the connector's tools.`
          : `The table ${names} of this tool does not exist (any more); ask an admin to refresh the connector's tools.`,
      },
      perValue,
      cacheable,
    };
  }
  const foreign = (row.foreign ?? []).filter((x): x is string => typeof x === 'string').sort();
  if (foreign.length === 0) return { verdict: { ok: true }, perValue, cacheable };
  const list = foreign.slice(0, 5).join(', ') + (foreign.length > 5 ? ', ...' : '');
  const why =
    req.kind === 'ddl'
      ? 'names in this statement can resolve to functions, operators or casts that are not allowed'
      : 'the server resolves the statement to objects that are not allowed';
  return {
    verdict: {
      ok: false,
      reason: `${req.relations ? `Only the tables the statement names (${req.relations.map((r) => `${r.schema}.${r.table}`).join(', ') || 'none'})` : `Only this tool's table (${req.schema}.${req.table})`} and the allowed built-in functions, operators and types may be used: ${why} (${list}).`,
    },
    perValue,
    cacheable,
  };
}
