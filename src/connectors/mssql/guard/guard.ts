/**
 * SQL Server guard: one SELECT over the tool's own table (readonly-walk.ts), parsed by sqlparser-rs' MsSql dialect.
 *
 * T-SQL specifics:
 *  - the lexer knows [bracketed] names and nested block comments (SQL Server nests them) and is the authority on
 *    the one statement a batch may hold; `@` is refused outside quotes (variables, @@VERSION and friends);
 *  - names compare case-insensitively (ASCII letters only, so a name the server would not match is refused) unless
 *    the database collation is case-sensitive (recorded at introspection);
 *  - a one-part name resolves in the login's default schema (then dbo): accepted only when that default schema is
 *    the tool's (recorded at introspection), otherwise the agent writes schema.table. Three- and four-part names
 *    (another database, a linked server) are refused;
 *  - unqualified function names always mean built-ins in T-SQL (user functions must be schema-qualified), so the
 *    allow-list below cannot be shadowed; OPENROWSET / OPENQUERY / OPENDATASOURCE / OPENJSON in FROM are table
 *    functions and refused; SELECT ... INTO, FOR XML/JSON and table hints other than NOLOCK are refused.
 */
import { init as initSqlParser } from '@guanmingchiu/sqlparser-ts';
import type { GuardOptions, GuardResult } from '../../shared/sqlguard/types.ts';
import { cachedGuard } from '../../shared/sqlguard/common.ts';
import { decideReadOnly, lexCheck, type NamePart, type ReadOnlyDialect } from '../../shared/sqlguard/readonly-walk.ts';

await initSqlParser();

const ascii = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());

const MSSQL_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates
  'COUNT',
  'COUNT_BIG',
  'SUM',
  'AVG',
  'MIN',
  'MAX',
  'STDEV',
  'STDEVP',
  'VAR',
  'VARP',
  'STRING_AGG',
  'GROUPING',
  'APPROX_COUNT_DISTINCT',
  'CHECKSUM_AGG',
  // window
  'ROW_NUMBER',
  'RANK',
  'DENSE_RANK',
  'NTILE',
  'LAG',
  'LEAD',
  'FIRST_VALUE',
  'LAST_VALUE',
  'CUME_DIST',
  'PERCENT_RANK',
  'PERCENTILE_CONT',
  'PERCENTILE_DISC',
  // logic and conversion
  'IIF',
  'CHOOSE',
  'COALESCE',
  'NULLIF',
  'ISNULL',
  'GREATEST',
  'LEAST',
  'TRY_CAST',
  'TRY_CONVERT',
  'PARSE',
  'TRY_PARSE',
  'ISNUMERIC',
  // strings
  'LEN',
  'DATALENGTH',
  'SUBSTRING',
  'LEFT',
  'RIGHT',
  'UPPER',
  'LOWER',
  'LTRIM',
  'RTRIM',
  'TRIM',
  'REPLACE',
  'CHARINDEX',
  'PATINDEX',
  'CONCAT',
  'CONCAT_WS',
  'FORMAT',
  'STUFF',
  'REPLICATE',
  'REVERSE',
  'SPACE',
  'STR',
  'QUOTENAME',
  'ASCII',
  'CHAR',
  'NCHAR',
  'UNICODE',
  'SOUNDEX',
  'DIFFERENCE',
  'TRANSLATE',
  'STRING_ESCAPE',
  // date and time
  'GETDATE',
  'GETUTCDATE',
  'SYSDATETIME',
  'SYSUTCDATETIME',
  'SYSDATETIMEOFFSET',
  'CURRENT_TIMESTAMP',
  'DATEADD',
  'DATEDIFF',
  'DATEDIFF_BIG',
  'DATEPART',
  'DATENAME',
  'DATEFROMPARTS',
  'DATETIMEFROMPARTS',
  'DATETIME2FROMPARTS',
  'TIMEFROMPARTS',
  'EOMONTH',
  'YEAR',
  'MONTH',
  'DAY',
  'ISDATE',
  'SWITCHOFFSET',
  'TODATETIMEOFFSET',
  'DATETRUNC',
  'DATE_BUCKET',
  // math
  'ABS',
  'CEILING',
  'FLOOR',
  'ROUND',
  'POWER',
  'SQRT',
  'SQUARE',
  'EXP',
  'LOG',
  'LOG10',
  'SIGN',
  'PI',
  'RAND',
  'SIN',
  'COS',
  'TAN',
  'COT',
  'ASIN',
  'ACOS',
  'ATAN',
  'ATN2',
  'DEGREES',
  'RADIANS',
  // json and hashing
  'JSON_VALUE',
  'JSON_QUERY',
  'ISJSON',
  'JSON_OBJECT',
  'JSON_ARRAY',
  'JSON_MODIFY',
  'HASHBYTES',
  'CHECKSUM',
  'BINARY_CHECKSUM',
]);

/**
 * SQL Server's reserved keywords (learn.microsoft.com, "Reserved keywords (Transact-SQL)"), less the niladic
 * functions the parser reports as names: CURRENT_DATE/TIME/TIMESTAMP (harmless) and CURRENT_USER, SESSION_USER,
 * SYSTEM_USER, USER (refused as session keywords, with their own reason).
 */
const TSQL_RESERVED: ReadonlySet<string> = new Set(
  `ADD ALL ALTER AND ANY AS ASC AUTHORIZATION BACKUP BEGIN BETWEEN BREAK BROWSE BULK BY CASCADE CASE CHECK CHECKPOINT
  CLOSE CLUSTERED COALESCE COLLATE COLUMN COMMIT COMPUTE CONSTRAINT CONTAINS CONTAINSTABLE CONTINUE CONVERT CREATE CROSS
  CURRENT CURSOR DATABASE DBCC DEALLOCATE DECLARE DEFAULT DELETE
  DENY DESC DISK DISTINCT DISTRIBUTED DOUBLE DROP DUMP ELSE END ERRLVL ESCAPE EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL
  FETCH FILE FILLFACTOR FOR FOREIGN FREETEXT FREETEXTTABLE FROM FULL FUNCTION GOTO GRANT GROUP HAVING HOLDLOCK IDENTITY
  IDENTITY_INSERT IDENTITYCOL IF IN INDEX INNER INSERT INTERSECT INTO IS JOIN KEY KILL LEFT LIKE LINENO LOAD MERGE
  NATIONAL NOCHECK NONCLUSTERED NOT NULL NULLIF OF OFF OFFSETS ON OPEN OPENDATASOURCE OPENQUERY OPENROWSET OPENXML
  OPTION OR ORDER OUTER OVER PERCENT PIVOT PLAN PRECISION PRIMARY PRINT PROC PROCEDURE PUBLIC RAISERROR READ READTEXT
  RECONFIGURE REFERENCES REPLICATION RESTORE RESTRICT RETURN REVERT REVOKE RIGHT ROLLBACK ROWCOUNT ROWGUIDCOL RULE SAVE
  SCHEMA SECURITYAUDIT SELECT SEMANTICKEYPHRASETABLE SEMANTICSIMILARITYDETAILSTABLE SEMANTICSIMILARITYTABLE
  SET SETUSER SHUTDOWN SOME STATISTICS TABLE TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION
  TRIGGER TRUNCATE TRY_CONVERT TSEQUAL UNION UNIQUE UNPIVOT UPDATE UPDATETEXT USE VALUES VARYING VIEW WAITFOR WHEN
  WHERE WHILE WITH WRITETEXT`.split(/\s+/),
);

/** T-SQL clauses sqlparser's MsSql dialect misreads (OPTION (...) query hints parse as a table alias) or lacks. */
const MSSQL_REFUSED_WORDS: ReadonlySet<string> = new Set(['OPTION', 'COMPUTE', 'XMLNAMESPACES', 'OPENXML', 'OPENROWSET', 'OPENQUERY', 'OPENDATASOURCE']);

const MSSQL: ReadOnlyDialect = {
  parser: 'mssql',
  label: 'SQL Server',
  noRecursiveKeyword: false,
  lex: (sql) => lexCheck(sql, { nestedComments: true, brackets: true, refuseQQuote: false, refusedWords: MSSQL_REFUSED_WORDS }),
  sameName(written: NamePart, stored: string, opts: GuardOptions): boolean {
    return opts.caseSensitiveNames ? written.value === stored : ascii(written.value) === ascii(stored);
  },
  unqualifiedIsOwn: (opts) =>
    opts.defaultSchema !== undefined &&
    (opts.caseSensitiveNames ? opts.defaultSchema === opts.table.schema : ascii(opts.defaultSchema) === ascii(opts.table.schema)),
  unqualifiedSchema: (opts) => opts.defaultSchema,
  functions: MSSQL_FUNCTIONS,
  sessionKeywords: new Set(['CURRENT_USER', 'SESSION_USER', 'SYSTEM_USER', 'USER']),
  dummyTables: new Set(),
  tableHints: new Set(['NOLOCK', 'READUNCOMMITTED']),
  key: (p, opts) => (opts.caseSensitiveNames ? p.value : ascii(p.value)),
  reservedWords: TSQL_RESERVED,
};

const cached = cachedGuard((sql, opts) => decideReadOnly(MSSQL, sql, opts));

/** Decides whether `sql` may run on a SQL Server tool bound to `opts.table` (schema.table). */
export const guardMssqlSql: (sql: string, opts: GuardOptions) => GuardResult = cached.guard;
