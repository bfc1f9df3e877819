/** The syntax-tree helper every SQL guard's walk uses: node shapes of the parsers' JSON output and the one descent. */

import { Refusal } from './common.ts';

/** A parsed AST object (the parsers' JSON output). */
export type AnyObj = Record<string, unknown>;

export function isObj(v: unknown): v is AnyObj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * If `v` is an enum value `{Variant: payload}` (sqlparser-rs) or a wrapped node `{Type: {...}}` (libpg-query), the
 * variant's name; otherwise undefined. Variant and node names start with an upper-case letter; struct fields never do.
 */
export function variantOf(v: AnyObj): string | undefined {
  let only: string | undefined;
  for (const k in v) {
    if (only !== undefined) return undefined;
    only = k;
  }
  if (only === undefined) return undefined;
  const c = only.charCodeAt(0);
  return c >= 65 && c <= 90 ? only : undefined;
}

/** One part of an ObjectName: `{Identifier: {value, quote_style}}` or the ident itself. */
export function identOf(part: unknown): unknown {
  return isObj(part) && isObj(part.Identifier) ? part.Identifier : part;
}

/** The identifier parts of an ObjectName (`[{Identifier: {value}}]` or `[{value}]`). */
export function nameParts(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) throw new Refusal('a name could not be understood');
  return v.map((p) => {
    const ident = identOf(p);
    if (!isObj(ident) || typeof ident.value !== 'string') throw new Refusal('a name could not be understood');
    return ident.value;
  });
}

/** A variant's name as a refusal spells it: `InsertInto` -> `INSERT INTO`. */
export function spelled(variant: string): string {
  return variant.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}

/** Fields never walked: source positions, tokens and type names (they hold no expressions). */
export const SKIP_FIELDS: ReadonlySet<string> = new Set(['span', 'data_type', 'quote_style']);

/** What a dialect's walk decides, given a state `S` and the CTE scope `C` it carries down. */
export interface TreeRules<S, C> {
  /** Fields whose value is an (unwrapped) Query struct. */
  readonly queryFields: ReadonlySet<string>;
  /** An enum variant met: allowed (and walked on) or refused. */
  variant(name: string, payload: unknown, st: S, scope: C): void;
  /** A Query struct met under one of queryFields. */
  query(q: AnyObj, st: S, scope: C): void;
}

/**
 * The descent over a sqlparser-rs tree: lists item by item, enum variants to the dialect's `variant`, Query structs
 * to its `query`, any other struct field by field (but SKIP_FIELDS, `*_token` and the `skip` the caller names).
 */
export function treeWalker<S, C>(rules: TreeRules<S, C>) {
  const walk = (v: unknown, st: S, scope: C, field: string): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x, st, scope, field);
      return;
    }
    if (!isObj(v)) return;
    const variant = variantOf(v);
    if (variant !== undefined) return rules.variant(variant, v[variant], st, scope);
    if (rules.queryFields.has(field)) return rules.query(v, st, scope);
    walkStruct(v, st, scope);
  };
  const walkStruct = (v: AnyObj, st: S, scope: C, skip?: ReadonlySet<string>): void => {
    for (const k in v) {
      if (SKIP_FIELDS.has(k) || k.endsWith('_token') || skip?.has(k)) continue;
      const x = v[k];
      if (typeof x === 'object' && x !== null) walk(x, st, scope, k);
    }
  };
  return { walk, walkStruct };
}
