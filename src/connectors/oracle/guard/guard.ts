/**
 * Oracle guard: one SELECT over the tool's own table (readonly-walk.ts), parsed by sqlparser-rs' Oracle dialect
 * (present in the sqlparser-rs build we ship, @guanmingchiu/sqlparser-ts 0.62: it parses CONNECT BY, q-quotes,
 * FETCH FIRST). Decision (docs/decisions/0119-oracle-guard.md): that dialect rather than GenericDialect, with the same
 * fail-closed walk and a stricter lexer, because GenericDialect accepts syntax Oracle does not have and misses
 * Oracle's own; what the dialect may still misread is refused before parsing:
 *  - q'...' / nq'...' quoting is refused (the lexer would have to know every delimiter pair);
 *  - `@` is refused outside quotes (table@dblink reaches another database);
 *  - one statement only (oracledb executes exactly one anyway; PL/SQL blocks are not a Query and are refused);
 *  - unquoted names are upper-cased (ASCII letters only: a name Oracle would fold differently is refused) and
 *    compared with the catalog's exact name, quoted names exactly; a one-part name resolves in the tool's schema
 *    because the driver sets CURRENT_SCHEMA to it for every call; DUAL is accepted as the dummy table;
 *  - unqualified SQL built-ins take precedence over schema functions of the same name in Oracle; anything
 *    qualified (DBMS_*, UTL_*, HTTPURITYPE, a package or a schema function) is refused, and USER / UID /
 *    SESSION_USER / CURRENT_USER (bare keywords) read the session and are refused;
 *  - names without parentheses: in Oracle a bare name that is no column in scope calls a parameterless function
 *    (SYS_GUID, a schema function, a synonym of one), and `a.b` that is no column of a table in scope is
 *    package.function or schema.function (DBMS_RANDOM.VALUE). So every such name is resolved as Oracle resolves it
 *    (readonly-names.ts): a column of a FROM item of its SELECT or an enclosing one (the tool's table by its
 *    introspected columns, DUAL, CTEs and inline views by their select lists; an ON clause sees the items joined so
 *    far; select-list aliases only in ORDER BY), or a pseudo-column or niladic built-in on the list below, which
 *    no schema function can shadow; anything else is refused (docs/decisions/0134-oracle-name-resolution.md).
 */
import { init as initSqlParser } from '@guanmingchiu/sqlparser-ts';
import type { GuardOptions, GuardResult } from '../../shared/sqlguard/types.ts';
import { cachedGuard } from '../../shared/sqlguard/common.ts';
import { decideReadOnly, lexCheck, type NamePart, type ReadOnlyDialect } from '../../shared/sqlguard/readonly-walk.ts';

await initSqlParser();

const ascii = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());

const ORACLE_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates and window
  'COUNT',
  'SUM',
  'AVG',
  'MIN',
  'MAX',
  'STDDEV',
  'VARIANCE',
  'MEDIAN',
  'LISTAGG',
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
  'RATIO_TO_REPORT',
  'CORR',
  'COVAR_POP',
  'COVAR_SAMP',
  // null handling and logic
  'NVL',
  'NVL2',
  'NULLIF',
  'COALESCE',
  'DECODE',
  'GREATEST',
  'LEAST',
  'LNNVL',
  // strings
  'UPPER',
  'LOWER',
  'INITCAP',
  'SUBSTR',
  'INSTR',
  'LENGTH',
  'LPAD',
  'RPAD',
  'TRIM',
  'LTRIM',
  'RTRIM',
  'REPLACE',
  'TRANSLATE',
  'CONCAT',
  'ASCII',
  'CHR',
  'SOUNDEX',
  'REGEXP_LIKE',
  'REGEXP_SUBSTR',
  'REGEXP_REPLACE',
  'REGEXP_INSTR',
  'REGEXP_COUNT',
  // numbers
  'ABS',
  'CEIL',
  'FLOOR',
  'ROUND',
  'TRUNC',
  'MOD',
  'REMAINDER',
  'POWER',
  'SQRT',
  'EXP',
  'LN',
  'LOG',
  'SIGN',
  'SIN',
  'COS',
  'TAN',
  'ASIN',
  'ACOS',
  'ATAN',
  'ATAN2',
  'WIDTH_BUCKET',
  'BITAND',
  // dates and conversion
  'TO_CHAR',
  'TO_DATE',
  'TO_NUMBER',
  'TO_TIMESTAMP',
  'TO_TIMESTAMP_TZ',
  'TO_DSINTERVAL',
  'TO_YMINTERVAL',
  'ADD_MONTHS',
  'MONTHS_BETWEEN',
  'LAST_DAY',
  'NEXT_DAY',
  'CURRENT_DATE',
  'CURRENT_TIMESTAMP',
  'SYSTIMESTAMP',
  'LOCALTIMESTAMP',
  'NUMTODSINTERVAL',
  'NUMTOYMINTERVAL',
  'FROM_TZ',
  'SYS_EXTRACT_UTC',
  // json and hashing
  'JSON_VALUE',
  'JSON_QUERY',
  'JSON_OBJECT',
  'JSON_ARRAY',
  'STANDARD_HASH',
  'ORA_HASH',
]);

/**
 * Oracle's reserved words (SQL Language Reference, "Oracle SQL Reserved Words"), less the pseudo-columns the guard
 * admits as names (LEVEL, ROWID, ROWNUM, SYSDATE) and those it refuses as session keywords anyway (UID, USER).
 */
const ORACLE_RESERVED: ReadonlySet<string> = new Set(
  `ACCESS ADD ALL ALTER AND ANY AS ASC AUDIT BETWEEN BY CHAR CHECK CLUSTER COLUMN COMMENT COMPRESS CONNECT CREATE CURRENT
  DATE DECIMAL DEFAULT DELETE DESC DISTINCT DROP ELSE EXCLUSIVE EXISTS FILE FLOAT FOR FROM GRANT GROUP HAVING IDENTIFIED
  IMMEDIATE IN INCREMENT INDEX INITIAL INSERT INTEGER INTERSECT INTO IS LIKE LOCK LONG MAXEXTENTS MINUS MLSLABEL MODE
  MODIFY NOAUDIT NOCOMPRESS NOT NOWAIT NULL NUMBER OF OFFLINE ON ONLINE OPTION OR ORDER PCTFREE PRIOR PUBLIC RAW RENAME
  RESOURCE REVOKE ROW ROWS SELECT SESSION SET SHARE SIZE SMALLINT START SUCCESSFUL SYNONYM TABLE THEN TO TRIGGER UNION
  UNIQUE UPDATE VALIDATE VALUES VARCHAR VARCHAR2 VIEW WHENEVER WHERE WITH`.split(/\s+/),
);

const ORACLE: ReadOnlyDialect = {
  parser: 'oracle',
  label: 'Oracle',
  noRecursiveKeyword: true,
  lex: (sql) => lexCheck(sql, { nestedComments: false, brackets: false, refuseQQuote: true }),
  sameName: (written: NamePart, stored: string): boolean => (written.quoted ? written.value === stored : ascii(written.value) === stored),
  unqualifiedIsOwn: () => true,
  unqualifiedSchema: (opts) => opts.table.schema,
  functions: ORACLE_FUNCTIONS,
  sessionKeywords: new Set(['USER', 'UID', 'SESSION_USER', 'CURRENT_USER', 'CURRENT_SCHEMA', 'ORA_DATABASE_NAME']),
  dummyTables: new Set(['DUAL']),
  tableHints: new Set(),
  key: (p) => (p.quoted ? p.value : ascii(p.value)),
  reservedWords: ORACLE_RESERVED,
  // Pseudo-columns (reserved: no object takes their names) and niladic built-ins (built-ins win over schema functions
  // of the same name) that read nothing but the row, the hierarchy or the clock. DUAL's DUMMY comes from DUAL itself.
  strictNames: new Set([
    'ROWNUM',
    'ROWID',
    'LEVEL',
    'SYSDATE',
    'SYSTIMESTAMP',
    'CURRENT_DATE',
    'CURRENT_TIMESTAMP',
    'LOCALTIMESTAMP',
    'CONNECT_BY_ISLEAF',
    'CONNECT_BY_ISCYCLE',
  ]),
};

const cached = cachedGuard((sql, opts) => decideReadOnly(ORACLE, sql, opts));

/** Decides whether `sql` may run on an Oracle tool bound to `opts.table` (schema.table, as the catalog spells them). */
export const guardOracleSql: (sql: string, opts: GuardOptions) => GuardResult = cached.guard;
