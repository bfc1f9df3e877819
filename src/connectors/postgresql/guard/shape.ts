/**
 * The shape of a parsed PostgreSQL statement: its parse tree with every literal's value replaced by the type the server
 * will give it, so that texts differing only in literal values share one server-side resolution verdict.
 *
 * Why this is enough (docs/decisions/0136-resolution-by-shape.md): the server's parse analysis is a function of
 * the raw parse tree, the catalog and the session's settings. Literal values enter it in few places, and each is kept:
 *  - a literal's type, which picks functions and operators (`id = 5` is int4 = int4, `id = 5000000000` int4 = int8,
 *    `id = 5.0` int4 = numeric): the kind of every literal is part of the shape, computed as the server's make_const
 *    does (integers by range, after the grammar has folded a leading minus), with NULL, booleans, bit strings and
 *    strings (type unknown until context decides, whatever their content) as kinds of their own;
 *  - integers that are positions, not values (`ORDER BY 2`, `GROUP BY 1`, `DISTINCT ON (1)`): any literal directly
 *    under a sort item, a grouping or DISTINCT ON list, or a window's PARTITION BY keeps its value;
 *  - type modifiers (`numeric(10, 2)`, `varchar(5)`, `interval(3)`): any literal inside a type name keeps its value;
 *  - a numeric literal whose text is not plain decimal (`0x1F`, `1_000`, read as a number by this parser and as `0`
 *    with an alias `x1F` by a PostgreSQL 14 server) keeps its text;
 *  - string literals the server turns into catalog references (a `reg*` type's input looks the name up): not visible
 *    in the raw tree, so the server reports it (resolution-dml.ts, `per_value`) and such statements are checked per
 *    text.
 * Everything else stays as parsed: identifiers (folded or quoted as the server folds them), operators, function and
 * type names, casts, keywords, list lengths. Positions in the text (`location` and the like) are left out: they
 * change with literal lengths and never change what a name resolves to.
 */
import { sha256Hex } from '../../../util/crypto.ts';

type Node = Record<string, unknown>;

/** Keys under which a literal is a column position or a modifier, not a value: its value stays in the shape. */
const KEEP_VALUES_UNDER = new Set(['SortBy', 'groupClause', 'distinctClause', 'partitionClause', 'TypeName', 'typeName']);
/** Positions in the text (every field of that kind in libpg-query's node types): left out of the shape. */
const POSITIONS = new Set(['location', 'name_location', 'list_start', 'list_end', 'rexpr_list_start', 'rexpr_list_end', 'stmt_location', 'stmt_len']);

const INT4_MIN = -(2n ** 31n);
const INT4_MAX = 2n ** 31n - 1n;
const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;

/** Plain decimal number text at a literal's position (an optional minus, then digits, a point, an exponent). */
const DECIMAL_AT = /^-?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w$.])/;

/** The type PostgreSQL's make_const gives a Float node's text: int4 or int8 when it is an integer that fits, else numeric. */
function floatKind(text: string): string {
  if (!/^-?\d+$/.test(text)) return 'numeric';
  const n = BigInt(text);
  if (n >= INT4_MIN && n <= INT4_MAX) return 'int4';
  if (n >= INT8_MIN && n <= INT8_MAX) return 'int8';
  return 'numeric';
}

/** Source text from a byte offset (the parser's locations count UTF-8 bytes). */
function textAt(sql: string, bytes: Buffer | null, location: number): string {
  if (bytes === null) return sql.slice(location, location + 80);
  return bytes.subarray(location, location + 80).toString('utf8');
}

/** The kind of one A_Const (see the module header), or its exact value where the value itself matters. */
function constKind(c: Node, keepValue: boolean, sql: string, bytes: Buffer | null): string {
  const exact = (): string => JSON.stringify(c, (k, v) => (k === 'location' ? undefined : v));
  if (keepValue) return `=${exact()}`;
  if (c.isnull === true) return 'null';
  if ('sval' in c) return 'unknown';
  if ('boolval' in c) return 'bool';
  if ('bsval' in c) return 'bit';
  if ('ival' in c || 'fval' in c) {
    const location = typeof c.location === 'number' ? c.location : -1;
    if (location < 0 || !DECIMAL_AT.test(textAt(sql, bytes, location))) return `=${exact()}`;
    if ('ival' in c) return 'int4';
    const fval = (c.fval as { fval?: unknown } | undefined)?.fval;
    return typeof fval === 'string' ? floatKind(fval) : `=${exact()}`;
  }
  return `=${exact()}`;
}

/** What the shape kept besides kinds: `exact` when some literal's value (or text) is part of it. */
export interface ShapeInfo {
  exact: boolean;
}

/**
 * The shape of `stmt` (one statement of `parseSync(sql)`), as a SHA-256 hex digest: equal for two texts exactly when
 * their parse trees are equal after the replacements above. `info.exact` tells whether some literal kept its value.
 */
export function statementShape(sql: string, stmt: unknown, info?: ShapeInfo): string {
  const bytes = /^[\x00-\x7f]*$/.test(sql) ? null : Buffer.from(sql, 'utf8');
  // Keys are the parser's field and node names (letters and underscores), strings are JSON-quoted, and every value is
  // closed by a separator: the serialization is unambiguous. Built by concatenation (this runs on every call).
  let out = '';
  const walk = (v: unknown, keep: boolean): void => {
    if (typeof v === 'string') out += JSON.stringify(v);
    else if (typeof v !== 'object' || v === null) out += String(v);
    else if (Array.isArray(v)) {
      out += '[';
      for (const x of v) {
        walk(x, keep);
        out += ',';
      }
      out += ']';
    } else {
      const o = v as Node;
      out += '{';
      for (const k in o) {
        if (POSITIONS.has(k)) continue;
        out += k;
        out += ':';
        if (k === 'A_Const') {
          const kind = constKind(o[k] as Node, keep, sql, bytes);
          if (info && kind.charCodeAt(0) === 61 /* = */) info.exact = true;
          out += kind;
        } else walk(o[k], keep || KEEP_VALUES_UNDER.has(k));
        out += ',';
      }
      out += '}';
    }
  };
  walk(stmt, false);
  return sha256Hex(out);
}
