/** Oracle's saved-statement facts (shared/saved.ts): how its text is lexed, and its `:1`, `:2`, ... markers. */
import type { PositionalMarkers } from '../shared/saved.ts';
import type { SqlSyntax } from '../shared/sqltext.ts';

/** `--` and `/* *\/` comments (not nesting), quotes without backslash escapes, alternative quoting `q'[...]'`. */
export const ORACLE_SYNTAX: SqlSyntax = {
  hashComments: false,
  dashCommentNeedsSpace: false,
  nestedComments: false,
  executableComments: false,
  backslash: 'none',
  backtickNames: false,
  bracketNames: false,
  qQuotes: true,
  dollarQuotes: false,
  positional: null,
};

/** `:1`, `:2`, ...; node-oracledb binds a Date as a TIMESTAMP (no NLS date format in between); Oracle SQL has no boolean before 23ai. */
export const ORACLE_MARKERS: PositionalMarkers = {
  marker: (n) => `:${n}`,
  value: (type, v) =>
    v === null
      ? null
      : type === 'date'
        ? new Date(`${String(v)}T00:00:00Z`)
        : type === 'timestamp'
          ? new Date(String(v))
          : type === 'boolean'
            ? v
              ? 1
              : 0
            : v,
};
