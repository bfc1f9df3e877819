/** The contract of the per-dialect SQL guards: what a statement may do on a tool's own table. */
import type { TableRef } from '../policy.ts';

export interface GuardOptions {
  /** The only table (or view) the statement may reference. */
  table: { schema: string; name: string };
  /** Connector setting: INSERT/UPDATE/DELETE allowed (on the tool's table only) unless readOnly. */
  allowWrite: boolean;
  /** Connector setting: DDL on the tool's table allowed unless readOnly. */
  allowDdl: boolean;
  /** Per-tool setting: when true, only reads are allowed whatever the connector says. */
  readOnly: boolean;
  /**
   * MySQL/MariaDB only: the server's `lower_case_table_names` (0: database and table names compared exactly,
   * 1 or 2: compared case-insensitively). Absent: compared exactly, which never admits more than the server.
   */
  lowerCaseTableNames?: 0 | 1 | 2;
  /**
   * MySQL/MariaDB only: names (upper case) of the stored functions in the tool's database that share a name with an
   * allowed built-in; on a server lacking that built-in the unqualified call would run the stored function.
   */
  storedFunctions?: readonly string[];
  /** SQL Server: the database compares names case-sensitively (a _CS_ collation); absent: case-insensitively (ASCII). */
  caseSensitiveNames?: boolean;
  /** SQL Server: the login's default schema, where a one-part table name resolves; absent: names must be qualified. */
  defaultSchema?: string;
  /** Oracle: the tool's table's column names (exact); a bare name must be one of them, an alias or a pseudo-column. */
  columns?: readonly string[];
  /**
   * The tool has a column or row policy (shared/policy.ts): the guard refuses naming a hidden column and bound
   * parameters in the text, and reports every reference to the tool's table (`refs`) so each can be replaced by the
   * policy's derived table; a dialect that cannot report them refuses what it cannot check. `key` names the policy.
   * `params`: the statement is a saved tool's, with this many bound markers of its own (`$1..$params`, or `?`),
   * generated from its `:name` placeholders; they are admitted, the policy's values come after them.
   */
  policy?: { key: string; hidden: readonly string[]; params?: number };
}

export type StatementKind = 'select' | 'insert' | 'update' | 'delete' | 'ddl';

export type GuardResult =
  | {
      ok: true;
      kind: StatementKind;
      /** true when the statement only reads */
      readOnly: boolean;
      /** PostgreSQL reads and writes: the statement's shape (postgres-shape.ts), which keys the resolution verdict. */
      shape?: string;
      /** With opts.policy: every reference to the tool's table (not to a CTE of that name), in text order. */
      refs?: readonly TableRef[];
    }
  | { ok: false /** Tells the agent what was refused and what is allowed. */; reason: string };
