/** What the parts of the PostgreSQL resolution check share: the request, the verdict, the server's answer, failures. */

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
  /**
   * The statement's shape (guard/shape.ts, with the read wrapper's numbers), reads and writes only: texts
   * of one shape share a verdict, unless the server reports that literal values entered the analysis (`per_value`).
   */
  shape?: string;
  /** A saved-statement tool: its statement has this many `$n` parameters, each sent as text (shared/saved.ts). */
  params?: number;
  /**
   * Reads and writes with the connector's tables (issue 38): exactly the relations the guard found the statement
   * touching, which must all exist and are all it may depend on. Unset: the tool's table (`schema`, `table`).
   */
  relations?: readonly { schema: string; table: string }[];
}

/** What the server reported for one statement. */
export interface DependencyRow {
  /** The tool's relation exists (resolved by schema and name); with `relations`, every one of them does. */
  own: boolean;
  /** Function calls found in the analysed tree, and call nodes counted (must be equal); reads and writes only. */
  calls?: number;
  call_nodes?: number;
  /** A pg_catalog relation has the tool table's name. */
  shadowed: boolean;
  /** Objects outside what the tool may reach, described for the refusal. */
  foreign: string[] | null;
  /**
   * Reads and writes: a literal's value entered the analysis (a constant of a `reg*` type, whose input looks names up
   * in the catalog, or of a user-defined type other than an enum), so the verdict holds for this exact text only.
   */
  per_value?: boolean;
}

/** Thrown when the check itself cannot run (no TEMPORARY privilege, standby, server error): callers fail closed. */
export class ResolutionUnavailable extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}

/** The reason given when the connector's role cannot create temporary objects (validation and calls). */
export const TEMP_PRIVILEGE_MISSING = (user = 'the connector role', database = 'the database'): string =>
  `${user} lacks the TEMPORARY privilege on ${database}, which Toolgate needs to check what each statement resolves to before running it (GRANT TEMPORARY ON DATABASE ${database} TO ${user})`;

/** insufficient_privilege on CREATE FUNCTION in pg_temp: the role lacks TEMPORARY on the database. */
export function created42501(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '42501';
}

export function unavailable(err: unknown): ResolutionUnavailable {
  const code = (err as { code?: string } | null)?.code;
  if (code === '42501') {
    return new ResolutionUnavailable(`${TEMP_PRIVILEGE_MISSING()}.`, err);
  }
  if (code === '25006')
    return new ResolutionUnavailable('The database is read-only (a standby?), so Toolgate cannot check what the statement resolves to before running it.', err);
  return new ResolutionUnavailable('Toolgate could not check what the statement resolves to before running it.', err);
}
