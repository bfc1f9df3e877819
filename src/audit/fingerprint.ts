/**
 * The fingerprint of a refused statement (issue 41; docs/decisions/0321-audit-statements-and-fingerprints.md): the
 * statement with every literal removed, so rows of the same attempt group together and no value an agent sent is
 * kept. Dialect-neutral (PostgreSQL, MySQL/MariaDB, SQL Server, Oracle text alike), and conservative: whatever the
 * scan does not understand is dropped, never copied.
 *  - string literals ('...', with doubled quotes or backslash escapes) and dollar-quoted strings become `?`;
 *  - numbers that stand alone (not inside a name such as `t1`) become `?`; a list of them, `?, ?, ?`, one `?`;
 *  - comments are removed; quoted identifiers ("x", `x`, [x]) are kept as written; unquoted words lower-cased;
 *  - whitespace runs become one space; the result is cut at FINGERPRINT_MAX characters.
 * An unterminated string or comment ends the text there (its content is never kept). `fingerprintId` is the first
 * 16 hex digits of its SHA-256: what the audit API filters by.
 */
import { sha256Hex } from '../util/crypto.ts';

const FINGERPRINT_MAX = 2000;

const isWord = (c: string) => /[A-Za-z0-9_$\u0080-\uffff]/.test(c);

/** Where the quoted run starting at `i` (quote `q`) ends (after its closing quote), or -1 when it is not closed. */
function quotedEnd(sql: string, i: number, q: string, backslash: boolean): number {
  let j = i + 1;
  while (j < sql.length) {
    const c = sql[j]!;
    if (backslash && c === '\\') j += 2;
    else if (c === q && sql[j + 1] === q) j += 2;
    else if (c === q) return j + 1;
    else j++;
  }
  return -1;
}

/** One token of the scan: its replacement text and where the scan goes on, or null to stop (unterminated). */
function tokenAt(sql: string, i: number): { text: string; end: number } | null {
  const c = sql[i]!;
  const next = sql[i + 1];
  if (c === '-' && next === '-') {
    const nl = sql.slice(i).search(/[\r\n]/);
    return { text: ' ', end: nl < 0 ? sql.length : i + nl };
  }
  if (c === '#') {
    const nl = sql.slice(i).search(/[\r\n]/);
    return { text: ' ', end: nl < 0 ? sql.length : i + nl };
  }
  if (c === '/' && next === '*') {
    const close = sql.indexOf('*/', i + 2);
    return close < 0 ? null : { text: ' ', end: close + 2 };
  }
  if (c === "'") {
    const end = quotedEnd(sql, i, "'", true);
    return end < 0 ? null : { text: '?', end };
  }
  if (c === '"' || c === '`') {
    const end = quotedEnd(sql, i, c, false);
    return end < 0 ? null : { text: sql.slice(i, end), end };
  }
  if (c === '[') {
    const close = sql.indexOf(']', i);
    return close < 0 ? null : { text: sql.slice(i, close + 1), end: close + 1 };
  }
  if (c === '$') {
    const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
    if (tag) {
      const close = sql.indexOf(tag[0], i + tag[0].length);
      return close < 0 ? null : { text: '?', end: close + tag[0].length };
    }
  }
  if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(next ?? ''))) {
    const m = /^(0x[0-9a-f]+|[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?)/i.exec(sql.slice(i))!;
    return { text: '?', end: i + Math.max(1, m[0].length) };
  }
  if (isWord(c)) {
    let j = i + 1;
    while (j < sql.length && isWord(sql[j]!)) j++;
    return { text: sql.slice(i, j).toLowerCase(), end: j };
  }
  return { text: c, end: i + 1 };
}

/** The statement with its literals removed (see the module header). */
export function statementFingerprint(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length && out.length <= FINGERPRINT_MAX * 2) {
    const token = tokenAt(sql, i);
    if (!token) break;
    out += token.text;
    i = token.end;
  }
  const collapsed = out
    .replace(/\s+/g, ' ')
    .replace(/\?(\s*,\s*\?)+/g, '?')
    .trim();
  return collapsed.slice(0, FINGERPRINT_MAX);
}

/** The short id of a fingerprint: what rows are grouped and filtered by. */
export function fingerprintId(fingerprint: string): string {
  return sha256Hex(fingerprint).slice(0, 16);
}
