/**
 * The text of a statement with its small numeric literals replaced by their kind: the key under which the guard
 * reuses a verdict for texts that differ only in such numbers (agents write `WHERE id > 5012`, then `> 5013`), so a
 * new text of a known form is neither parsed nor walked again (issue 27; docs/decisions/0291-guard-verdicts-by-literal-form.md).
 *
 * Why a verdict can be reused: the guard's walk never reads a numeric literal's value (walk.ts returns at every
 * `A_Const`), and the statement's shape (shape.ts) keeps only the kind of a numeric literal, except in the positions
 * where it keeps the value (ORDER BY 2, type modifiers): the caller reuses a verdict only when the first text of the
 * form had no such kept value (`ShapeInfo.exact`). Two texts with one key have the same tokens but for the numbers
 * replaced here, so they parse to the same tree but for those constants, each of the same kind in both:
 *  - an integer of at most 9 digits is an int4 constant whatever its value, with or without a minus the grammar folds
 *    into it (both signs fit): `\u0001i`;
 *  - a decimal with a point or an exponent is a numeric constant whatever its value: `\u0001n`;
 *  - every other number (10 digits or more, hex, octal, binary, with underscores, a point first, or run into letters
 *    or another point) stays as written, so it only ever shares a key with the same text.
 * The scan is conservative: a text with a backslash (E'' strings, escapes), a `$` (dollar quotes, parameters), `u&`
 * (Unicode escapes), a NUL, the marker character, or a comment or quote left open gets no key (`null`): it is parsed as
 * before. Everything else is copied as written: identifiers (a number inside `t1` is part of the name), quoted
 * identifiers and string literals (with their doubled quotes), comments (nested block comments counted), operators.
 */

const MARK = '\u0001';

/** Character codes the scan compares with. */
const QUOTE = 39; // '
const DOUBLE_QUOTE = 34; // "
const DASH = 45; // -
const SLASH = 47; // /
const STAR = 42; // *
const DOT = 46; // .
const ZERO = 48;
const NINE = 57;

const isDigit = (c: number) => c >= ZERO && c <= NINE;
/** A character that continues an identifier or a number token (letters, digits, `_`, `$`, anything past ASCII). */
const isWordChar = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || isDigit(c) || c === 95 || c === 36 || c >= 128;

/** Refused forms: the scan does not model them, so the text gets no key. */
const UNMODELLED = /[\\$\u0000\u0001]|u&/i;

/**
 * Where a number that runs into letters, digits or points ends (`1_000e+2`, `0x1F`, `12abc`, `1.2.3`): the whole run,
 * with the sign of an exponent, is kept as written. Taking more than PostgreSQL's lexer would is safe (nothing in it
 * is replaced); taking less would let a digit of the run be read as a number of its own.
 */
function opaqueEnd(sql: string, from: number): number {
  let j = from;
  for (;;) {
    while (j < sql.length && (isWordChar(sql.charCodeAt(j)) || sql.charCodeAt(j) === DOT)) j++;
    const sign = sql.charCodeAt(j);
    if ((sql.charCodeAt(j - 1) | 32) === 101 && (sign === 43 || sign === DASH) && isDigit(sql.charCodeAt(j + 1))) j += 2;
    else return j;
  }
}

/**
 * The number token starting at `i` (a digit): where it ends, and its kind (`i`, `n`), or null when it is kept as
 * written (see the module header).
 */
function numberAt(sql: string, i: number): { end: number; kind: 'i' | 'n' | null } {
  const n = sql.length;
  let j = i;
  while (j < n && isDigit(sql.charCodeAt(j))) j++;
  const digitsEnd = j;
  let decimal = false;
  if (sql.charCodeAt(j) === DOT) {
    decimal = true;
    j++;
    while (j < n && isDigit(sql.charCodeAt(j))) j++;
  }
  const e = sql.charCodeAt(j);
  if (e === 101 || e === 69) {
    let k = j + 1;
    const sign = sql.charCodeAt(k);
    if (sign === 43 || sign === DASH) k++;
    if (isDigit(sql.charCodeAt(k))) {
      decimal = true;
      while (k < n && isDigit(sql.charCodeAt(k))) k++;
      j = k;
    }
  }
  const next = sql.charCodeAt(j);
  const before = i > 0 ? sql.charCodeAt(i - 1) : 32;
  // Run into a word, another point or a point before it: kept as written.
  if ((j < n && (isWordChar(next) || next === DOT)) || before === DOT) return { end: opaqueEnd(sql, j), kind: null };
  if (decimal) return { end: j, kind: 'n' };
  let z = i;
  while (z < digitsEnd - 1 && sql.charCodeAt(z) === ZERO) z++;
  return { end: j, kind: digitsEnd - z <= 9 ? 'i' : null };
}

/**
 * The key of `sql` (see the module header), or null when the scan does not model the text. `spans`, when given,
 * receives the [start, end) of each number replaced (the tests hold them against PostgreSQL's own lexer).
 */
export function literalForm(sql: string, spans?: [number, number][]): string | null {
  if (UNMODELLED.test(sql)) return null;
  let out = '';
  let from = 0; // start of the text not copied yet
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === QUOTE || c === DOUBLE_QUOTE) {
      // A string literal or a quoted identifier; a doubled quote is one quote inside it.
      let j = i + 1;
      for (;;) {
        j = sql.indexOf(sql[i]!, j);
        if (j < 0) return null;
        if (sql.charCodeAt(j + 1) === c) j += 2;
        else break;
      }
      i = j + 1;
    } else if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      // A line comment ends at a newline or a carriage return, as PostgreSQL's lexer has it.
      let j = i + 2;
      while (j < n && sql.charCodeAt(j) !== 10 && sql.charCodeAt(j) !== 13) j++;
      i = j;
    } else if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      // Block comments nest in PostgreSQL.
      let depth = 1;
      let j = i + 2;
      while (depth > 0) {
        if (j >= n) return null;
        const d = sql.charCodeAt(j);
        if (d === SLASH && sql.charCodeAt(j + 1) === STAR) depth++, (j += 2);
        else if (d === STAR && sql.charCodeAt(j + 1) === SLASH) depth--, (j += 2);
        else j++;
      }
      i = j;
    } else if (isDigit(c)) {
      const { end, kind } = numberAt(sql, i);
      if (kind !== null) {
        spans?.push([i, end]);
        out += sql.slice(from, i) + MARK + kind;
        from = end;
      }
      i = end;
    } else if (isWordChar(c)) {
      // An identifier or keyword: digits inside it are part of it.
      i++;
      while (i < n && isWordChar(sql.charCodeAt(i))) i++;
    } else i++;
  }
  return from === 0 ? sql : out + sql.slice(from);
}
