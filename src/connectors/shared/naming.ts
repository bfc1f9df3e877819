/** Deterministic MCP tool names for database tables: `query_<type>_<table>`, unique, [a-z0-9_], at most 64 chars. */

export const MAX_TOOL_NAME = 64;

export interface NamedRelation {
  schema: string;
  table: string;
}

/** Lower-cases and replaces every character outside [a-z0-9_] with `_`. */
export function sanitizeName(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

// Code-unit order, not localeCompare: the result must not depend on the host's locale.
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Names one tool per relation, returned in the input order.
 *
 * 1. `query_<type>_<table>`; when the same table name exists in two exposed schemas, those relations use
 *    `query_<type>_<schema>_<table>` instead (the schema is then what tells them apart).
 * 2. Truncated to 64 characters.
 * 3. Remaining collisions (sanitising `Order Items` and `order_items` alike, case twins such as `ACCOUNTS` and
 *    `accounts` on a case-sensitive server, or truncation): a relation whose name needed no sanitising comes
 *    first (`accounts` keeps `query_<type>_accounts` whichever twin appears, so a case twin created later does not
 *    take over its name and settings), then by (schema, table) in code-unit order; the first keeps the name, the
 *    others get `_2`, `_3`, ... (trimmed to stay within 64), skipping any name already given, so adding a table
 *    never renames a table whose name was unique.
 */
export function toolNames(type: string, relations: readonly NamedRelation[]): string[] {
  const prefix = `query_${sanitizeName(type)}_`;
  const schemasByTable = new Map<string, Set<string>>();
  for (const r of relations) {
    const set = schemasByTable.get(r.table) ?? new Set<string>();
    set.add(r.schema);
    schemasByTable.set(r.table, set);
  }
  // Whether the relation's own spelling is already its name's (nothing lower-cased or replaced).
  const canonical: boolean[] = [];
  const base = relations.map((r) => {
    const qualified = (schemasByTable.get(r.table)?.size ?? 0) > 1;
    canonical.push(sanitizeName(r.table) === r.table && (!qualified || sanitizeName(r.schema) === r.schema));
    const raw = prefix + (qualified ? `${sanitizeName(r.schema)}_` : '') + sanitizeName(r.table);
    return raw.slice(0, MAX_TOOL_NAME);
  });

  const count = new Map<string, number>();
  for (const b of base) count.set(b, (count.get(b) ?? 0) + 1);

  const names: (string | undefined)[] = base.map((b) => (count.get(b) === 1 ? b : undefined));
  const taken = new Set(names.filter((n): n is string => n !== undefined));

  const order = relations
    .map((r, i) => ({ r, i }))
    .filter(({ i }) => names[i] === undefined)
    .sort((a, b) => Number(canonical[b.i]) - Number(canonical[a.i]) || compare(a.r.schema, b.r.schema) || compare(a.r.table, b.r.table));
  for (const { i } of order) {
    const b = base[i]!;
    let name = b;
    for (let k = 2; taken.has(name); k++) {
      const suffix = `_${k}`;
      name = b.slice(0, MAX_TOOL_NAME - suffix.length) + suffix;
    }
    names[i] = name;
    taken.add(name);
  }
  return names.map((n) => n!);
}
