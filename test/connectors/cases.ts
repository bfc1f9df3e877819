/** What a database dialect hands the connector conformance suite, and the security cases every dialect shares. */
import type { ConnectorDriver, DatabaseConfig, SqlTarget, SavedParam } from '../../src/connectors/types.ts';
import type { PoolSettings } from '../../src/connectors/shared/pools.ts';
import type { ConnectorType } from '../../generated/client/types.gen.ts';

/** The SQL connector types: every one runs COMMON_CASES (guard-conformance.test.ts without a server, live where one exists). */
export const SQL_TYPES = ['postgresql', 'mysql', 'mssql', 'oracle'] as const satisfies readonly ConnectorType[];
export type SqlType = (typeof SQL_TYPES)[number];

type AdminRow = Record<string, unknown>;

/** A fresh, uniquely named database on the real server, loaded with the fixtures below. */
export interface Provisioned {
  config: DatabaseConfig;
  credential: string | null;
  /** The two exposed schemas; both hold a table `orders`. */
  mainSchema: string;
  secondSchema: string;
  /** Runs SQL on the test database as the admin (fixtures, checks). */
  admin(sql: string): Promise<AdminRow[]>;
  /** Changes whenever a fixture table's rows, the set of tables, or a sequence changes. */
  fingerprint(): Promise<string>;
  /** Takes an exclusive lock on `table` from another session until the returned function is called. */
  lockTable(table: string): Promise<() => Promise<void>>;
  /** Statements other sessions are running whose text contains `marker`. */
  running(marker: string): Promise<number>;
  teardown(): Promise<void>;
}

interface BypassOptions {
  readOnly: boolean;
  statementTimeoutMs: number;
  /** false: no server-side time limit (MySQL: exercise the client's KILL QUERY). */
  serverTimeout?: boolean;
  /** The caller's signal (issue 26: a caller that goes away). */
  signal?: AbortSignal;
}

/**
 * The fixtures each dialect's provision() creates, in the main schema unless said otherwise:
 *   items(id, name, big int8, amount numeric(30,10), created_at timestamptz, happened timestamp, day date,
 *         payload bytea, doc json, ...)  ids 1..3; row 1 holds the values in `expectedValues`, row 3 NULLs
 *   big(id, filler)                      ids 1..3000
 *   secrets(id, secret)                  one row
 *   notes(id, body)                      empty, for the write tests
 *   "Order Items"(id)                    a name that needs sanitising
 *   LONG_NAMES[0], LONG_NAMES[1] (id)    names whose tool names collide after truncation
 *   orders(id) in mainSchema AND in secondSchema
 *   items_view                           a view: select id, name from items
 */
export interface ConformanceSetup {
  type: SqlType;
  driver: ConnectorDriver<DatabaseConfig, SqlTarget>;
  available: boolean;
  provision(): Promise<Provisioned>;
  configurePools(settings: Partial<PoolSettings>): void;
  /** Column of items row 1 → its expected JSON value. */
  expectedValues: Record<string, unknown>;
  /** Dialect-specific cases, on top of COMMON_CASES. */
  securityCases: SecurityCase[];
  /** Runs a statement with the driver's internal runner: no guard, no wrapper. */
  bypass(p: Provisioned, connectorId: string, statement: string, o: BypassOptions): Promise<AdminRow[]>;
  /** A statement that runs for minutes, and a marker to find it in the server's process list (its text holds `600`, the seconds). */
  sleep: { sql: string; marker: string };
  /** Issue 7 (session state): statements whose outcomes (rows or error) together describe the session, run through bypass. */
  sessionSnapshot: string[];
  /** Statements that each try to leave something in the session, run through bypass (no guard) read-only and read-write. */
  sessionChanges: string[];
  /** A read on `big` returning 1000 rows of about 500 kB each, generated on the server. */
  bigRowsSql: string;
}

export interface SecurityCase {
  name: string;
  /** `{PWNED}` is replaced with a per-run file path that must never appear. */
  sql: string;
  /** Also refused when the connector allows writes (stacked statements, other tables...). */
  writesToo?: boolean;
}

const LONG_PREFIX = 'a_table_name_much_longer_than_the_tool_name_limit_allows_';
export const LONG_NAMES = [`${LONG_PREFIX}one`, `${LONG_PREFIX}two`] as const;

export const COMMON_CASES: SecurityCase[] = [
  { name: 'stacked COMMIT then DROP', sql: 'SELECT 1; COMMIT; DROP TABLE items', writesToo: true },
  { name: 'stacked END then DROP', sql: 'SELECT * FROM items; END; DROP TABLE items', writesToo: true },
  { name: 'stacked, behind leading comments', sql: '/* daily report */ -- note\nSELECT 1; COMMIT; DROP TABLE items', writesToo: true },
  { name: 'stacked after a string holding a semicolon', sql: "SELECT ';' FROM items; DELETE FROM items", writesToo: true },
  { name: 'stacked ROLLBACK then DELETE', sql: 'SELECT 1 FROM items; ROLLBACK; DELETE FROM items', writesToo: true },
  { name: 'EXPLAIN ANALYZE of a DELETE', sql: 'EXPLAIN ANALYZE DELETE FROM items', writesToo: true },
  { name: 'SELECT ... FOR UPDATE', sql: 'SELECT * FROM items FOR UPDATE' },
  { name: 'another table', sql: 'SELECT * FROM secrets', writesToo: true },
  { name: 'another table in a join', sql: 'SELECT i.id, s.secret FROM items i JOIN secrets s ON s.id = i.id', writesToo: true },
  { name: 'another table in a subquery', sql: 'SELECT (SELECT secret FROM secrets LIMIT 1) AS s FROM items', writesToo: true },
  { name: 'a write to another table', sql: "INSERT INTO secrets (id, secret) VALUES (9, 'x')", writesToo: true },
  { name: 'DELETE on a read-only connector', sql: 'DELETE FROM items' },
  { name: 'UPDATE on a read-only connector', sql: "UPDATE items SET name = 'x'" },
  { name: 'DROP TABLE', sql: 'DROP TABLE items', writesToo: true },
  { name: 'TRUNCATE', sql: 'TRUNCATE TABLE items', writesToo: true },
];

/**
 * Catalog relations are never readable through a table's tool, however the name is written (issue 7, item 2):
 * qualified, case-varied, quoted, in a subquery or a join. Each dialect adds its own catalogs (pg_catalog,
 * mysql.*, ...) in its securityCases or suite.
 */
COMMON_CASES.push(
  { name: 'catalog: information_schema.tables', sql: 'SELECT * FROM information_schema.tables', writesToo: true },
  { name: 'catalog: upper-case INFORMATION_SCHEMA.COLUMNS', sql: 'SELECT column_name FROM INFORMATION_SCHEMA.COLUMNS', writesToo: true },
  { name: 'catalog: quoted "information_schema"."columns"', sql: 'SELECT * FROM "information_schema"."columns"', writesToo: true },
  { name: 'catalog: in a scalar subquery', sql: 'SELECT (SELECT count(*) FROM information_schema.columns) AS n FROM items', writesToo: true },
  { name: 'catalog: in EXISTS', sql: 'SELECT * FROM items WHERE EXISTS (SELECT 1 FROM information_schema.tables)', writesToo: true },
  { name: 'catalog: joined', sql: 'SELECT i.id, c.column_name FROM items i JOIN information_schema.columns c ON 1 = 1', writesToo: true },
  { name: 'catalog: behind a CTE', sql: 'WITH c AS (SELECT * FROM information_schema.columns) SELECT * FROM c', writesToo: true },
);

/** A saved-statement definition (issue 30) the guard must refuse at save, with words its refusal holds. */
export interface SavedRefusal {
  name: string;
  statement: string;
  params: SavedParam[];
  words: string;
  /** Also refused when the connector allows writes. */
  writesToo?: boolean;
}

const param = (name: string, type: SavedParam['type'] = 'string'): SavedParam => ({ name, type, description: name });

/** Saved statements every SQL type that serves saved tools refuses at save (checkSaved), on the fixtures above. */
export const SAVED_REFUSALS: SavedRefusal[] = [
  {
    name: 'placeholder inside a string literal',
    statement: "SELECT id FROM items WHERE name = ':n'",
    params: [param('n')],
    words: 'string literal',
    writesToo: true,
  },
  {
    name: 'placeholder inside double quotes',
    statement: 'SELECT id FROM items WHERE name = ":n"',
    params: [param('n')],
    words: 'quoted name',
    writesToo: true,
  },
  { name: 'placeholder inside a comment', statement: 'SELECT id FROM items /* :n */ WHERE id = 1', params: [param('n')], words: 'comment', writesToo: true },
  {
    name: 'placeholder naming no parameter',
    statement: 'SELECT id FROM items WHERE id = :m',
    params: [param('n')],
    words: ':m names no declared parameter',
    writesToo: true,
  },
  { name: 'parameter the statement does not use', statement: 'SELECT id FROM items', params: [param('n')], words: 'does not use it', writesToo: true },
  { name: '{{...}} template', statement: 'SELECT id FROM items WHERE name = {{n}}', params: [], words: '{{...}}', writesToo: true },
  { name: 'placeholder where a table name goes', statement: 'SELECT id FROM :n', params: [param('n')], words: '', writesToo: true },
  { name: 'placeholder where a keyword goes', statement: 'SELECT id FROM items :n', params: [param('n')], words: '', writesToo: true },
  {
    name: 'stacked statement after a placeholder',
    statement: 'SELECT id FROM items WHERE id = :n; DROP TABLE items',
    params: [param('n', 'integer')],
    words: '',
    writesToo: true,
  },
  {
    // Issue 38: a JOIN of the connector's tables may be saved (each table governs the call); one it does not list may not.
    name: 'a join with a table the connector does not list',
    statement: 'SELECT i.id, s.secret FROM items i JOIN no_such_table s ON s.id = i.id WHERE i.id = :n',
    params: [param('n', 'integer')],
    words: '',
    writesToo: true,
  },
  { name: 'a catalog', statement: 'SELECT table_name FROM information_schema.tables WHERE table_name = :n', params: [param('n')], words: '', writesToo: true },
  { name: 'a write on a read-only connector', statement: 'DELETE FROM notes WHERE id = :n', params: [param('n', 'integer')], words: 'DELETE' },
  { name: 'DDL', statement: 'DROP TABLE notes', params: [], words: '', writesToo: true },
];

/** String arguments a saved tool binds as values: each must come back compared as text, never run (issue 30). */
export const INJECTION_VALUES = [
  "x' OR '1'='1",
  "'; DROP TABLE items; --",
  "first' --",
  '1) OR (1=1',
  "\\' OR 1=1 -- ",
  'first" OR "1"="1',
  '$1',
  '?',
  ':name',
  "first'; SELECT pg_sleep(5); --",
];
