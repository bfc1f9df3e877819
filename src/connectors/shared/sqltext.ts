/**
 * Makes a guarded statement safe to embed in the driver's row-limiting wrapper. This is not the SQL guard (that is each
 * type's guard/): it only checks that the statement's text is self-contained, so wrapping cannot change what it means.
 */

/**
 * What a SQL type's text looks like to the lexers here and in shared/saved.ts: each type's folder describes its own
 * (`syntax` of its Dialect, shared/prepare.ts), so no shared lexer names a type. Every field is set on every
 * descriptor (one object shape for the hot path).
 */
export interface SqlSyntax {
  /** `#` starts a line comment (MySQL). */
  hashComments: boolean;
  /** `--` starts a comment only when a space or control character follows (MySQL). */
  dashCommentNeedsSpace: boolean;
  /** Block comments nest (PostgreSQL). */
  nestedComments: boolean;
  /** `/*! ... *\/` comments run their content, so a statement with one is refused (MySQL). */
  executableComments: boolean;
  /** Where a backslash escapes inside quotes: every quote but the backtick (MySQL), `E'...'` strings (PostgreSQL), or nowhere. */
  backslash: 'quotes' | 'e-strings' | 'none';
  /** Backtick-quoted names (MySQL). */
  backtickNames: boolean;
  /** `[bracketed]` names (SQL Server). */
  bracketNames: boolean;
  /** Alternative quoting `q'[...]'` (Oracle). */
  qQuotes: boolean;
  /** Dollar quoting `$tag$...$tag$` (PostgreSQL); also the driver's positional markers are `$1`. */
  dollarQuotes: boolean;
  /** The driver's own positional marker a saved template must not use: `$1` (PostgreSQL), `?` (MySQL), or none. */
  positional: '$1' | '?' | null;
}

export type WrapCheck = { ok: true; body: string } | { ok: false; reason: string };

/**
 * Lexes `sql` just enough (strings, quoted identifiers, comments, dollar quotes) to check that its parentheses
 * balance and nothing is left open, then drops a trailing `;` (and what follows it, if only comments).
 * A statement like `SELECT 1) AS q UNION SELECT ... (` is refused: inside `SELECT * FROM (<sql>) q` it would close
 * the wrapper early. MySQL executable comments (`/*! ... *\/`) are refused: MySQL runs their content, which this
 * lexer would skip.
 */
export function checkWrappable(sql: string, syntax: SqlSyntax): WrapCheck {
  let depth = 0;
  let end = -1; // position of the terminating ';'
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (end >= 0 && !/\s/.test(c) && c !== ';' && !(c === '-' && next === '-') && !(c === '/' && next === '*') && !(syntax.hashComments && c === '#')) {
      return { ok: false, reason: 'Send exactly one statement: text follows the terminating semicolon.' };
    }
    if (c === '-' && next === '-' && (!syntax.dashCommentNeedsSpace || i + 2 >= n || /[\s\x00-\x1f]/.test(sql[i + 2]!))) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === '#' && syntax.hashComments) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === '/' && next === '*') {
      if (syntax.executableComments && /^\/\*(!|M!)/.test(sql.slice(i, i + 4))) {
        return { ok: false, reason: 'Executable comments (/*! ... */) are not accepted.' };
      }
      const close = skipBlockComment(sql, i, syntax.nestedComments);
      if (close < 0) return { ok: false, reason: 'The statement has an unterminated comment.' };
      i = close;
    } else if (c === "'" || c === '"' || c === '`') {
      const backslash =
        syntax.backslash === 'quotes'
          ? c !== '`'
          : syntax.backslash === 'e-strings' && c === "'" && /[eE]/.test(sql[i - 1] ?? '') && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? '');
      const close = skipQuoted(sql, i, c, backslash);
      if (close < 0) return { ok: false, reason: 'The statement has an unterminated string or quoted name.' };
      i = close;
    } else if (c === '$' && syntax.dollarQuotes && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? '')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 65));
      if (!tag) {
        i++;
        continue;
      }
      const close = sql.indexOf(tag[0], i + tag[0].length);
      if (close < 0) return { ok: false, reason: 'The statement has an unterminated dollar-quoted string.' };
      i = close + tag[0].length;
    } else {
      if (end < 0) {
        if (c === '(') depth++;
        else if (c === ')' && --depth < 0) return { ok: false, reason: 'The statement has unbalanced parentheses.' };
        else if (c === ';') end = i;
      }
      i++;
    }
  }
  if (depth !== 0) return { ok: false, reason: 'The statement has unbalanced parentheses.' };
  return { ok: true, body: end >= 0 ? sql.slice(0, end) : sql };
}

/** Index just past the comment starting at `start` (postgres block comments nest), or -1. */
function skipBlockComment(sql: string, start: number, nested: boolean): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth = nested ? depth + 1 : 1;
      i += 2;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else i++;
  }
  return -1;
}

/** Index just past the quoted run starting at `start` (a doubled quote escapes it), or -1. */
function skipQuoted(sql: string, start: number, quote: string, backslash: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslash && c === '\\') i += 2;
    else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return -1;
}
