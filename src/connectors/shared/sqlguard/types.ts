/** The contract of the per-dialect SQL guards: what a statement may do on a tool's own table. */
import type { TableRef } from '../policy.ts';

/**
 * One table (or view) of the connector as a multi-table guard knows it (issue 38; docs/decisions/0292): what the
 * statement may reference besides the tool's own table. Every table a statement touches is governed as if the
 * statement called that table's tool, so the guard reports which ones it touched and where.
 */
export interface GuardTable {
  schema: string;
  name: string;
  /** The table's policy hides these columns: the guard refuses naming one of them anywhere in the statement. */
  hidden?: readonly string[];
  /**
   * The table has a column or row policy: every reference to it is reported in `refs` (with its index) so the
   * rewrite can replace it by that policy's derived table; a dialect that cannot report them refuses the statement.
   * SQL Server and Oracle have no rewrite: they keep `hidden` out themselves, so there `policy` is set only when the
   * table's policy also masks or filters rows (a statement touching it is then refused, naming it).
   */
  policy?: boolean;
  /** Oracle: the table's column names (exact), as `GuardOptions.columns`. */
  columns?: readonly string[];
}

export interface GuardOptions {
  /**
   * The tool's own table (or view). Without `tables`, the only table the statement may reference; with `tables`, the
   * one it names in messages (it is also in `tables.list`).
   */
  table: { schema: string; name: string };
  /**
   * Issue 38: the connector's tables a statement may reference (JOINs, subqueries, CTEs, set operations, LATERAL),
   * the tool's own table among them. A reference that is none of them (nor a CTE in scope) is refused as before. A
   * write or DDL statement still touches exactly one table of the list and reads no other. `key` identifies the list
   * and each table's policy (verdict caches); it changes whenever either does. Unset: `table` alone.
   */
  tables?: { key: string; list: readonly GuardTable[] };
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
   * With `tables`, the policies are the listed tables' (`GuardTable.policy`, `hidden`) and this field carries only
   * `params` (shared/prepare.ts sets `{ key: '', hidden: [], params }` for a saved statement): no parameter beyond
   * them is admitted once a touched table has a policy.
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
      /**
       * With opts.policy: every reference to the tool's table (not to a CTE of that name), in text order. With
       * opts.tables: every reference to a listed table that has `policy`, each with its `table` index.
       */
      refs?: readonly TableRef[];
      /** With opts.tables: the indexes (into opts.tables.list) of every table the statement references, ascending, once each. */
      touched?: readonly number[];
    }
  | {
      ok: false;
      /** Tells the agent what was refused and what is allowed. */
      reason: string;
      /** Why, as a class of the closed list (the audit row's `reason_class`; docs/decisions/0320). */
      class?: RefusalClass;
    };

/**
 * The closed list of reasons a statement is refused for (docs/decisions/0320-refusal-reason-classes.md), set where a
 * guard refuses, never derived from the message text. `not_allowed` is every other rule of a guard.
 */
const REFUSAL_CLASSES = [
  'write',
  'ddl',
  'multiple_statements',
  'function_not_allowed',
  'other_table',
  'disabled_table',
  'hidden_column',
  'parse_error',
  'too_long',
  'statement_not_allowed',
  'row_lock',
  'policy',
  'invalid_arguments',
  'not_allowed',
] as const;

export type RefusalClass = (typeof REFUSAL_CLASSES)[number];
