/**
 * MySQL guard: the checks on the raw text, chiefly a tokenizer written to MySQL's own lexical rules
 * (comments, `--`, quotes and backslashes, statement boundaries) and the words it refuses at token level.
 */

import type { GuardOptions } from '../../shared/sqlguard/types.ts';
import { Refusal, clip } from '../../shared/sqlguard/common.ts';
import { type LowerCaseTableNames, isSystemDatabase } from './names.ts';

/**
 * Refused at token level when followed by `(`, whatever the parser makes of the text — a second net
 * under the allow-list for the functions that matter most.
 */
const DANGEROUS_FUNCTIONS: ReadonlySet<string> = new Set([
  'LOAD_FILE',
  'SLEEP',
  'BENCHMARK',
  'GET_LOCK',
  'RELEASE_LOCK',
  'RELEASE_ALL_LOCKS',
  'IS_FREE_LOCK',
  'IS_USED_LOCK',
  'MASTER_POS_WAIT',
  'SOURCE_POS_WAIT',
  'MASTER_GTID_WAIT',
  'WAIT_FOR_EXECUTED_GTID_SET',
  'WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS',
  'SYS_EXEC',
  'SYS_EVAL',
  'SYS_GET',
  'SYS_SET',
  'LAST_INSERT_ID',
]);

const FILE_WORDS: ReadonlySet<string> = new Set(['OUTFILE', 'DUMPFILE']);

export interface Token {
  kind: 'word' | 'quoted_ident' | 'string' | 'punct';
  text: string;
}

function isSpaceOrControl(code: number): boolean {
  return code <= 32 || code === 127;
}

function isWordChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code === 36 || code >= 128;
}

/** End index (exclusive) of a quoted string starting at `start`, or -1 if unterminated. */
function scanQuoted(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return -1;
}

/**
 * Splits `sql` as MySQL's lexer would, and refuses what the parser might read differently.
 * Returns the tokens (comments and white space dropped), or throws a Refusal.
 */
export function lexMysql(sql: string): Token[] {
  const tokens: Token[] = [];
  let sawSemicolon = false;
  let i = 0;
  const n = sql.length;
  const push = (t: Token) => {
    if (sawSemicolon) throw new Refusal('found more than one statement; send exactly one (a single trailing semicolon is fine)', 'multiple_statements');
    tokens.push(t);
  };
  while (i < n) {
    const c = sql[i]!;
    const code = c.charCodeAt(0);
    if (isSpaceOrControl(code)) {
      i++;
      continue;
    }
    if (c === '#') {
      const nl = sql.indexOf('\n', i);
      i = nl === -1 ? n : nl + 1;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const next = sql.charCodeAt(i + 2);
      if (i + 2 >= n || isSpaceOrControl(next)) {
        const nl = sql.indexOf('\n', i);
        i = nl === -1 ? n : nl + 1;
        continue;
      }
      throw new Refusal('"--" must be followed by a space to start a comment (MySQL reads "--x" as two minus signs)');
    }
    if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end === -1) throw new Refusal('a /* comment is not closed', 'parse_error');
      // MySQL does not nest comments; some parsers do. Refuse the ambiguity rather than guess.
      const inner = sql.indexOf('/*', i + 2);
      if (inner !== -1 && inner < end) throw new Refusal('"/*" inside a comment is not allowed (comments do not nest in MySQL)');
      i = end + 2;
      continue;
    }
    if (c === "'" || c === '"') {
      const endEsc = scanQuoted(sql, i, c, true);
      const endRaw = scanQuoted(sql, i, c, false);
      if (endEsc === -1 && endRaw === -1) throw new Refusal('a quoted string is not closed', 'parse_error');
      if (endEsc !== endRaw) {
        throw new Refusal(
          `the string starting ${clip(sql.slice(i, i + 30), 40)} ends differently depending on the server's backslash-escape setting; double the quote ('') instead of \\'`,
        );
      }
      push({ kind: 'string', text: sql.slice(i, endEsc) });
      i = endEsc;
      continue;
    }
    if (c === '`') {
      const end = scanQuoted(sql, i, '`', false);
      if (end === -1) throw new Refusal('a `quoted` identifier is not closed', 'parse_error');
      push({ kind: 'quoted_ident', text: sql.slice(i + 1, end - 1).replace(/``/g, '`') });
      i = end;
      continue;
    }
    if (c === ';') {
      if (sawSemicolon) throw new Refusal('found more than one statement; send exactly one (a single trailing semicolon is fine)', 'multiple_statements');
      sawSemicolon = true;
      i++;
      continue;
    }
    if (c === '@') throw new Refusal('variables (@name, @@name) are not allowed');
    if (isWordChar(code)) {
      let j = i + 1;
      while (j < n && isWordChar(sql.charCodeAt(j))) j++;
      push({ kind: 'word', text: sql.slice(i, j) });
      i = j;
      continue;
    }
    push({ kind: 'punct', text: c });
    i++;
  }
  return tokens;
}

export function checkTokens(tokens: Token[], opts: GuardOptions): void {
  const mode: LowerCaseTableNames = opts.lowerCaseTableNames ?? 0;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.kind !== 'word' && t.kind !== 'quoted_ident') continue;
    const upper = t.text.toUpperCase();
    const next = tokens[k + 1];
    if (t.kind === 'word' && FILE_WORDS.has(upper)) throw new Refusal(`INTO ${upper} writes a file on the server`);
    if (next?.kind === 'punct' && next.text === '(' && DANGEROUS_FUNCTIONS.has(upper)) {
      throw new Refusal(`function ${upper}() is not allowed`, 'function_not_allowed');
    }
    // A second net under the walk's own-database check: a tool's database is never a system one (decide()).
    if (next?.kind === 'punct' && next.text === '.' && isSystemDatabase(t.text, mode)) {
      throw new Refusal(`the system schema ${clip(t.text)} is not this tool's table`, 'other_table');
    }
  }
}

/** Refuses executable comments and optimizer hints anywhere in the text, even in a string: the reason, or undefined. */
export function checkExecutableComments(sql: string): string | undefined {
  // Executable comments run their content on MySQL/MariaDB; refuse them wherever they are.
  if (/\/\*\s*(?:!|M!)/i.test(sql)) return 'executable comments (/*! ... */, /*M! ... */) are not allowed';
  if (sql.includes('/*+')) return 'optimizer hints (/*+ ... */) are not allowed';
  return undefined;
}
