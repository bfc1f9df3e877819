// Unit tests of the MySQL guard's name resolution: which spellings are the tool's table under each
// lower_case_table_names mode. No database: the guard only lexes and parses. The real server here runs mode 0
// (Linux) and the mode cannot be changed at run time (it is fixed when the data directory is initialised), so
// modes 1 and 2 are covered here only; test/connectors/mysql-names.test.ts proves mode 0 on the real server.
import { describe, expect, test } from 'bun:test';
import { guardMysqlSql } from '../../src/connectors/mysql/guard/guard.ts';
import type { GuardOptions } from '../../src/connectors/shared/sqlguard/types.ts';
import { verifies } from '../requirements.ts';

const table = { schema: 'shop', name: 'accounts' };
type Mode = 0 | 1 | 2 | undefined;
const opts = (mode: Mode, o: Partial<GuardOptions> = {}): GuardOptions => ({
  table,
  allowWrite: false,
  allowDdl: false,
  readOnly: false,
  lowerCaseTableNames: mode,
  ...o,
});
const ALL = { allowWrite: true, allowDdl: true };

function allowed(sql: string, o: GuardOptions): void {
  const r = guardMysqlSql(sql, o);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} (mode ${o.lowerCaseTableNames}) to be allowed, got: ${r.reason}`);
}
function refused(sql: string, o: GuardOptions, fragment: RegExp = /not this tool's table|system database|not served/): void {
  const r = guardMysqlSql(sql, o);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} (mode ${o.lowerCaseTableNames}) to be refused`);
  expect(r.reason).toMatch(fragment);
}

/** A case variant of the tool's table or database, in every place a table can be named. */
const CASE_VARIANTS = [
  'SELECT * FROM ACCOUNTS',
  'SELECT * FROM Accounts',
  'SELECT * FROM `ACCOUNTS`',
  'SELECT * FROM "ACCOUNTS"', // ANSI_QUOTES spelling (the session pins sql_mode without it; refused anyway)
  'SELECT * FROM SHOP.accounts',
  'SELECT * FROM Shop.accounts',
  'SELECT * FROM shop.ACCOUNTS',
  'SELECT * FROM `SHOP`.`accounts`',
  'SELECT * FROM `shop` . `Accounts`',
  'SELECT * FROM accounts a JOIN ACCOUNTS b ON a.id = b.id',
  'SELECT * FROM accounts, SHOP.accounts',
  'SELECT (SELECT v FROM ACCOUNTS LIMIT 1) FROM accounts',
  'SELECT * FROM accounts WHERE id IN (SELECT id FROM ACCOUNTS)',
  'SELECT * FROM accounts WHERE EXISTS (SELECT 1 FROM SHOP.accounts)',
  'SELECT id, COUNT(*) FROM accounts GROUP BY id HAVING COUNT(*) > (SELECT COUNT(*) FROM ACCOUNTS)',
  'SELECT * FROM accounts ORDER BY (SELECT MAX(id) FROM ACCOUNTS)',
  'SELECT * FROM accounts GROUP BY (SELECT 1 FROM ACCOUNTS LIMIT 1)',
  'SELECT * FROM accounts a JOIN accounts b ON b.id IN (SELECT id FROM ACCOUNTS)',
  'SELECT * FROM (SELECT * FROM ACCOUNTS) accounts',
  'SELECT * FROM accounts, LATERAL (SELECT * FROM ACCOUNTS) x',
  'SELECT * FROM accounts UNION SELECT * FROM ACCOUNTS',
  'WITH c AS (SELECT * FROM ACCOUNTS) SELECT * FROM c',
  // A CTE named like the tool's table in another case: the reference in the other case is the real twin on
  // MySQL (CTE names follow the mode), a CTE on MariaDB; the guard takes neither for granted.
  'WITH accounts AS (SELECT 1 AS id) SELECT * FROM ACCOUNTS',
  'WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM R WHERE n < 3) SELECT * FROM r',
  'WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r JOIN ACCOUNTS',
];

const CASE_VARIANT_WRITES = [
  'INSERT INTO ACCOUNTS VALUES (1)',
  'INSERT INTO SHOP.accounts VALUES (1)',
  'INSERT INTO accounts SELECT * FROM ACCOUNTS',
  'UPDATE ACCOUNTS SET v = 1',
  'UPDATE accounts a JOIN ACCOUNTS b ON a.id = b.id SET a.v = b.v',
  'DELETE FROM ACCOUNTS',
  'DELETE FROM shop.Accounts',
  'DELETE A FROM accounts a',
  'REPLACE INTO Accounts VALUES (1)',
  'CREATE TABLE ACCOUNTS (id INT)',
  'DROP TABLE Accounts',
  'TRUNCATE TABLE SHOP.accounts',
  'ALTER TABLE ACCOUNTS ADD COLUMN x INT',
  'RENAME TABLE ACCOUNTS TO old_accounts',
  'RENAME TABLE accounts TO SHOP.old_accounts',
];

describe('mysql guard: names resolve as the server resolves them', () => {
  test('mode 0 (and mode unknown): a case variant of the table or database is another object, refused everywhere', () => {
    verifies('SQL-OTHER-TABLE');
    for (const mode of [0, undefined] as const) {
      for (const sql of CASE_VARIANTS) refused(sql, opts(mode));
      for (const sql of CASE_VARIANT_WRITES) refused(sql, opts(mode, ALL), /not this tool's table|within its database/);
    }
  });

  test("modes 1 and 2: the same spellings are the tool's own table", () => {
    for (const mode of [1, 2] as const) {
      for (const sql of CASE_VARIANTS.filter((s) => !s.includes('"'))) allowed(sql, opts(mode));
      for (const sql of CASE_VARIANT_WRITES) allowed(sql, opts(mode, ALL));
    }
  });

  test("exact spellings are the tool's table in every mode; CTEs and aliases named like it are fine", () => {
    for (const mode of [0, 1, 2, undefined] as const) {
      for (const sql of [
        'SELECT * FROM accounts',
        'SELECT * FROM `accounts`',
        'SELECT * FROM shop.accounts',
        'SELECT * FROM `shop`.`accounts`',
        'SELECT * FROM shop . accounts',
        'WITH Accounts AS (SELECT * FROM accounts) SELECT * FROM Accounts',
        'WITH accounts AS (SELECT * FROM shop.accounts) SELECT * FROM accounts',
        'WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r, accounts',
        'SELECT ACCOUNTS.id FROM accounts AS ACCOUNTS',
        'SELECT * FROM (SELECT * FROM accounts) AS SHOP',
        'VALUES ROW(1, 2)',
      ])
        allowed(sql, opts(mode));
      allowed('DELETE a FROM accounts a WHERE a.id = 1', opts(mode, ALL));
    }
  });

  test('modes 1 and 2 fold ASCII only: a name differing in non-ASCII case is refused rather than guessed', () => {
    const cafe = { ...opts(1), table: { schema: 'shop', name: 'café' } };
    allowed('SELECT * FROM Café', cafe);
    allowed('SELECT * FROM CAFé', cafe);
    refused('SELECT * FROM CAFÉ', cafe);
    refused('SELECT * FROM café', { ...cafe, lowerCaseTableNames: 0, table: { schema: 'shop', name: 'Café' } });
  });

  test('CTE visibility: a CTE sees earlier ones and, under RECURSIVE, itself; never a later one', () => {
    for (const mode of [0, 1] as const) {
      refused('WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM accounts) SELECT * FROM a', opts(mode));
      refused('WITH a AS (SELECT * FROM b), b AS (SELECT * FROM accounts) SELECT * FROM a', opts(mode));
      refused('WITH b AS (SELECT * FROM b) SELECT * FROM b', opts(mode));
      refused('SELECT * FROM (WITH s AS (SELECT 1) SELECT 1) x, s', opts(mode));
      allowed('WITH a AS (SELECT * FROM accounts), b AS (SELECT * FROM a) SELECT * FROM b', opts(mode));
    }
    // Modes 1/2: CTE names fold like table names.
    allowed('WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM R WHERE n < 3) SELECT * FROM r', opts(1));
  });

  test('near-spellings are other names in every mode (backslashes are literal in backquotes, spaces count)', () => {
    for (const mode of [0, 1, 2] as const) {
      for (const sql of [
        'SELECT * FROM `acc\\ounts`',
        'SELECT * FROM `accounts\\`',
        'SELECT * FROM `accounts `',
        'SELECT * FROM ` accounts`',
        'SELECT * FROM `acc``ounts`',
        'SELECT * FROM `shop `.accounts',
      ]) {
        refused(sql, opts(mode));
      }
    }
  });

  test('verdicts are cached per mode', () => {
    const sql = 'SELECT * FROM ACCOUNTS WHERE id = 42';
    allowed(sql, opts(1));
    refused(sql, opts(0));
    refused(sql, opts(undefined));
    allowed(sql, opts(2));
  });
});

describe('mysql guard: system databases, however spelled', () => {
  const SYSTEM = [
    'SELECT * FROM information_schema.TABLES',
    'SELECT * FROM INFORMATION_SCHEMA.COLUMNS',
    'SELECT * FROM Information_Schema.statistics',
    'SELECT * FROM `information_schema`.`PROCESSLIST`',
    'SELECT * FROM `INFORMATION_SCHEMA` . `INNODB_BUFFER_PAGE`',
    'SELECT * FROM information_schema.INNODB_SYS_TABLES',
    'SELECT * FROM "information_schema"."columns"',
    'SELECT * FROM information_schema /* x */ . columns',
    'SELECT * FROM ınformation_schema.columns', // dotless ı: not information_schema on MariaDB 10.11, refused anyway
    'SELECT * FROM mysql.user',
    'SELECT * FROM `mysql`.`innodb_index_stats`',
    'SELECT * FROM performance_schema.threads',
    'SELECT * FROM sys.version',
    'SELECT * FROM accounts WHERE id IN (SELECT 1 FROM information_schema.columns)',
    'SELECT (SELECT COUNT(*) FROM mysql.column_stats) FROM accounts',
    'WITH c AS (SELECT * FROM information_schema.tables) SELECT * FROM c',
    'SELECT * FROM accounts JOIN performance_schema.events_statements_history h ON 1 = 1',
  ];

  test('refused in every mode, with writes allowed too', () => {
    verifies('SQL-OTHER-TABLE');
    for (const mode of [0, 1, 2, undefined] as const) {
      for (const sql of SYSTEM) refused(sql, opts(mode, ALL));
    }
  });

  test('a case variant of mysql/sys/performance_schema is a user database in mode 0, a system one in modes 1/2', () => {
    for (const sql of ['SELECT * FROM MYSQL.user', 'SELECT * FROM Sys.version', 'SELECT * FROM PERFORMANCE_SCHEMA.threads']) {
      refused(sql, opts(0), /not this tool's table/);
      refused(sql, opts(1), /system/);
      refused(sql, opts(2), /system/);
    }
    const userDb = { ...opts(0), table: { schema: 'MYSQL', name: 'user' } };
    allowed('SELECT * FROM MYSQL.user', userDb);
    allowed('SELECT * FROM user', userDb);
    refused('SELECT * FROM mysql.user', userDb);
  });

  test('a tool whose table lives in a system database serves nothing', () => {
    for (const [schema, mode] of [
      ['mysql', 0],
      ['information_schema', 0],
      ['INFORMATION_SCHEMA', 0],
      ['MySQL', 1],
      ['SYS', 2],
    ] as const) {
      refused('SELECT * FROM user', { ...opts(mode), table: { schema, name: 'user' } }, /system database/);
    }
  });

  test('functions and keywords that read server or session state are refused', () => {
    for (const sql of [
      'SELECT CURRENT_USER FROM accounts',
      'SELECT current_role FROM accounts',
      'SELECT CURRENT_USER() FROM accounts',
      'SELECT SESSION_USER FROM accounts',
      'SELECT USER() FROM accounts',
      'SELECT SYSTEM_USER() FROM accounts',
      'SELECT DATABASE() FROM accounts',
      'SELECT SCHEMA() FROM accounts',
      'SELECT VERSION() FROM accounts',
      'SELECT CONNECTION_ID() FROM accounts',
      'SELECT UUID() FROM accounts',
      'SELECT UUID_SHORT() FROM accounts',
      'SELECT @@version FROM accounts',
      'SELECT @@hostname',
      'SELECT @@GLOBAL.lower_case_table_names',
      'SELECT * FROM accounts WHERE v = CURRENT_USER',
    ]) {
      refused(sql, opts(0), /.+/);
    }
    // Backquoted, these are column names of the tool's own table.
    allowed('SELECT `current_user`, `user` FROM accounts', opts(0));
  });

  test('what the parser does not know is refused, not guessed: TABLE statement, JSON_TABLE, sequences', () => {
    for (const sql of [
      'TABLE accounts',
      'TABLE ACCOUNTS',
      'SELECT * FROM accounts WHERE id IN (TABLE ACCOUNTS)',
      "SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x INT PATH '$')) accounts",
      'SELECT NEXT VALUE FOR seq',
      'SELECT NEXTVAL(seq)',
      'SELECT PREVIOUS VALUE FOR seq',
    ]) {
      refused(sql, opts(0), /.+/);
    }
  });
});

describe('mysql guard: function names resolve to built-ins only', () => {
  test('names some servers lack (so a stored function of the database would run) are not allowed', () => {
    for (const f of ['ANY_VALUE(v)', "REGEXP_LIKE(v, 'x')", 'NVL(v, 1)', 'UUID_TO_BIN(UUID())', "BIN_TO_UUID(x'00')", "IS_UUID('x')"]) {
      refused(`SELECT ${f} FROM accounts`, opts(0), /not on the list/);
    }
  });

  test('only the ASCII spelling of an allowed name is the built-in (no Unicode case folding)', () => {
    for (const f of ['ſubstr(v, 1)', 'ınstr(v, 1)', 'ıf(1, 2, 3)', 'LOWEᏒ(v)']) refused(`SELECT ${f} FROM accounts`, opts(0), /not on the list/);
    allowed('SELECT substr(v, 1), Instr(v, 1), iF(1, 2, 3) FROM accounts', opts(0));
  });

  test('an allowed name that a stored function of the database also carries is refused, in any case', () => {
    const shadowed = opts(0, { storedFunctions: ['LOWER'] });
    refused('SELECT LOWER(v) FROM accounts', shadowed, /stored function/);
    refused('SELECT lower(v) FROM accounts', shadowed, /stored function/);
    refused('SELECT * FROM accounts WHERE `Lower`(v) = 1', shadowed, /stored function/);
    allowed('SELECT UPPER(v) FROM accounts', shadowed);
    allowed('SELECT LOWER(v) FROM accounts', opts(0)); // verdicts are cached per list
  });
});
