/**
 * Resolution check for reads and writes: the statement becomes the body of a temporary BEGIN ATOMIC function, which
 * the server parse-analyses (never runs) and whose dependencies (pg_depend) and analysed tree (prosqlbody) we read.
 * See resolution.ts for the reasoning.
 */
import type postgres from 'postgres';
import { SAFE_FUNCTIONS } from './guard/functions.ts';
import { searchPath, type PgPool } from './pool.ts';
import { ResolutionUnavailable, created42501, unavailable, type DependencyRow, type ResolutionRequest } from './resolution-common.ts';
import { lostConnection, pipelineDeadline, releaseReserved, reserveConnection, RESET_DEADLINE_MS, settlePipeline } from './pipeline.ts';

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
/*
 * Constants of the analysed tree, by type: a constant of a `reg*` type (or an array of one) is a name the server
 * looked up in the catalog while analysing (`'secrets'::regclass`, or a string literal passed where a regclass is
 * expected), and a user-defined type's input function is the DBA's code: both make the verdict depend on the literal's
 * value, so it is not shared by the statement's shape (resolution.ts). Counted twice, like the calls: a tree format
 * this does not read marks the statement per value.
 */
const CONST_RE = String.raw`(?<!\\)\{CONST :consttype (\d+) `;
const CONST_NODES_RE = String.raw`(?<!\\)\{CONST `;
const ALLOWED_FUNCTIONS = [...SAFE_FUNCTIONS];

/**
 * Lists what the temporary function depends on that the tool may not reach. Types allowed: the tool's row type and
 * the types of its own columns (and their element or array types): comparing an enum column with a literal records
 * its enum type. Namespaces: only the temporary schema (the function's own).
 */
const DEPENDENCIES_SQL = `
  with fn as (
    -- The temporary function, whatever its arguments (a saved tool's statement has some: its parameters).
    select p.oid from pg_catalog.pg_proc p where p.pronamespace = pg_catalog.pg_my_temp_schema() and p.proname = 'toolgate_resolution'),
  -- The relations the statement may touch: the tool's table, or (issue 38) exactly the tables the guard found it touching.
  own as (
    select c.oid, c.reltype from rows from (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[])) as r(s, t)
      join pg_catalog.pg_namespace n on n.nspname = r.s
      join pg_catalog.pg_class c on c.relnamespace = n.oid and c.relname = r.t),
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
       and d.objid = (select oid from fn)),
  body as (
    select p.prosqlbody::text as tree from pg_catalog.pg_proc p where p.oid = (select oid from fn)),
  calls as (
    select m[1]::oid as fn, m[2] as format from body, pg_catalog.regexp_matches(body.tree, $re$${FUNCEXPR_RE}$re$, 'g') m
    union all
    select m[1]::oid, 'call' from body, pg_catalog.regexp_matches(body.tree, $re$${AGG_WINDOW_RE}$re$, 'g') m),
  nodes as (
    select count(*) as n from body, pg_catalog.regexp_matches(body.tree, $re$${CALL_NODES_RE}$re$, 'g') m),
  consts as (
    select m[1]::oid as t from body, pg_catalog.regexp_matches(body.tree, $re$${CONST_RE}$re$, 'g') m),
  const_nodes as (
    select count(*) as n from body, pg_catalog.regexp_matches(body.tree, $re$${CONST_NODES_RE}$re$, 'g') m)
  select (select count(distinct oid) from own) = pg_catalog.cardinality($2::pg_catalog.text[]) as own,
         (select count(*) from calls)::int as calls,
         (select n from nodes)::int as call_nodes,
         exists (select 1 from pg_catalog.pg_class c where c.relnamespace = 'pg_catalog'::pg_catalog.regnamespace and c.relname = any($2::pg_catalog.text[])) as shadowed,
         ((select count(*) from consts) <> (select n from const_nodes)
          or exists (select 1 from consts c left join pg_catalog.pg_type ty on ty.oid = c.t
                      where ty.oid is null
                         or (ty.typnamespace = 'pg_catalog'::pg_catalog.regnamespace and ty.typname::text ~ '^_?reg')
                         or (ty.oid >= 16384 and ty.typtype <> 'e'))) as per_value,
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

const ms = (n: number): number => Math.max(1, Math.floor(n));

/** Runs the analysis transaction on one reserved connection, pipelined: about one round trip. */
export async function dependencies(pool: PgPool, req: ResolutionRequest): Promise<DependencyRow> {
  const conn = await reserveConnection(pool.sql);
  let clean = false;
  let lost = false;
  try {
    const setup = [
      'begin transaction read write',
      `set local statement_timeout = ${ms(req.statementTimeoutMs)}`,
      `set local lock_timeout = ${ms(req.lockTimeoutMs)}`,
      `set local search_path = ${searchPath(req.schema)}`,
    ].join('; ');
    // The body goes on its own lines: a trailing `-- comment` cannot swallow the closing `; end`. Extended protocol
    // (one statement per message), like the call itself.
    const args = Array.from({ length: req.params ?? 0 }, () => 'pg_catalog.text').join(', ');
    const create = `create function ${FUNCTION_NAME}(${args}) returns void language sql\nbegin atomic\n${req.statement}\n;\nend`;
    const begin = conn.unsafe(setup).execute();
    const created = conn.unsafe(create, [], { prepare: false, simple: false } as postgres.UnsafeQueryOptions).execute();
    const relations = req.relations ?? [{ schema: req.schema, table: req.table }];
    const deps = conn
      .unsafe<DependencyRow[]>(DEPENDENCIES_SQL, [relations.map((r) => r.schema), relations.map((r) => r.table), ALLOWED_FUNCTIONS], { prepare: false })
      .execute();
    const end = conn.unsafe('rollback').execute();
    const [b, c, d, e] = await settlePipeline([begin, created, deps, end] as const, pipelineDeadline(req.statementTimeoutMs));
    lost = lostConnection([b, c, d, e]);
    // The pipelined rollback ended the transaction (and dropped the function): the session is as it was.
    clean = e.status === 'fulfilled';
    if (b.status === 'rejected') throw unavailable(b.reason);
    if (c.status === 'rejected') throw created42501(c.reason) ? unavailable(c.reason) : c.reason;
    if (d.status === 'rejected') throw unavailable(d.reason);
    const row = d.value[0];
    if (!row) throw new ResolutionUnavailable('the dependency query returned nothing');
    if (row.calls !== row.call_nodes)
      throw new ResolutionUnavailable(`the server's query tree has a format this check does not know (${row.calls} of ${row.call_nodes} calls read)`);
    return row;
  } finally {
    // As in run.ts: a session that cannot be proven clean is reset (DISCARD ALL keeps the startup parameters).
    if (!clean && !lost) await settlePipeline([conn.unsafe('rollback').execute(), conn.unsafe('discard all').execute()], RESET_DEADLINE_MS);
    releaseReserved(conn, lost);
  }
}
