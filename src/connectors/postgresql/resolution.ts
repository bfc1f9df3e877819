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
 * Built-in functions remain the text guard's business (its allow-list); built-in relations (pinned, so not
 * recorded) cannot be named because the guard only lets the tool's table name through and the search_path puts the
 * tool's schema first (see pool.ts), and this check also requires that the tool's table exists.
 *
 * DDL cannot be analysed this way (running it would evaluate CHECKs and defaults on the table's rows), so for DDL
 * the check is by name: refused when any name or operator in the statement has a user-defined (non-built-in)
 * function or operator of that name in the database, when a name in attribute position names any function not on
 * the allow-list, or when the database defines its own casts with functions.
 *
 * Cost: one round trip with catalog writes (about a millisecond on a local server), so verdicts are cached per pool,
 * tool, mode and exact statement text, for a short TTL (see PG_RESOLUTION_DEFAULT_TTL_MS): a function, operator or
 * cast created by the DBA after a verdict is noticed at the latest when it expires.
 */
import type postgres from 'postgres';
import { parseSync, scanSync } from 'libpg-query';
import { SAFE_FUNCTIONS } from '../sqlguard/postgres-functions.ts';
import { searchPath, type PgPool } from './pool.ts';

export type ResolutionVerdict = { ok: true } | { ok: false; reason: string };

export interface ResolutionRequest {
  /** The statement exactly as the call will send it (reads: with the row-limiting wrapper). */
  statement: string;
  kind: 'read' | 'write' | 'ddl';
  schema: string;
  table: string;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  /** How long a verdict may be reused; 0 checks every call. */
  ttlMs: number;
}

/** Default verdict lifetime: a new user function or operator is seen at the latest this long after it appears. */
export const PG_RESOLUTION_DEFAULT_TTL_MS = 30_000;
/** Verdicts kept per pool (least recently used first out), and the longest statement whose verdict is kept. */
const CACHE_ENTRIES = 512;
const CACHE_MAX_KEY = 8192;

/** Thrown when the check itself cannot run (no TEMPORARY privilege, standby, server error): callers fail closed. */
export class ResolutionUnavailable extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}

interface Entry {
  expires: number;
  verdict: Promise<ResolutionVerdict>;
}
/** The reason given when the connector's role cannot create temporary objects (validation and calls). */
export const TEMP_PRIVILEGE_MISSING = (user = 'the connector role', database = 'the database'): string =>
  `${user} lacks the TEMPORARY privilege on ${database}, which Toolgate needs to check what each statement resolves to before running it (GRANT TEMPORARY ON DATABASE ${database} TO ${user})`;

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

interface DependencyRow {
  /** The tool's relation exists (resolved by schema and name). */
  own: boolean;
  /** Function calls found in the analysed tree, and call nodes counted (must be equal); reads and writes only. */
  calls?: number;
  call_nodes?: number;
  /** A pg_catalog relation has the tool table's name. */
  shadowed: boolean;
  /** Objects outside what the tool may reach, described for the refusal. */
  foreign: string[] | null;
}

const FUNCTION_NAME = 'pg_temp.toolgate_resolution';

/*
 * The analysed statement as the server stored it (pg_proc.prosqlbody, a pg_node_tree) names every function it will
 * call by OID, built-ins included, which pg_depend leaves out: attribute notation on any value reaches built-ins
 * too (`(id).pg_terminate_backend`, `('/etc/passwd').pg_read_file`, `t.pg_typeof`). So every function called (a
 * FUNCEXPR whose funcformat is 0, an explicit call or attribute notation, or 3, SQL syntax such as EXTRACT; and
 * every aggregate and window function) must be a built-in of pg_catalog on the guard's allow-list; cast functions
 * (funcformat 1 and 2) must be built-in. Node text is matched with regular expressions: a name or alias in the
 * tree has its braces escaped with a backslash (outToken), so it can only add matches (refusals), never hide a node;
 * and the number of detailed matches must equal the number of such nodes, so a change of the tree format in another
 * server version refuses instead of letting calls through unchecked. The patterns are inlined as dollar-quoted
 * literals (no escape processing whatever standard_conforming_strings says).
 */
const FUNCEXPR_RE = String.raw`(?<!\\)\{FUNCEXPR :funcid (\d+) :funcresulttype \d+ :funcretset \w+ :funcvariadic \w+ :funcformat (\d+)`;
const AGG_WINDOW_RE = String.raw`(?<!\\)\{(?:AGGREF :aggfnoid|WINDOWFUNC :winfnoid) (\d+)`;
const CALL_NODES_RE = String.raw`(?<!\\)\{(FUNCEXPR|AGGREF|WINDOWFUNC) `;
const ALLOWED_FUNCTIONS = [...SAFE_FUNCTIONS];

/**
 * Lists what the temporary function depends on that the tool may not reach. Types allowed: the tool's row type and
 * the types of its own columns (and their element or array types): comparing an enum column with a literal records
 * its enum type. Namespaces: only the temporary schema (the function's own).
 */
const DEPENDENCIES_SQL = `
  with own as (
    select c.oid, c.reltype from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 and c.relname = $2),
  own_types as (
    select reltype as t from own
    union select a.atttypid from pg_catalog.pg_attribute a join own on a.attrelid = own.oid where a.attnum > 0 and not a.attisdropped),
  own_types_all as (
    select t from own_types
    union select ty.typelem from pg_catalog.pg_type ty join own_types o on ty.oid = o.t where ty.typelem <> 0
    union select ty.typarray from pg_catalog.pg_type ty join own_types o on ty.oid = o.t where ty.typarray <> 0),
  dep as (
    select d.refclassid, d.refobjid from pg_catalog.pg_depend d
     where d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
       and d.objid = '${FUNCTION_NAME}()'::pg_catalog.regprocedure),
  body as (
    select p.prosqlbody::text as tree from pg_catalog.pg_proc p where p.oid = '${FUNCTION_NAME}()'::pg_catalog.regprocedure),
  calls as (
    select m[1]::oid as fn, m[2] as format from body, pg_catalog.regexp_matches(body.tree, $re$${FUNCEXPR_RE}$re$, 'g') m
    union all
    select m[1]::oid, 'call' from body, pg_catalog.regexp_matches(body.tree, $re$${AGG_WINDOW_RE}$re$, 'g') m),
  nodes as (
    select count(*) as n from body, pg_catalog.regexp_matches(body.tree, $re$${CALL_NODES_RE}$re$, 'g') m)
  select exists (select 1 from own) as own,
         (select count(*) from calls)::int as calls,
         (select n from nodes)::int as call_nodes,
         exists (select 1 from pg_catalog.pg_class c where c.relnamespace = 'pg_catalog'::pg_catalog.regnamespace and c.relname = $2) as shadowed,
         (select pg_catalog.array_agg(distinct x) from (
            select case d.refclassid
                     when 'pg_catalog.pg_class'::pg_catalog.regclass then 'relation ' || d.refobjid::pg_catalog.regclass::text
                     when 'pg_catalog.pg_proc'::pg_catalog.regclass then 'function ' || d.refobjid::pg_catalog.regprocedure::text
                     when 'pg_catalog.pg_operator'::pg_catalog.regclass then 'operator ' || d.refobjid::pg_catalog.regoperator::text
                     when 'pg_catalog.pg_type'::pg_catalog.regclass then 'type ' || d.refobjid::pg_catalog.regtype::text
                     when 'pg_catalog.pg_namespace'::pg_catalog.regclass then 'schema ' || d.refobjid::pg_catalog.regnamespace::text
                     else d.refclassid::pg_catalog.regclass::text || ' object ' || d.refobjid::text
                   end as x
              from dep d
             where not (d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass and d.refobjid in (select oid from own))
               and not (d.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass and d.refobjid in (select t from own_types_all))
               and not (d.refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass and d.refobjid = pg_catalog.pg_my_temp_schema())
               and d.refclassid not in ('pg_catalog.pg_collation'::pg_catalog.regclass, 'pg_catalog.pg_ts_config'::pg_catalog.regclass,
                                        'pg_catalog.pg_ts_dict'::pg_catalog.regclass)
            union all
            select 'function ' || c.fn::pg_catalog.regprocedure::text
              from calls c left join pg_catalog.pg_proc f on f.oid = c.fn
             where not coalesce(f.oid < 16384 and f.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
                                and (c.format in ('1', '2') or f.proname = any($3::text[])), false)) f) as foreign`;



/**
 * For DDL: user-defined functions or operators named like a word or operator of the statement, and user casts (with a
 * function) from a type an expression of the statement can have: a built-in type or the type of one of the table's
 * columns (other types cannot be named: the guard allows only built-in type names).
 */
const DDL_NAMES_SQL = `
  select exists (select 1 from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
                  where n.nspname = $1 and c.relname = $2) as own,
         exists (select 1 from pg_catalog.pg_class c where c.relnamespace = 'pg_catalog'::pg_catalog.regnamespace and c.relname = $2) as shadowed,
         (select pg_catalog.array_agg(x) from (
            select 'function ' || p.oid::pg_catalog.regprocedure::text as x from pg_catalog.pg_proc p
             where p.oid >= 16384 and p.proname = any($3::text[])
            union all
            select 'operator ' || o.oid::pg_catalog.regoperator::text from pg_catalog.pg_operator o
             where o.oid >= 16384 and o.oprname = any($4::text[])
            union all
            select 'function ' || p.oid::pg_catalog.regprocedure::text || ' (attribute notation)' from pg_catalog.pg_proc p
             where p.proname = any($5::text[])
               and not (p.oid < 16384 and p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace and p.proname = any($6::text[]))
            union all
            select 'cast ' || c.castsource::pg_catalog.regtype::text || ' to ' || c.casttarget::pg_catalog.regtype::text
              from pg_catalog.pg_cast c
             where c.oid >= 16384 and c.castfunc <> 0
               and (c.castsource < 16384 or c.castsource in (
                      select a.atttypid from pg_catalog.pg_attribute a join pg_catalog.pg_class r on r.oid = a.attrelid
                        join pg_catalog.pg_namespace n on n.oid = r.relnamespace
                       where n.nspname = $1 and r.relname = $2 and a.attnum > 0))) f) as foreign`;

const ms = (n: number): number => Math.max(1, Math.floor(n));

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

/** Runs the analysis transaction on one reserved connection, pipelined: about one round trip. */
async function dependencies(pool: PgPool, req: ResolutionRequest): Promise<DependencyRow> {
  const conn = await pool.sql.reserve();
  try {
    const setup = [
      'begin transaction read write',
      `set local statement_timeout = ${ms(req.statementTimeoutMs)}`,
      `set local lock_timeout = ${ms(req.lockTimeoutMs)}`,
      `set local search_path = ${searchPath(req.schema)}`,
    ].join('; ');
    // The body goes on its own lines: a trailing `-- comment` cannot swallow the closing `; end`. Extended protocol
    // (one statement per message), like the call itself.
    const create = `create function ${FUNCTION_NAME}() returns void language sql\nbegin atomic\n${req.statement}\n;\nend`;
    const begin = conn.unsafe(setup).execute();
    const created = conn.unsafe(create, [], { prepare: false, simple: false } as postgres.UnsafeQueryOptions).execute();
    const deps = conn
      .unsafe<DependencyRow[]>(DEPENDENCIES_SQL, [req.schema, req.table, ALLOWED_FUNCTIONS], { prepare: false })
      .execute();
    const end = conn.unsafe('rollback').execute();
    const [b, c, d, e] = await Promise.allSettled([begin, created, deps, end]);
    if (b.status === 'rejected') throw unavailable(b.reason);
    if (c.status === 'rejected') throw created42501(c.reason) ? unavailable(c.reason) : c.reason;
    if (d.status === 'rejected') throw unavailable(d.reason);
    if (e.status === 'rejected') await conn.unsafe('rollback').catch(() => undefined);
    const row = d.value[0];
    if (!row) throw new ResolutionUnavailable('the dependency query returned nothing');
    if (row.calls !== row.call_nodes) throw new ResolutionUnavailable(`the server's query tree has a format this check does not know (${row.calls} of ${row.call_nodes} calls read)`);
    return row;
  } finally {
    conn.release();
  }
}

async function ddlNames(pool: PgPool, req: ResolutionRequest): Promise<DependencyRow> {
  const { words, operators } = namesOf(req.statement);
  try {
    const rows = await pool.sql.unsafe<DependencyRow[]>(DDL_NAMES_SQL, [req.schema, req.table, words, operators, attributeNames(req.statement), ALLOWED_FUNCTIONS], {
      prepare: false,
    });
    if (!rows[0]) throw new ResolutionUnavailable('the catalog query returned nothing');
    return rows[0];
  } catch (err) {
    throw err instanceof ResolutionUnavailable ? err : unavailable(err);
  }
}

/**
 * Every word (identifier or keyword, folded like the server folds it) and every operator of a statement. Over-
 * inclusive on purpose: a column name that is also the name of a user function makes the DDL refused.
 */
function namesOf(statement: string): { words: string[]; operators: string[] } {
  const words = new Set<string>();
  const operators = new Set<string>();
  for (const t of scanSync(statement).tokens) {
    if (t.tokenName === 'Op' || /^[-+*/<>=~!@#%^&|`?]+$/.test(t.text)) operators.add(t.text);
    else if (t.text.startsWith('"') && t.text.endsWith('"') && t.text.length >= 2) words.add(t.text.slice(1, -1).replace(/""/g, '"'));
    else if (/^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*$/.test(t.text)) words.add(t.text.toLowerCase());
  }
  return { words: [...words], operators: [...operators] };
}

/**
 * Names in attribute position (`x.f`, `(x).f`, `a.b.c`): every field of a column reference after the first and every
 * field selection. Any of them may be a function call (attribute notation works on any value, `(id).f` is `f(id)`),
 * so in DDL, where the server cannot analyse the statement beforehand, a function of that name that is not on the
 * allow-list refuses it, even where the name is really a column.
 */
function attributeNames(statement: string): string[] {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) visit(x);
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    const fields = (o.ColumnRef as { fields?: unknown[] } | undefined)?.fields ?? (o.A_Indirection as { indirection?: unknown[] } | undefined)?.indirection;
    if (Array.isArray(fields)) {
      fields.forEach((f, i) => {
        const sval = (f as { String?: { sval?: unknown } } | null)?.String?.sval;
        if (typeof sval === 'string' && (i > 0 || o.A_Indirection !== undefined)) names.add(sval);
      });
    }
    for (const k in o) visit(o[k]);
  };
  visit(parseSync(statement));
  return [...names];
}

/** insufficient_privilege on CREATE FUNCTION in pg_temp: the role lacks TEMPORARY on the database. */
function created42501(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '42501';
}

function unavailable(err: unknown): ResolutionUnavailable {
  const code = (err as { code?: string } | null)?.code;
  if (code === '42501') {
    return new ResolutionUnavailable(`${TEMP_PRIVILEGE_MISSING()}.`, err);
  }
  if (code === '25006') return new ResolutionUnavailable('The database is read-only (a standby?), so Toolgate cannot check what the statement resolves to before running it.', err);
  return new ResolutionUnavailable('Toolgate could not check what the statement resolves to before running it.', err);
}
