/** MySQL guard: the allow-list of functions an agent may call, and the check applied to each call. */

import { Refusal, clip } from './common.ts';

/**
 * Side-effect-free built-in functions an agent may call (upper case).
 *
 * Only names that are native on both MySQL 8 and MariaDB 10.6+: a name the server does not know as a built-in
 * resolves, unqualified, to a stored function of that name in the default database, which is the tool's own and
 * may hold a function reading any table. Hence not here: ANY_VALUE, REGEXP_LIKE, UUID_TO_BIN, BIN_TO_UUID, IS_UUID
 * (not native on MariaDB 10.11: verified, each resolves to `<db>.<name>`) and NVL (not native on MySQL). For older
 * servers missing a built-in listed here, introspection records same-named stored functions and the guard refuses
 * those names (GuardOptions.storedFunctions).
 */
export const SAFE_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates
  'COUNT', 'SUM', 'AVG', 'MIN', 'MAX', 'GROUP_CONCAT', 'BIT_AND', 'BIT_OR', 'BIT_XOR', 'STD', 'STDDEV',
  'STDDEV_POP', 'STDDEV_SAMP', 'VARIANCE', 'VAR_POP', 'VAR_SAMP', 'JSON_ARRAYAGG', 'JSON_OBJECTAGG',
  // window functions
  'ROW_NUMBER', 'RANK', 'DENSE_RANK', 'PERCENT_RANK', 'CUME_DIST', 'NTILE', 'LAG', 'LEAD', 'FIRST_VALUE',
  'LAST_VALUE', 'NTH_VALUE',
  // control flow and comparison
  'IF', 'IFNULL', 'NULLIF', 'COALESCE', 'GREATEST', 'LEAST', 'ISNULL', 'INTERVAL',
  // grammar constructs the parser reports as functions (ROW(a, b), INSERT ... ON DUPLICATE KEY UPDATE VALUES(c))
  'ROW', 'VALUES',
  // strings
  'LOWER', 'UPPER', 'LCASE', 'UCASE', 'LENGTH', 'CHAR_LENGTH', 'CHARACTER_LENGTH', 'OCTET_LENGTH', 'BIT_LENGTH',
  'SUBSTRING', 'SUBSTR', 'MID', 'SUBSTRING_INDEX', 'LEFT', 'RIGHT', 'TRIM', 'LTRIM', 'RTRIM', 'LPAD', 'RPAD',
  'CONCAT', 'CONCAT_WS', 'REPLACE', 'REVERSE', 'REPEAT', 'SPACE', 'LOCATE', 'INSTR', 'POSITION', 'FIELD',
  'FIND_IN_SET', 'ELT', 'FORMAT', 'INSERT', 'STRCMP', 'SOUNDEX', 'QUOTE', 'ASCII', 'ORD', 'CHAR', 'HEX', 'UNHEX',
  'BIN', 'OCT', 'CONV', 'TO_BASE64', 'FROM_BASE64', 'MD5', 'SHA1', 'SHA', 'SHA2', 'CRC32', 'REGEXP_REPLACE', 'REGEXP_SUBSTR', 'REGEXP_INSTR',
  // date and time
  'NOW', 'CURDATE', 'CURTIME', 'CURRENT_DATE', 'CURRENT_TIME', 'CURRENT_TIMESTAMP', 'LOCALTIME', 'LOCALTIMESTAMP',
  'SYSDATE', 'UTC_DATE', 'UTC_TIME', 'UTC_TIMESTAMP', 'UNIX_TIMESTAMP', 'FROM_UNIXTIME', 'DATE', 'TIME', 'YEAR',
  'MONTH', 'DAY', 'DAYOFMONTH', 'DAYOFWEEK', 'DAYOFYEAR', 'DAYNAME', 'MONTHNAME', 'HOUR', 'MINUTE', 'SECOND',
  'MICROSECOND', 'WEEK', 'WEEKDAY', 'WEEKOFYEAR', 'YEARWEEK', 'QUARTER', 'DATE_ADD', 'DATE_SUB', 'ADDDATE',
  'SUBDATE', 'ADDTIME', 'SUBTIME', 'DATEDIFF', 'TIMEDIFF', 'TIMESTAMPDIFF', 'TIMESTAMPADD', 'TIMESTAMP',
  'DATE_FORMAT', 'TIME_FORMAT', 'STR_TO_DATE', 'GET_FORMAT', 'LAST_DAY', 'MAKEDATE', 'MAKETIME', 'PERIOD_ADD',
  'PERIOD_DIFF', 'SEC_TO_TIME', 'TIME_TO_SEC', 'TO_DAYS', 'FROM_DAYS', 'TO_SECONDS', 'EXTRACT', 'CONVERT_TZ',
  // math
  'ABS', 'ROUND', 'FLOOR', 'CEIL', 'CEILING', 'TRUNCATE', 'MOD', 'POW', 'POWER', 'SQRT', 'EXP', 'LN', 'LOG', 'LOG2',
  'LOG10', 'SIGN', 'PI', 'RAND', 'DEGREES', 'RADIANS', 'SIN', 'COS', 'TAN', 'COT', 'ASIN', 'ACOS', 'ATAN', 'ATAN2',
  // json
  'JSON_EXTRACT', 'JSON_UNQUOTE', 'JSON_QUOTE', 'JSON_OBJECT', 'JSON_ARRAY', 'JSON_CONTAINS', 'JSON_CONTAINS_PATH',
  'JSON_LENGTH', 'JSON_KEYS', 'JSON_VALID', 'JSON_TYPE', 'JSON_DEPTH', 'JSON_SEARCH', 'JSON_VALUE', 'JSON_SET',
  'JSON_INSERT', 'JSON_REPLACE', 'JSON_REMOVE', 'JSON_MERGE_PATCH', 'JSON_MERGE_PRESERVE', 'JSON_ARRAY_APPEND',
  'JSON_ARRAY_INSERT', 'JSON_PRETTY', 'JSON_OVERLAPS',
  // misc
  // Not UUID(): a version-1 UUID carries the server host's MAC address (server state, see docs/decisions/0032-mysql-names-as-server-resolves.md).
  'INET_ATON', 'INET_NTOA', 'INET6_ATON', 'INET6_NTOA',
]);

/**
 * Refuses a call unless its name (given as name parts) is a single, unqualified name on SAFE_FUNCTIONS and no
 * stored function of the tool's database carries it (`stored`: upper-case names; function names are
 * case-insensitive in MySQL).
 */
export function checkFunction(parts: string[], stored: ReadonlySet<string>): void {
  const label = clip(parts.join('.'));
  if (parts.length !== 1) throw new Refusal(`stored function ${label}() is not allowed; only built-in functions are`);
  // ASCII upper case only: JavaScript maps 'ſ' to 'S' and 'ı' to 'I', so `ſubstr(` would pass as SUBSTR while the
  // server, not knowing it as a built-in, would call a stored function of that name.
  const upper = parts[0]!.replace(/[a-z]+/g, (m) => m.toUpperCase());
  if (!SAFE_FUNCTIONS.has(upper)) {
    throw new Refusal(`function ${label}() is not on the list of allowed functions (plain aggregates, string, date, math and JSON functions)`);
  }
  if (stored.has(upper)) throw new Refusal(`function ${label}() may resolve to a stored function of the same name in this database`);
}
