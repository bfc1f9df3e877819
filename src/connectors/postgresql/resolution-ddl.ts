/**
 * Resolution check for DDL, by name: running the DDL would evaluate CHECKs and defaults on the table's rows, so the
 * statement's words, operators and attribute-position names are matched against the catalog instead. See
 * resolution.ts for the reasoning.
 */
import { parseSync, scanSync } from './guard/lazy.ts';
import { SAFE_FUNCTIONS } from './guard/functions.ts';
import type { PgPool } from './pool.ts';
import { ResolutionUnavailable, unavailable, type DependencyRow, type ResolutionRequest } from './resolution-common.ts';

const ALLOWED_FUNCTIONS = [...SAFE_FUNCTIONS];

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

export async function ddlNames(pool: PgPool, req: ResolutionRequest): Promise<DependencyRow> {
  const { words, operators } = namesOf(req.statement);
  try {
    const rows = await pool.sql.unsafe<DependencyRow[]>(
      DDL_NAMES_SQL,
      [req.schema, req.table, words, operators, attributeNames(req.statement), ALLOWED_FUNCTIONS],
      {
        prepare: false,
      },
    );
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
