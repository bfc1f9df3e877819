// Unit tests of the SQL Server and Oracle read-only guards (no database: the guards only lex and parse). The shared
// conformance cases (test/connectors/cases.ts) run here against both, since no such server runs on our machines.
import { describe, expect, test } from 'bun:test';
import { guardMssqlSql } from '../../src/connectors/mssql/guard/guard.ts';
import { guardOracleSql } from '../../src/connectors/oracle/guard/guard.ts';
import type { GuardOptions, GuardResult } from '../../src/connectors/shared/sqlguard/types.ts';
import { COMMON_CASES } from '../connectors/cases.ts';
import { verifies } from '../requirements.ts';

const MS: GuardOptions = { table: { schema: 'dbo', name: 'items' }, allowWrite: false, allowDdl: false, readOnly: false, defaultSchema: 'dbo' };
// Even a connector that allows writes gets a read-only guard: these types are read-only through Toolgate.
const MS_RW: GuardOptions = { ...MS, allowWrite: true, allowDdl: true };
const MS_SALES: GuardOptions = { ...MS, table: { schema: 'sales', name: 'items' } };
const ORA: GuardOptions = {
  table: { schema: 'APP', name: 'ITEMS' },
  allowWrite: true,
  allowDdl: true,
  readOnly: false,
  columns: ['ID', 'NAME', 'CREATED', 'PARENT_ID', 'Mixed'],
};

type Guard = (sql: string, o: GuardOptions) => GuardResult;

function allowed(g: Guard, sql: string, o: GuardOptions): void {
  const r = g(sql, o);
  if (!r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be allowed, got: ${r.reason}`);
  expect(r).toEqual({ ok: true, kind: 'select', readOnly: true });
}

function refused(g: Guard, sql: string, o: GuardOptions, fragment?: string | RegExp): string {
  const r = g(sql, o);
  if (r.ok) throw new Error(`expected ${JSON.stringify(sql)} to be refused`);
  if (fragment !== undefined) expect(r.reason).toMatch(fragment);
  return r.reason;
}

describe('SQL Server guard', () => {
  test('the shared conformance cases are refused, also on a connector that allows writes', () => {
    verifies('CONN-MSSQL-GUARD');
    for (const c of COMMON_CASES) {
      refused(guardMssqlSql, c.sql, MS);
      refused(guardMssqlSql, c.sql, MS_RW);
    }
  });

  test('reads of the own table are allowed, in T-SQL syntax', () => {
    verifies('CONN-MSSQL-GUARD');
    for (const sql of [
      'SELECT * FROM items',
      'SELECT TOP 5 id, name FROM dbo.items ORDER BY id',
      'SELECT TOP (10) PERCENT [id] FROM [dbo].[items]',
      "select id from DBO.ITEMS where name like N'a%';",
      'SELECT id FROM dbo.items WITH (NOLOCK)',
      'SELECT id, COUNT(*) AS n FROM items GROUP BY id HAVING COUNT(*) > 1',
      'SELECT id FROM items ORDER BY id OFFSET 5 ROWS FETCH NEXT 5 ROWS ONLY',
      "SELECT CONVERT(varchar(10), id, 120), IIF(id > 1, 'a', 'b'), ISNULL(name, '') FROM items",
      'SELECT DATEADD(day, 1, GETUTCDATE()), DATEDIFF(day, created, SYSUTCDATETIME()) FROM items',
      'WITH c AS (SELECT id FROM items) SELECT * FROM c',
      'SELECT a.id FROM items a CROSS APPLY (SELECT TOP 1 b.id FROM items b WHERE b.id = a.id) c',
      'SELECT id FROM items WHERE id IN (SELECT id FROM dbo.items WHERE name IS NOT NULL)',
      "SELECT ROW_NUMBER() OVER (ORDER BY id) AS rn, STRING_AGG(name, ',') FROM items GROUP BY id",
      'SELECT [option], "Option" FROM items WHERE name = \'OPTION (RECOMPILE)\' -- OPTION in a comment',
      'SELECT optional, option_id FROM items',
      "SELECT COALESCE(name, '') AS n, NULLIF(id, 0) AS z, CONVERT(int, id) AS c FROM items t",
      'SELECT [shutdown], "checkpoint" FROM items',
      'SELECT CURRENT_TIMESTAMP AS now, id FROM items',
      '/* report */ -- daily\nSELECT id FROM items /* a /* nested */ comment */',
      "SELECT '@not_a_variable; DROP TABLE x' AS s FROM items",
    ])
      allowed(guardMssqlSql, sql, MS);
  });

  test('T-SQL ways out are refused', () => {
    verifies('CONN-MSSQL-GUARD');
    const cases: [string, RegExp?][] = [
      ['SELECT @@VERSION', /@/],
      ['DECLARE @x int; SELECT * FROM items', /@|one statement/],
      ["SELECT * FROM items; EXEC xp_cmdshell 'dir'", /one statement/],
      ['SELECT * FROM items\nGO\nDROP TABLE items'],
      ["EXEC xp_cmdshell 'dir'", /EXEC/],
      ['SELECT id INTO #t FROM items', /INTO/],
      ['SELECT id INTO dbo.copy FROM items', /INTO/],
      ['SELECT id FROM items FOR XML AUTO', /FOR XML/],
      ['SELECT id FROM items FOR JSON PATH', /FOR XML/],
      ['SELECT id FROM items WITH (UPDLOCK)', /hints/],
      ['SELECT id FROM items WITH (TABLOCKX, HOLDLOCK)', /hints|reserved word/],
      ["SELECT * FROM OPENROWSET('SQLNCLI', 'Server=x;', 'SELECT 1')"],
      ["SELECT * FROM OPENQUERY(remote, 'SELECT 1')"],
      ["SELECT * FROM OPENJSON('[1]')"],
      ['SELECT * FROM otherdb.dbo.items', /not this tool's table/],
      ['SELECT * FROM remote.otherdb.dbo.items', /not this tool's table/],
      ['SELECT * FROM sys.objects', /not this tool's table/],
      ['SELECT * FROM sys.sql_logins', /not this tool's table/],
      ['SELECT * FROM master.sys.databases', /not this tool's table/],
      ['SELECT * FROM INFORMATION_SCHEMA.TABLES', /not this tool's table/],
      ['SELECT * FROM #temp', /not this tool's table|temporary/],
      ['SELECT * FROM sales.items', /not this tool's table/],
      ['SELECT dbo.fn_secret(id) FROM items', /only built-in/],
      ['SELECT SUSER_SNAME() FROM items', /allowed functions/],
      ['SELECT DB_NAME(), HOST_NAME() FROM items', /allowed functions/],
      ["SELECT OBJECT_ID('dbo.secrets') FROM items", /allowed functions/],
      ["SELECT HAS_PERMS_BY_NAME('x', 'OBJECT', 'SELECT') FROM items", /allowed functions/],
      ['SELECT CURRENT_USER FROM items', /session/],
      ['SELECT SYSTEM_USER FROM items', /session/],
      // T-SQL calls no function without parentheses but these niladic ones (CURRENT_TIMESTAMP aside, harmless).
      ['SELECT SESSION_USER FROM items', /session/],
      ['SELECT USER FROM items', /session/],
      ['SELECT id FROM items WHERE name = user', /session/],
      ['SELECT {fn USER()} FROM items'],
      ["UPDATE items SET name = 'x'", /UPDATE/],
      ['INSERT INTO items (id) VALUES (1)', /INSERT/],
      ['DELETE FROM items', /DELETE/],
      ['MERGE INTO items USING items s ON 1 = 0 WHEN NOT MATCHED THEN INSERT (id) VALUES (1);'],
      ["WAITFOR DELAY '00:10:00'"],
      ['SELECT * FROM items /* unterminated', /unterminated/],
      ['SELECT * FROM items /* a /* b */', /unterminated/],
      ["SELECT 'open FROM items", /unterminated/],
      ['SELECT [id FROM items', /unterminated/],
      ['SHUTDOWN WITH NOWAIT'],
      ["BACKUP DATABASE x TO DISK = 'c:\\x'"],
      ['SELECT * FROM items UNION SELECT * FROM secrets', /not this tool's table/],
      // sqlparser reads OPTION (...) as a table alias; the server reads query hints.
      // No backslash escapes in T-SQL: the parser agrees with the server where the string ends.
      ["SELECT 'a\\' , secret FROM secrets --' FROM items", /not this tool's table/],
      ["SELECT N'a\\' , secret FROM secrets --' FROM items", /not this tool's table/],
      ['SELECT [a\\] , secret FROM secrets --] FROM items', /not this tool's table/],
      ['SELECT * FROM items OPTION (RECOMPILE)', /OPTION is not allowed/],
      // No `;` needed between T-SQL statements: a reserved word the parser takes for an alias starts a second one.
      ['SELECT * FROM items SHUTDOWN', /SHUTDOWN is a reserved word/],
      ['SELECT * FROM dbo.items CHECKPOINT', /reserved word/],
      ['SELECT id FROM items RECONFIGURE', /reserved word/],
      ['SELECT * FROM items REVERT', /reserved word/],
      ['SELECT id AS x FROM items t DBCC', /reserved word|parsed/],
      ['SELECT * FROM items KILL 55'],
      ["SELECT * FROM items WAITFOR DELAY '01:00:00'"],
      ['SELECT * FROM items DELETE FROM items'],
      ['SELECT * FROM items EXEC sp_who'],
      ['SELECT * FROM items BEGIN TRAN'],
      ['SELECT * FROM items OPTION (TABLE HINT(items, UPDLOCK))', /OPTION/],
      ['SELECT geography::Point(1, 2, 4326)', /::/],
      ['SELECT id::text FROM items', /::/],
      ['SELECT NEXT VALUE FOR dbo.seq AS n FROM items'],
      ["SELECT * FROM items FOR SYSTEM_TIME AS OF '2020-01-01'", /version/],
      ['SELECT * FROM items TABLESAMPLE (10 PERCENT)', /sample/],
      ["SELECT CAST(name AS xml).value('x', 'int') FROM items"],
      ['SELECT * FROM CHANGETABLE(CHANGES dbo.items, 0) c'],
      ['SELECT $action FROM items'],
      ['SELECT * FROM items PIVOT (SUM(id) FOR name IN ([a])) p'],
    ];
    for (const [sql, fragment] of cases) refused(guardMssqlSql, sql, MS, fragment);
  });

  test("a one-part name is accepted only when the login's default schema is the tool's", () => {
    verifies('CONN-MSSQL-GUARD');
    refused(guardMssqlSql, 'SELECT * FROM items', MS_SALES, /sales\.items/);
    allowed(guardMssqlSql, 'SELECT * FROM sales.items', MS_SALES);
    refused(guardMssqlSql, 'SELECT * FROM items', { ...MS, defaultSchema: undefined }, /with its schema/);
  });

  test('names compare case-insensitively (ASCII only), exactly on a case-sensitive database', () => {
    verifies('CONN-MSSQL-GUARD');
    allowed(guardMssqlSql, 'SELECT * FROM DBO.Items', MS);
    refused(guardMssqlSql, 'SELECT * FROM DBO.Items', { ...MS, caseSensitiveNames: true });
    allowed(guardMssqlSql, 'SELECT * FROM dbo.items', { ...MS, caseSensitiveNames: true });
    // 'ı' (dotless i) upper-cases to 'I' in JavaScript; the server would not take it for items.
    refused(guardMssqlSql, 'SELECT * FROM dbo.ıtems', MS);
  });
});

describe('Oracle guard', () => {
  test('the shared conformance cases are refused', () => {
    verifies('CONN-ORACLE-GUARD');
    for (const c of COMMON_CASES) refused(guardOracleSql, c.sql.replace(/\bitems\b/g, 'items'), ORA);
  });

  test('reads of the own table are allowed, in Oracle syntax', () => {
    verifies('CONN-ORACLE-GUARD');
    for (const sql of [
      'SELECT * FROM items',
      'SELECT id, name FROM app.items WHERE ROWNUM <= 5',
      'SELECT "ID" FROM "APP"."ITEMS"',
      'SELECT id FROM items ORDER BY id FETCH FIRST 5 ROWS ONLY',
      "SELECT NVL(name, 'x'), TO_CHAR(created, 'YYYY-MM-DD'), SYSDATE FROM items",
      'SELECT id FROM items START WITH id = 1 CONNECT BY PRIOR id = parent_id',
      'SELECT 1 FROM dual',
      'WITH c AS (SELECT id FROM items) SELECT * FROM c',
      'SELECT id, COUNT(*) OVER (PARTITION BY name) FROM items;',
      "SELECT DECODE(id, 1, 'one', 'other') FROM items WHERE name LIKE 'a%'",
      'SELECT id FROM items MINUS SELECT id FROM items WHERE id > 5',
    ])
      allowed(guardOracleSql, sql, ORA);
  });

  test('Oracle ways out are refused', () => {
    verifies('CONN-ORACLE-GUARD');
    const cases: [string, RegExp?][] = [
      ['SELECT * FROM items@remote_link', /@/],
      ['SELECT * FROM "Items"', /not this tool's table/],
      ['SELECT * FROM other.items', /not this tool's table/],
      ['SELECT * FROM all_users', /not this tool's table/],
      ['SELECT * FROM sys.user$', /not this tool's table/],
      ['SELECT * FROM v$session', /not this tool's table/],
      ['SELECT * FROM dba_users', /not this tool's table/],
      ["SELECT SYS_CONTEXT('USERENV', 'SESSION_USER') FROM dual", /allowed functions/],
      ['SELECT DBMS_RANDOM.VALUE FROM dual'],
      ["SELECT UTL_HTTP.REQUEST('http://x') FROM dual", /only built-in/],
      ["SELECT HTTPURITYPE('http://x').getclob() FROM dual"],
      ['SELECT app.secret_fn(id) FROM items', /only built-in/],
      ['SELECT USER FROM dual', /session/],
      ['SELECT UID FROM dual', /session/],
      ["SELECT q'[x]' FROM items", /q'/],
      ["SELECT nq'{x}' FROM items", /q'/],
      ['SELECT * FROM items FOR UPDATE', /FOR UPDATE/],
      ['BEGIN NULL; END;'],
      ["BEGIN EXECUTE IMMEDIATE 'DROP TABLE items'; END;"],
      ['DELETE FROM items', /DELETE/],
      ['UPDATE items SET name = 1', /UPDATE/],
      ['ALTER SESSION SET CURRENT_SCHEMA = SYS'],
      ['SELECT * FROM items; SELECT * FROM secrets', /one statement/],
      ['SELECT * FROM items /* a /* b */ */', /comment/],
      ['SELECT * FROM TABLE(some_fn())'],
      ['SELECT /*+ full(items) */ * FROM items'],
      ['SELECT CURSOR(SELECT * FROM secrets) FROM dual'],
      ['SELECT * FROM items AS OF TIMESTAMP SYSDATE'],
      ['SELECT * FROM items SAMPLE(10)'],
      ['SELECT * FROM items PARTITION (p1)'],
      ['SELECT seq.NEXTVAL FROM dual', /packages/],
      ['SELECT id FROM items WHERE id = :1', /PLACEHOLDER/],
      ["SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a NUMBER PATH '$'))"],
      ['SELECT id::text FROM items', /::/],
      ['SELECT id FROM items MINUS SELECT secret FROM secrets', /not this tool's table|not a column/],
      ['SELECT id FROM items lock', /reserved word/],
      ["SELECT 'a\\' , secret FROM secrets --' FROM items", /not a column|not this tool's table/],
    ];
    for (const [sql, fragment] of cases) refused(guardOracleSql, sql, ORA, fragment);
  });

  test("names without parentheses: only columns, aliases and pseudo-columns; qualifiers only from the SELECT's own tables", () => {
    verifies('CONN-ORACLE-GUARD');
    for (const sql of [
      'SELECT i.id, items.name FROM items i, items',
      'SELECT app.items.id FROM items',
      'SELECT n FROM (SELECT COUNT(*) n FROM items)',
      'SELECT * FROM items a WHERE EXISTS (SELECT 1 FROM items b WHERE b.parent_id = a.id)',
      'SELECT "Mixed" FROM items',
      'SELECT id, LEVEL FROM items CONNECT BY PRIOR id = parent_id',
      'SELECT c.k FROM (SELECT id AS k FROM items) c ORDER BY c.k',
    ])
      allowed(guardOracleSql, sql, ORA);
    for (const [sql, fragment] of [
      ['SELECT evil_fn FROM items', /not a column/],
      ['SELECT "ID", mixed FROM items', /not a column/],
      ['SELECT dbms_random.value FROM items', /packages/],
      ['SELECT x.a FROM (SELECT dbms_random.value a FROM dual) x, items dbms_random', /packages/],
      ['SELECT x.a FROM (SELECT o.id a FROM dual) x, items o', /packages/],
      ['SELECT app.evil_fn FROM items', /packages/],
      ['SELECT other.items.id FROM items', /packages/],
    ] as const)
      refused(guardOracleSql, sql, ORA, fragment);
  });
  test('every name without parentheses resolves to a column of a FROM item in scope: no function of that name can run', () => {
    verifies('CONN-ORACLE-GUARD', 'CONN-ORACLE-NAMES');
    for (const sql of [
      // A select-list alias in ORDER BY (the one place Oracle resolves it).
      'SELECT name AS n FROM items ORDER BY n',
      'SELECT id a FROM items UNION SELECT id FROM items ORDER BY a',
      'SELECT i.* FROM items i',
      'SELECT v.id, v.name FROM (SELECT * FROM items) v',
      'WITH c (x) AS (SELECT id FROM items) SELECT x, c.x FROM c',
      'SELECT x FROM (SELECT id x FROM items) WHERE x > 1',
      'SELECT id FROM items i JOIN items j USING (id)',
      'SELECT i.id FROM items i JOIN items j ON i.id = j.parent_id',
      "SELECT 1 FROM items a WHERE EXISTS (SELECT 1 FROM items b WHERE b.id = a.id AND name = 'x')",
      'SELECT dummy FROM dual',
      // A correlated subquery sees the columns of the SELECT around it.
      'SELECT id FROM items WHERE id IN (SELECT name FROM dual)',
      'SELECT ROWNUM, ROWID, SYSDATE, SYSTIMESTAMP, CURRENT_DATE FROM items',
      'WITH r (n) AS (SELECT 1 FROM dual UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r',
    ])
      allowed(guardOracleSql, sql, ORA);
    for (const [sql, fragment] of [
      // A column of the tool's table where no FROM item of that SELECT has it: Oracle calls function NAME.
      ['SELECT name FROM dual', /"name" is not a column/],
      ['SELECT 1 FROM dual WHERE 1 IN (SELECT name FROM dual)', /"name" is not a column/],
      ['WITH c AS (SELECT id FROM items) SELECT name FROM c', /"name" is not a column/],
      ['SELECT name FROM (SELECT id FROM items)', /"name" is not a column/],
      ['WITH c (x) AS (SELECT id FROM items) SELECT id FROM c', /"id" is not a column/],
      ['SELECT x FROM (SELECT 1 FROM dual)', /"x" is not a column/],
      // An alias where Oracle does not resolve aliases: WHERE, GROUP BY, HAVING, another SELECT, another branch.
      ['SELECT 1 AS f FROM items WHERE f = 1', /"f" is not a column/],
      ['SELECT name AS n, COUNT(*) FROM items GROUP BY n', /"n" is not a column/],
      ['SELECT COUNT(*) AS c FROM items HAVING c > 1', /"c" is not a column/],
      ['SELECT k FROM items WHERE id IN (SELECT id AS k FROM items)', /"k" is not a column/],
      ['SELECT id a FROM items UNION SELECT id b FROM items ORDER BY b', /"b" is not a column/],
      ['SELECT id FROM items i JOIN items i2 ON f = 1 CROSS JOIN (SELECT 1 f FROM dual) v', /"f" is not a column/],
      // An inline view sees nothing of the SELECT around it.
      ['SELECT * FROM items a, (SELECT parent_id x FROM dual) v', /"parent_id" is not a column/],
      ['SELECT * FROM items a, (SELECT a.id x FROM dual) v', /"a.id" is not a column/],
      // Built-in or user functions without parentheses, and a qualifier whose name is no column of it.
      ['SELECT SYS_GUID FROM items', /"SYS_GUID" is not a column/],
      ['SELECT id FROM items WHERE name = evil_fn', /"evil_fn" is not a column/],
      ['SELECT i.evil_fn FROM items i', /not a column/],
      ['SELECT app.evil_fn FROM items app', /not a column/],
      ['SELECT d.evil_fn FROM dual d', /not a column/],
      ['SELECT app.items.evil_fn FROM items', /not a column/],
      ['SELECT x.* FROM items i', /t\.\* needs t/],
    ] as const)
      refused(guardOracleSql, sql, ORA, fragment);
  });
});
