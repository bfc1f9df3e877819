/**
 * MySQL guard: how the server compares database, table and CTE names, so the guard compares them the same way.
 *
 * `lower_case_table_names` (read from the server at introspection, carried in the tool's target):
 *  - 0 (Linux default): database and table names are compared exactly; `ACCOUNTS` and `accounts`, `SHOP` and
 *    `shop` are different objects.
 *  - 1: names are stored lower-case and lower-cased before lookup: compared case-insensitively.
 *  - 2: names are stored as given and compared lower-case: case-insensitive too.
 * Unknown (a tool introspected before the mode was recorded) is treated as 0: exact comparison accepts a subset
 * of what any mode resolves to the same table, so it can only refuse too much, never too little.
 *
 * In modes 1 and 2 only ASCII letters are folded. The server lower-cases with its own Unicode tables, which need
 * not agree with JavaScript's; two names equal after ASCII folding are equal for the server in every mode that
 * folds, so the guard's "same name" stays a subset of the server's, and a name differing in non-ASCII case is
 * refused rather than guessed.
 *
 * CTE names: MariaDB matches them case-insensitively even in mode 0, MySQL per mode. Exact comparison in mode 0
 * (the folded one in modes 1/2) is a subset of both: when the guard takes a name for a CTE, so does the server.
 */

export type LowerCaseTableNames = 0 | 1 | 2;

/** Lower-cases A-Z only. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** Whether the server resolves `a` and `b` (database, table or CTE names) to the same object. */
export function sameName(a: string, b: string, mode: LowerCaseTableNames): boolean {
  return a === b || (mode !== 0 && asciiLower(a) === asciiLower(b));
}

/** The key under which a name is looked up in a set of names compared as `sameName` does. */
export function nameKey(name: string, mode: LowerCaseTableNames): string {
  return mode === 0 ? name : asciiLower(name);
}

/**
 * The server's own databases: catalogs, grants, statistics, the process list. `information_schema` is a virtual
 * database the server matches case-insensitively whatever the mode; the others are ordinary directories, so in
 * mode 0 only their exact lower-case spelling names them (`MYSQL` would be a user's database).
 */
const CASE_INSENSITIVE_SYSTEM = 'information_schema';
const SYSTEM_DATABASES: readonly string[] = ['mysql', 'performance_schema', 'sys'];

export function isSystemDatabase(name: string, mode: LowerCaseTableNames): boolean {
  // Where the server folds case it uses its own Unicode tables (MariaDB 10.11 does not take `ınformation_schema`
  // for information_schema; other versions need not agree): the guard folds as widely as JavaScript can, since
  // calling a name a system database can only refuse more.
  const folded = [asciiLower(name), name.toLowerCase(), name.toUpperCase().toLowerCase()];
  if (folded.includes(CASE_INSENSITIVE_SYSTEM)) return true;
  return SYSTEM_DATABASES.some((s) => name === s || (mode !== 0 && folded.includes(s)));
}

/** Reads `@@lower_case_table_names` as the server reports it; anything else means the guard must stay exact. */
export function parseLowerCaseTableNames(v: unknown): LowerCaseTableNames | undefined {
  const n = Number(v);
  return n === 0 || n === 1 || n === 2 ? n : undefined;
}
